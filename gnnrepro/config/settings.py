"""Every user-facing setting, written once: its default, its check, its help (`SETTINGS`),
the checks themselves, and the command-line options made from them (`add_options`).
"""
from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gnnrepro.checks import check_int, check_positive_float
from gnnrepro.datasets import KNOWN_DATASETS, LINK_DATASETS
from gnnrepro.features.factory import FEATURE_STORES

__all__ = ["EVAL_METHODS", "FEATURE_SOURCES", "FEATURE_STORES", "PIPELINES", "SAMPLER_DEVICES",
           "SETTINGS", "WORKER_KINDS", "Check", "Setting", "add_options", "fanouts_check",
           "list_of", "validate"]

Check = Callable[[str, Any], Any]

#: The training pipelines the paper compares, and DGL's whole stack (its DataLoader feeding its
#: own model) beside them (gnnrepro.training.pipelines builds them).
PIPELINES = ("dgl", "dgl-native", "reference", "fused", "fused+pinned")
#: Where the sampler reads the graph: the CPU op, GPU memory, or pinned host memory over UVA.
SAMPLER_DEVICES = ("cpu", "cuda", "uva")
#: How feature rows reach the GPU: gathered on the CPU into pinned slots and copied on side
#: streams (the paper's method), gathered by the GPU from pinned host memory, or GPU-resident.
FEATURE_SOURCES = ("pinned", "uva", "device")
#: What a Loader's sampling workers are: threads of the training process (no second
#: interpreter, batches handed over in memory; the C++ ops release the GIL), or the paper's
#: worker processes (gnnrepro.pipeline.workers).
WORKER_KINDS = ("thread", "process")
#: How a split is evaluated: layer-wise full-neighbour inference, sampled mini-batches, or
#: (auto) whichever costs less for the split's size (gnnrepro.training.evaluate).
EVAL_METHODS = ("auto", "layerwise", "sampled")


# ---- checks: (name, value) -> value, or a TypeError / ValueError naming `name` ----

def _int(low: int) -> Check:
    return lambda name, value: check_int(name, value, low)


