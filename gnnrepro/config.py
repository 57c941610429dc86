"""Every user-facing setting, written once: its default, its check, its help.

`SETTINGS` is the one definition. It feeds the command line (`add_options`: both
`python -m gnnrepro` and the torchrun entry), the notebooks' parameters
(gnnrepro.experiments.params builds its fields from it) and `TrainConfig`, the settings of one
training run that train_pipeline, the benchmarks and every data-parallel rank take. Each value
is checked by its setting's check, with one error message that names it.

Placement (where the graph is read and how feature rows reach the GPU) is two settings:
`sampler_device` (cpu | cuda | uva) and `feature_source` (pinned | uva | device);
`check_placement` says which combinations a machine can run.

The feature-store benchmarks' own settings (`bench storage` and notebook 06_storage,
`bench disk-training`) are `STORAGE_DEFAULTS` and `DISK_TRAINING_DEFAULTS`: the command line's
defaults, the benchmark functions' and the notebook's, each written once here.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from gnnrepro.checks import check_int, check_positive_float
from gnnrepro.datasets import KNOWN_DATASETS
from gnnrepro.features.factory import FEATURE_STORES

__all__ = ["DISK_TRAINING_DEFAULTS", "EVAL_METHODS", "FEATURE_SOURCES", "FEATURE_STORES",
           "PIPELINES", "SAMPLER_DEVICES", "SETTINGS", "STORAGE_DEFAULTS", "WORKER_KINDS",
           "DiskTrainingDefaults", "Setting", "StorageDefaults", "TrainConfig", "add_options",
           "check_placement", "resolve_device", "resolve_prefetch", "resolve_threads",
           "resolve_workers", "validate"]

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
    value = check_int(name, value, -1)
    if value == 0:
        raise ValueError(f"{name} must be >= 1, or -1 for all neighbours, got 0")
    return value


def _device(name: str, value: Any) -> str:
    value = _str(name, value)
    index = value.partition(":")[2]
    if value not in ("auto", "cpu", "cuda") and not (value.startswith("cuda:") and index.isdigit()):
        raise ValueError(f"{name} must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {value!r}")
    return value


def _path(name: str, value: Any) -> str:
    """An absolute path: '~' expanded, relative paths from the checkout (else the cwd)."""
    path = Path(_str(name, value)).expanduser()
    checkout = Path(__file__).resolve().parents[1]
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
    _s("dataset", "products-sim", _choice(KNOWN_DATASETS), "str",
       "dataset: products-sim or igb-sim (built in, synthetic; igb-sim's features are larger "
       "than memory at scale 1.0) or ogbn-products, ogbn-arxiv, ogbn-papers100M (read from "
       "root, never downloaded)"),
    _s("scale", 0.05, check_positive_float, "float",
       "synthetic dataset size: products-sim as a fraction of ogbn-products (1.0 is 2.45M "
       "nodes), igb-sim of IGB-medium (1.0 is 10M nodes, 41 GB of features); ignored by OGB "
       "data"),
    _s("root", None, _optional(_path), "Optional[str]",
       "dataset directory: the OGB root for ogbn-* (None: $GNNREPRO_OGB_ROOT, else ~/data/ogb), "
       "the cache for products-sim (None: $GNNREPRO_DATA, else ~/.cache/gnnrepro)"),
    _s("fanouts", [15, 10, 5], fanouts_check, "list[int]",
       "neighbours sampled per layer, input layer first (-1: all)"),
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


def resolve_device(device: str) -> str:
    """'auto' -> 'cuda' if CUDA is available, else 'cpu'; a CUDA device that is not there is
    a ValueError naming the setting rather than a failure deep inside a run."""
    device = validate("device", device)
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda"):
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        index = int(device.partition(":")[2] or 0)
        if index >= count:
            raise ValueError(f"device is {device!r} but this machine has {count} CUDA "
                             f"device(s); use 'auto' or 'cpu'")
    return device


def resolve_threads(threads: int | None, ranks_per_machine: int = 1) -> int:
    """`threads`, or (None) this machine's cores shared by its ranks, at least 1."""
    if threads is not None:
        return validate("threads", threads)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, (cores or 1) // max(1, ranks_per_machine))