def _str(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise TypeError(f"{name} must be a non-empty string, got {value!r}")
    return value


def _choice(options: Sequence[str]) -> Check:
    def check(name: str, value: Any) -> str:
        if _str(name, value) not in options:
            raise ValueError(f"{name} must be one of {', '.join(options)}, got {value!r}")
        return value
    return check


def _optional(check: Check) -> Check:
    return lambda name, value: None if value is None else check(name, value)


def _dropout(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not 0.0 <= value < 1.0:
        raise ValueError(f"{name} must be in [0, 1), got {value}")
    return float(value)


def _fanout(name: str, value: Any) -> int:
    """-1 (all neighbours), 0 (none: a typed graph's relations at that layer; a homogeneous
    sampler refuses it) or a count."""
    return check_int(name, value, -1)


def _device(name: str, value: Any) -> str:
    value = _str(name, value)
    index = value.partition(":")[2]
    if value not in ("auto", "cpu", "cuda") and not (value.startswith("cuda:") and index.isdigit()):
        raise ValueError(f"{name} must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {value!r}")
    return value


def _path(name: str, value: Any) -> str:
    """An absolute path: '~' expanded, relative paths from the checkout (else the cwd)."""
    path = Path(_str(name, value)).expanduser()
    checkout = Path(__file__).resolve().parents[2]
    base = checkout if (checkout / "pyproject.toml").exists() else Path.cwd()
    return str(path if path.is_absolute() else base / path)


def list_of(item: Check, *, nonempty: bool = False, unique: bool = False) -> Check:
    """A list of items passing `item`; a comma-separated string (CLI, papermill -p) is split."""
    def check(name: str, value: Any) -> list:
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
            value = [int(v) if v.lstrip("-").isdigit() else v for v in value]
        if not isinstance(value, (list, tuple)):
            raise TypeError(f"{name} must be a list, got {value!r}")
        out = [item(f"{name}[{i}]", v) for i, v in enumerate(value)]
        if nonempty and not out:
            raise ValueError(f"{name} must not be empty")
        if unique and len(set(map(repr, out))) != len(out):
            raise ValueError(f"{name} has duplicates: {out}")
        return out
    return check


fanouts_check = list_of(_fanout, nonempty=True)


def _text_to_value(text: str) -> Any:
    """CLI text as the JSON-like value a check expects: ints, floats, None, else the text."""
    if text.lower() in ("none", "null"):
        return None
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text


# ---- the settings ----

@dataclass(frozen=True)
class Setting:
    """One setting: default, check, help, and the type annotation the notebooks show."""

    name: str
    default: Any
    check: Check
    help: str
    annotation: str

    def validate(self, value: Any) -> Any:
        return self.check(self.name, value)

    def from_text(self, text: str) -> Any:
        """Parse and check a command-line value; lists stay comma-separated text for the
        check to split."""
        value = text if self.annotation.startswith("list") else _text_to_value(text)
        try:
            return self.validate(value)
        except (TypeError, ValueError) as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None


def _s(name: str, default: Any, check: Check, annotation: str, help: str) -> Setting:
    return Setting(name, default, check, help, annotation)


_SETTINGS = [
    _s("dataset", "products-sim",
       _choice(tuple(d for d in KNOWN_DATASETS if d not in LINK_DATASETS)), "str",
       "dataset: products-sim, igb-sim or papers-sim (built in, synthetic; igb-sim's and "
       "papers-sim's features are larger than memory at scale 1.0), mag-sim (typed: "
       "ogbn-mag's shape), temporal-sim (edge and node times) or ogbn-products, ogbn-arxiv, "
       "ogbn-papers100M, ogbn-mag (read from root, never downloaded); the link datasets "
       "(citation-sim, ogbl-citation2) train with gnnrepro.linkpred"),
    _s("scale", 0.05, check_positive_float, "float",
       "synthetic dataset size: products-sim as a fraction of ogbn-products (1.0 is 2.45M "
       "nodes), igb-sim of IGB-medium (1.0 is 10M nodes, 41 GB of features), papers-sim of "
       "ogbn-papers100M (1.0 is 111M nodes, 1.6B edges, 65 GB of disk), mag-sim of ogbn-mag "
       "(1.0 is 1.94M nodes, 0.6 GB); ignored by OGB data"),
    _s("root", None, _optional(_path), "Optional[str]",
       "dataset directory: the OGB root for ogbn-* (None: $GNNREPRO_OGB_ROOT, else ~/data/ogb), "
       "the cache for products-sim (None: $GNNREPRO_DATA, else ~/.cache/gnnrepro)"),
    _s("fanouts", [15, 10, 5], fanouts_check, "list[int]",
       "neighbours sampled per layer, input layer first (-1: all; 0: none, typed graphs only)"),
    _s("batch_size", 1024, _int(1), "int", "seed nodes per mini-batch"),
    _s("epochs", 3, _int(1), "int",
       "training epochs per run; times are medians over the epochs after the first"),
    _s("lr", 0.003, check_positive_float, "float", "Adam learning rate"),
    _s("hidden", 256, _int(1), "int", "GraphSAGE hidden width"),
    _s("dropout", 0.5, _dropout, "float", "dropout probability, in [0, 1)"),
    _s("device", "auto", _device, "str",
       "training device: auto (cuda if available, else cpu), cpu, cuda or cuda:N"),
    _s("sampler_device", "cpu", _choice(SAMPLER_DEVICES), "str",
       "where the sampler reads the graph: cpu (the C++ op, in the loader's workers), cuda "
       "(graph in GPU memory), uva (graph in pinned host memory, read by the GPU)"),
    _s("feature_source", "pinned", _choice(FEATURE_SOURCES), "str",
       "how feature rows reach the GPU: pinned (gathered on the CPU into pinned slots, copied "
       "on side streams), uva (the GPU gathers from pinned host memory), device (features in "
       "GPU memory)"),
    _s("feature_store", "memory", _choice(FEATURE_STORES), "str",
       "where feature rows are read from: memory (one shared in-memory copy), disk (O_DIRECT "
       "reads of an aligned feature file, for features larger than memory), mmap (the file "
       "memory-mapped), lmdb"),
    _s("pipeline", "fused+pinned", _choice(PIPELINES), "str",
       f"training pipeline: {', '.join(PIPELINES)}"),
    _s("threads", None, _optional(_int(1)), "Optional[int]",
       "torch threads per process (per rank); None: this machine's cores divided by the "
       "ranks"),
    _s("workers", None, _optional(_int(0)), "Optional[int]",
       "sampling workers per loader of fused+pinned (0: in the trainer); None: chosen from "
       "the machine (with CUDA the rank's cores but one, at most 4; on the CPU 0 with up to 2 "
       "cores per rank, else 1; 0 for a GPU sampler or the disk feature store, which reads "
       "ahead in the trainer)"),
    _s("worker_kind", "thread", _choice(WORKER_KINDS), "str",
       "what the sampling workers are: thread (threads of the training process, batches "
       "handed over in memory) or process (the paper's worker processes, batches sent "
       "through pipes; a script needs an if __name__ guard)"),
    _s("streams", 2, _int(1), "int", "CUDA streams for host-to-device copies (fused+pinned)"),
    _s("prefetch", None, _optional(_int(1)), "Optional[int]",
       "batches prepared ahead (fused+pinned); None: 2, or the workers if more, so that "
       "every worker has a batch to prepare"),
    _s("seed", 0, _int(0), "int", "random seed (batches, model initialisation)"),
    _s("eval_batch_size", 4096, _int(1), "int", "seed nodes per sampled evaluation mini-batch"),
    _s("eval_method", "auto", _choice(EVAL_METHODS), "str",
       "how val and test accuracy are computed: layerwise (every layer once per needed node, "
       "all neighbours, as DGL's and PyG's examples evaluate), sampled (mini-batches with the "
       "training fanouts), or auto (whichever costs less for the split, in weighted edges)"),
    _s("eval_ids", None, _optional(_int(1)), "Optional[int]",
       "at most this many val and test ids evaluated: a subset drawn with the seed, the same "
       "for every pipeline and peer (None: every id)"),
    _s("timeout_s", 120.0, check_positive_float, "float",
       "seconds a child process (rank, loader worker, benchmark run) may go without a word, "
       "and a collective may wait for a peer, before it is declared hung; it must also cover "
       "the dataset load that each machine's first rank does for the others"),
]
SETTINGS: dict[str, Setting] = {s.name: s for s in _SETTINGS}


def validate(name: str, value: Any) -> Any:
    """`value` checked by setting `name`'s check (errors name the setting)."""
    return SETTINGS[name].validate(value)


def add_options(parser: argparse.ArgumentParser, names: Iterable[str],
                **defaults: Any) -> None:
    """Add `--name` options (underscores as dashes) for the named settings; `defaults`
    replaces a setting's default for this parser only where a command measures something
    else by default (e.g. a larger dataset)."""
    for name in names:
        setting = SETTINGS[name]
        default = defaults.get(name, setting.default)
        parser.add_argument(f"--{name.replace('_', '-')}", dest=name, default=default,
                            type=setting.from_text, metavar=name.upper(),
                            help=f"{setting.help} (default: {default})")