def resolve_workers(workers: int | None, device: str, sampler_device: str = "cpu",
                    ranks_per_machine: int = 1, feature_store: str = "memory") -> int:
    """`workers`, or (None) chosen from the machine for a rank training on `device`.

    A GPU sampler (sampler_device cuda or uva) runs in the trainer: 0. So does the disk
    feature store: it reads the next batches ahead only when the trainer samples them (its
    own I/O thread overlaps the reads; a worker would gather each batch with waiting reads).
    With CUDA otherwise the trainer needs about one core to drive the GPU, so the rank's
    other cores sample and gather (at most 4: more only adds staging slots). On the CPU the
    model step takes every core: with 2 or fewer per rank a worker takes more from the model
    than it hides (measured: benchmarks/NOTES.md, "Defaults chosen from the machine"), so 0;
    with more, one worker costs the model a small share and hides the batches: 1.
    """
    if workers is not None:
        return validate("workers", workers)
    if validate("sampler_device", sampler_device) != "cpu":
        return 0
    if validate("feature_store", feature_store) == "disk":
        return 0
    cores = resolve_threads(None, ranks_per_machine)
    if not device.startswith("cuda"):
        return 0 if cores <= 2 else 1
    return min(4, max(1, cores - 1))


def resolve_prefetch(prefetch: int | None, workers: int) -> int:
    """`prefetch`, or (None) 2, or `workers` if more: each worker can hold a batch."""
    if prefetch is not None:
        return validate("prefetch", prefetch)
    return max(2, workers)


def check_placement(device: str, sampler_device: str, feature_source: str,
                    workers: int = 0) -> None:
    """Raise ValueError naming the setting when this combination cannot run here.

    `device` is the training device, already resolved ('cpu', 'cuda', 'cuda:N'). On the CPU
    only (cpu, pinned) exists: nothing is pinned there, the slots are plain shared memory.
    A GPU sampler runs in the training process, so it takes no sampling workers.
    """
    sampler_device = validate("sampler_device", sampler_device)
    feature_source = validate("feature_source", feature_source)
    cuda = device.startswith("cuda")
    for name, value, cpu_value in (("sampler_device", sampler_device, "cpu"),
                                   ("feature_source", feature_source, "pinned")):
        if value == cpu_value:
            continue
        if not torch.cuda.is_available():
            raise ValueError(f"{name}={value!r} needs a CUDA device; this machine has none "
                             f"(use {name}={cpu_value!r})")
        if not cuda:
            raise ValueError(f"{name}={value!r} needs device='cuda', got device={device!r}")
    if sampler_device != "cpu" and workers:
        raise ValueError(f"sampler_device={sampler_device!r} samples on the GPU in the "
                         f"training process: workers must be 0, got {workers}")


def _field(name: str) -> Any:
    default = SETTINGS[name].default
    if isinstance(default, list):
        return dataclasses.field(default_factory=lambda: list(default))
    return dataclasses.field(default=default)


@dataclass(frozen=True)
class TrainConfig:
    """The settings of one training run, every one checked by its setting on construction.

    `device` 'auto' is resolved and `threads`, `workers` and `prefetch` None become counts
    (resolve_threads, resolve_workers, resolve_prefetch) when the run starts, where the
    machine is known; fanouts are kept as a tuple (hashable).
    """

    pipeline: str = _field("pipeline")
    fanouts: tuple[int, ...] = tuple(SETTINGS["fanouts"].default)
    batch_size: int = _field("batch_size")
    epochs: int = _field("epochs")
    lr: float = _field("lr")
    hidden: int = _field("hidden")
    dropout: float = _field("dropout")
    device: str = _field("device")
    sampler_device: str = _field("sampler_device")
    feature_source: str = _field("feature_source")
    feature_store: str = _field("feature_store")
    threads: int | None = _field("threads")
    workers: int | None = _field("workers")
    worker_kind: str = _field("worker_kind")
    streams: int = _field("streams")
    prefetch: int | None = _field("prefetch")
    seed: int = _field("seed")
    eval_batch_size: int = _field("eval_batch_size")
    eval_method: str = _field("eval_method")
    timeout_s: float = _field("timeout_s")

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "fanouts":
                value = tuple(validate("fanouts", list(value) if isinstance(value, tuple)
                                       else value))
            else:
                value = validate(f.name, value)
            object.__setattr__(self, f.name, value)

    def replace(self, **changes: Any) -> TrainConfig:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "fanouts": list(self.fanouts)}


# ---- the feature-store benchmarks' settings ----

@dataclass(frozen=True)
class StorageDefaults:
    """`bench storage`'s settings, shared by the command line, gnnrepro.bench.storage.measure
    and notebook 06_storage (whose stored results were measured with them): feature stores on
    data larger than the memory a memory cgroup lets them use."""

    #: The disk store's hot set + cache, as fractions of the feature file. The first is the
    #: default (`budget_fraction`) and the notebook's run with every store; the notebook runs
    #: the disk store alone at the others, to show how it fares as its memory shrinks.
    budgets: tuple[float, ...] = (0.10, 0.02, 0.05)
    #: What a capped store may use beyond the training process's own needs (page cache and
    #: the store's buffers), as a fraction of the feature file: well under the whole file, so
    #: that no store can keep the features cached and each must read from the device.
    memory_fraction: float = 0.25
    #: The disk store's hot set as a share of its budget; the rest is its CLOCK cache.
    hot_share: float = 0.5
    #: Batches per measured epoch of gathers: the same batches for every store, so each is
    #: hashed once in memory and every store's rows are checked against those hashes.
    batches: int = 6
    #: Epochs of gathers: the last one, with the cache warmed by the ones before, is reported.
    epochs: int = 2
    #: Batches of the end-to-end training epoch: a few give the time per batch, from which a
    #: slow store's whole epoch is extrapolated.
    train_batches: int = 3
    #: The longest a store's measured epoch may take (gathers and the end-to-end epoch): a
    #: slow baseline (mmap under the cap) reports the batches it did instead of taking hours.
    epoch_seconds: float = 20.0
    #: Batches the disk store reads ahead. Each batch read ahead holds its rows in memory,
    #: charged to the cap, and the batches are a sizable share of a capped file: more would
    #: take the cap's memory from the cache.
    lookahead: int = 1
    #: Seconds of each device-ceiling measurement (fio or our reader: several block sizes and
    #: queue depths per run); random reads reach a steady rate well within this.
    ceiling_seconds: float = 1.0
    #: The disk store's reads in flight and I/O threads (its pread engine's pool).
    queue_depth: int = 32
    io_threads: int = 16
    #: The notebook's batches: a batch of the training batch size with every fanout would read
    #: most of a small file's rows, and hold more than the cap, so at most this many seeds and
    #: the innermost `max_layers` fanouts.
    max_batch_size: int = 128
    max_layers: int = 2

    @property
    def budget_fraction(self) -> float:
        """The default budget: the first of `budgets`."""
        return self.budgets[0]


@dataclass(frozen=True)
class DiskTrainingDefaults:
    """`bench disk-training`'s settings (the command line's and
    gnnrepro.bench.disk_training.measure's): GIDS's setting on a CPU, a different benchmark
    from `bench storage`. The features are larger than this machine's memory and uncapped,
    the batches are GIDS's, and the baselines are too slow to train more than a few steps."""

    #: The dataset and scale whose features are larger than a common machine's memory.
    dataset: str = "igb-sim"
    scale: float = 1.0
    #: GIDS's fanouts.
    fanouts: tuple[int, ...] = (10, 5, 5)
    #: The disk store's hot set + cache, as a fraction of the feature file, and the hot set's
    #: share of it (the rest is the CLOCK cache): as in `bench storage`.
    budget_fraction: float = 0.10
    hot_share: float = 0.5
    #: Batches the disk store reads ahead: one. Each batch read ahead holds all its input rows
    #: in memory, and at GIDS's batch size and fanouts a batch is a sizable share of the budget.
    lookahead: int = 1
    #: The disk store's reads in flight, deeper than `bench storage`'s: every batch reads a
    #: great many whole-block rows, and the device delivered more of them per second at this
    #: depth than at half of it (benchmarks/NOTES.md, "The measurement: `bench
    #: disk-training`"). And its I/O threads (its pread engine's pool).
    queue_depth: int = 128
    io_threads: int = 16
    #: The disk store's batches gathered back to back and training steps: enough for steady
    #: rates; the epoch is extrapolated from the time per step.
    gather_batches: int = 10
    train_batches: int = 200
    #: The baselines' (mmap, mmap-random, LMDB) batches and steps: few, as each takes long.
    baseline_gather_batches: int = 2
    baseline_train_batches: int = 2
    #: The longest a baseline gathers; it trains only if one step's gather fits in it.
    baseline_seconds: float = 300.0
    #: Test (and val) ids evaluated through the disk store: a sample, as evaluating every id
    #: would read the whole file again.
    eval_ids: int = 4096
    #: Sampled batches whose rows are checked against regenerated rows.
    check_batches: int = 2
    #: Seconds of each device-ceiling measurement (fio, or our reader where fio is absent).
    ceiling_seconds: float = 4.0


STORAGE_DEFAULTS = StorageDefaults()
DISK_TRAINING_DEFAULTS = DiskTrainingDefaults()
