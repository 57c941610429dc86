"""The notebooks' parameters: one typed schema (name, type, default, help) and its validation.

The schema is the `Params` dataclass; every field carries its help text and a check: the
settings shared with the library and the command line are gnnrepro.config's, the rest (sweeps,
repeats, output) are the notebooks' own. The
notebooks' `parameters` cells are generated from it (notebooks/make_notebooks.py), so what
`papermill --help-notebook` prints is this help. papermill only warns about a parameter the
notebook does not declare; `from_namespace` turns that into an error naming it.
"""
from __future__ import annotations

import copy
import dataclasses
import difflib
import hashlib
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from gnnrepro.checks import check_bool, check_fraction, check_int, check_positive_float
from gnnrepro.config import (FEATURE_SOURCES, SAMPLER_DEVICES, SETTINGS, fanouts_check, list_of,
                             resolve_device)
from gnnrepro.datasets import TYPED_DATASETS
from gnnrepro.distributed import unavailable
from gnnrepro.experiments.archive import archive_dir
from gnnrepro.experiments.store import Store
from gnnrepro.peers import PEERS, SETUP_COMMAND

__all__ = ["Params", "from_namespace", "runnable_world_sizes"]

Check = Callable[[str, Any], Any]
_FOLDER_NAME = re.compile(r"[A-Za-z0-9._-]+")
# Parameters that do not change what is measured (where data and output live, re-measuring):
# they never move the figures to a subfolder.
_NOT_MEASURED = ("root", "out_dir", "force", "redraw", "figures_name")


def _check_path(name: str, value: Any) -> str:
    if value is None:
        raise TypeError(f"{name} must be a path, got None")
    return SETTINGS["root"].check(name, value)


def _int(low: int) -> Check:
    return lambda name, value: check_int(name, value, low)


def _dataset(name: str, value: Any) -> str:
    return SETTINGS["dataset"].check(name, value)


def _typed_dataset(name: str, value: Any) -> str:
    """A dataset with node types and relations (gnnrepro.datasets.TYPED_DATASETS)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a dataset name, got {type(value).__name__}")
    if value not in TYPED_DATASETS:
        raise ValueError(f"{name} must be a typed dataset, one of {', '.join(TYPED_DATASETS)}, "
                         f"got {value!r}")
    return value


def _peer(name: str, value: Any) -> str:
    if value not in PEERS:
        raise ValueError(f"{name} must name peers among {', '.join(PEERS)}, got {value!r}")
    return value


def _non_negative(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not value >= 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return float(value)


def _bool(name: str, value: Any) -> bool:
    return check_bool(name, value)


def _placement(name: str, value: Any) -> str:
    """'sampler_device/feature_source', each a known value."""
    if not isinstance(value, str) or value.count("/") != 1:
        raise ValueError(f"{name} must be 'sampler_device/feature_source', got {value!r}")
    sampler_device, feature_source = value.split("/")
    if sampler_device not in SAMPLER_DEVICES or feature_source not in FEATURE_SOURCES:
        raise ValueError(f"{name} = {value!r}: sampler_device is one of "
                         f"{', '.join(SAMPLER_DEVICES)}, feature_source one of "
                         f"{', '.join(FEATURE_SOURCES)}")
    return value


def _scale(name: str, value: Any) -> float:
    """A products-sim scale: a number > 0 (text from the command line is converted)."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise TypeError(f"{name} must be a number, got {value!r}") from None
    return check_positive_float(name, value)


def _figures_name(name: str, value: Any) -> Optional[str]:
    """None, '' or one plain folder name (letters, digits, '.', '_', '-'; no path)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a folder name or None, got {type(value).__name__}")
    if value and (not _FOLDER_NAME.fullmatch(value) or value in (".", "..")):
        raise ValueError(f"{name} must be one folder name of letters, digits, '.', '_' and '-' "
                         f"(no '/'), got {value!r}")
    return value


def _param(default: Any, check: Check, help: str) -> Any:
    """A notebook-only schema field: its default, its check, and the help
    `--help-notebook` shows."""
    meta = {"check": check, "help": help}
    if isinstance(default, list):
        return field(default_factory=lambda: copy.deepcopy(default), metadata=meta)
    return field(default=default, metadata=meta)


def _setting(name: str) -> Any:
    """A field that is gnnrepro.config's setting `name`: same default, check and help."""
    setting = SETTINGS[name]
    return _param(setting.default, setting.check, setting.help)


@dataclass(frozen=True)
class Params:
    """Notebook parameters. `from_mapping` validates them (device resolved, paths absolute);
    `Params()` holds the raw defaults.

    Field annotations are written into the notebooks' parameters cells as they are here.
    Help texts hold no '=' (papermill's parameter parser would skip the line).
    """

    dataset: str = _setting("dataset")
    compare_datasets: list[str] = _param(
        [], list_of(_dataset, unique=True),
        "more datasets that 02_sampling_speedup compares, beside dataset")
    scale: float = _setting("scale")
    root: Optional[str] = _setting("root")
    fanouts: list[int] = _setting("fanouts")
    batch_size: int = _setting("batch_size")
    epochs: int = _setting("epochs")
    device: str = _setting("device")
    sampler_device: str = _setting("sampler_device")
    feature_source: str = _setting("feature_source")
    feature_store: str = _setting("feature_store")
    gpus: list[int] = _param(
        [1, 2, 4, 8], list_of(_int(1), nonempty=True, unique=True),
        "world sizes (GPUs, or CPU processes on the cpu device) for 04_scaling; "
        "sizes this machine cannot run are listed as not run")
    threads: Optional[int] = _setting("threads")
    workers: Optional[int] = _setting("workers")
    worker_kind: str = _setting("worker_kind")
    streams: int = _setting("streams")
    seed: int = _setting("seed")
    train_repeats: int = _param(
        2, _int(1),
        "rounds of the end-to-end runs of 01 and 03, pipeline orders from a Williams design "
        "(balanced at a multiple of 2n rounds for n odd, n for n even), each pipeline in a "
        "fresh process; epoch times pooled over rounds")
    target_acc: float = _param(
        0.6, check_fraction,
        "validation accuracy 03_end_to_end counts the epochs to (every epoch is evaluated)")
    peers: list[str] = _param(
        list(PEERS), list_of(_peer, unique=True),
        "other stacks that 02 and 03's pipeline-alone run measure beside ours, each from its "
        f"own environment ({SETUP_COMMAND} sets them up; one not set up is listed as not run)")
    loader_rounds: int = _param(
        3, _int(1), "timed epochs per pipeline of 03's pipeline-alone run (bench loader)")
    loader_step_ms: float = _param(
        0.0, _non_negative,
        "busy-wait per batch standing in for a GPU model step in the pipeline-alone run "
        "(0: none)")
    timeline_batches: int = _param(
        6, _int(0), "batches recorded for 03_end_to_end's timeline figure")
    sampling_batches: int = _param(
        30, _int(1), "seed batches each sampler samples in 02_sampling_speedup")
    sampling_repeats: int = _param(
        2, _int(1), "passes over those batches (interleaved; medians reported)")
    sweep_batch_sizes: list[int] = _param(
        [512, 1024, 2048], list_of(_int(1), unique=True),
        "batch sizes swept by 05_sensitivity (other settings from the parameters above)")
    sweep_fanouts: list[list[int]] = _param(
        [[5, 5, 5], [10, 10, 5], [15, 10, 5]], list_of(fanouts_check, unique=True),
        "fanout lists swept by 05_sensitivity")
    sweep_workers: list[int] = _param(
        [0, 1, 2], list_of(_int(0), unique=True),
        "worker counts swept by 05_sensitivity")
    sweep_streams: list[int] = _param(
        [1, 2, 4], list_of(_int(1), unique=True),
        "CUDA stream counts swept by 05_sensitivity (not run on the cpu device)")
    sweep_placements: list[str] = _param(
        ["cpu/pinned", "uva/pinned", "cuda/pinned", "cpu/uva", "uva/uva", "cuda/device"],
        list_of(_placement, unique=True),
        "sampler_device/feature_source pairs swept by 05_sensitivity (listed as not run "
        "where there is no CUDA)")
    growth_scales: list[float] = _param(
        [0.05, 0.25], list_of(_scale, nonempty=True, unique=True),
        "products-sim scales at which 08_scale_growth measures ours and DGL's sampling, "
        "loader, epoch and memory (1.0 is ogbn-products' size: params/products.yaml adds it)")
    growth_papers_scale: float = _param(
        0.0, _non_negative,
        "papers-sim scale 08_scale_growth adds beside products-sim (1.0: ogbn-papers100M's "
        "size, 111M nodes, 1.6B edges, 65 GB of disk): ours and DGL's sampling, and our "
        "training with the features from the disk store for disk_training_batches steps; 0 "
        "skips it (at 1.0 it needs ~65 GB of free disk and ~40 minutes)")
    disk_training_scale: float = _param(
        0.0, _non_negative,
        "igb-sim scale of 06_storage's larger-than-memory section (training with the features "
        "on disk, no memory cap; 1.0: 41 GB of features); 0 skips it (it needs ~42 GB of "
        "free disk and ~30 minutes at 1.0)")
    disk_training_batches: int = _param(
        200, _int(1), "training steps of the disk store in that section and in "
                      "08_scale_growth's papers-sim point (the baselines take 2); the epoch is "
                      "extrapolated from them")
    hetero_dataset: str = _param(
        "mag-sim", _typed_dataset,
        "typed dataset of 09_heterogeneous: mag-sim (built in, ogbn-mag's shape at scale 1.0), "
        "igbh-sim (built in, MLPerf's IGBH schema) or ogbn-mag (read from root, never "
        "downloaded)")
    hetero_scale: float = _param(
        0.1, _scale, "scale of hetero_dataset in 09_heterogeneous (mag-sim 1.0: ogbn-mag's "
                     "size, 1.94M nodes); ignored by ogbn-mag")
    hetero_fanouts: list[list[int]] = _param(
        [[25, 20], [5, 10, 15]], list_of(fanouts_check, nonempty=True, unique=True),
        "fanout lists (every relation, input layer first) at which 09_heterogeneous times "
        "sampling: ogbn-mag's examples' and MLPerf R-GAT's; the first also trains R-GCN and "
        "feeds the pipeline alone")
    hetero_hidden: int = _param(
        64, _int(1), "R-GCN hidden width in 09_heterogeneous (DGL's and PyG's ogbn-mag "
                     "examples: 64)")
    hetero_disk_scale: float = _param(
        0.0, _non_negative,
        "igbh-sim scale of 09_heterogeneous's larger-than-memory section (R-GCN trained with "
        "the features on disk, our store against mmap; 1.0: MLPerf's IGBH schema with 10M "
        "papers, 41.6 GB of float16 features); 0 skips it (it needs ~45 GB of free disk and "
        "~30 minutes at 1.0)")
    hetero_disk_steps: int = _param(
        40, _int(1), "training steps of the disk store in that section (mmap takes a few); "
                     "the epoch is extrapolated from them")
    link_scale: float = _param(
        0.05, _scale, "citation-sim scale of 10_link_prediction (1.0: ogbl-citation2's shape, "
                      "2.93M nodes, 30.6M edges)")
    link_steps: int = _param(
        100, _int(1), "training steps per run in 10_link_prediction (the same for our "
                      "pipeline and DGL's edge-prediction DataLoader)")
    link_seeds: int = _param(
        3, _int(1), "seeds 0..link_seeds-1 in 10_link_prediction: each pipeline trained once "
                    "per seed, MRR compared per seed")
    link_hidden: int = _param(
        64, _int(1), "GraphSAGE and scorer width in 10_link_prediction (OGB's citation2 "
                     "examples: 256, with batches of 64k edges)")
    out_dir: str = _param(
        ".", _check_path,
        "where figures/ and results/ go; relative paths start at the repository root")
    force: bool = _param(
        False, _bool, "re-measure even if results for these parameters and this code are "
                      "stored (once per make figures: runs shared by notebooks are kept)")
    redraw: bool = _param(
        False, _bool, "draw the figures from the newest stored results of these parameters, "
                      "even where other code measured them (after a change to the plots; the "
                      "figure names the commit that measured it), in results/ or committed "
                      "beside the figures (their folder's data/); what has none is measured. "
                      "Not with force")
    figures_name: Optional[str] = _param(
        None, _figures_name,
        "folder under figures/ for this run's figures and tables. None: figures/ itself "
        "when every measured parameter has its default, else figures/<dataset>-<scale>-<hash "
        "of the parameters>, so other runs never overwrite the committed figures; an empty "
        "name writes into figures/ itself")

    @classmethod
    def names(cls) -> list[str]:
        """The parameter names, in schema order."""
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> Params:
        """Validate `values` (missing names take their defaults) into Params.

        Unknown names raise ValueError naming them (with close matches); a wrong type
        TypeError, a bad value ValueError, each naming the parameter.
        """
        known = cls.names()
        unknown = sorted(set(values) - set(known))
        if unknown:
            hints = []
            for name in unknown:
                close = difflib.get_close_matches(name, known, n=1)
                hints.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
            raise ValueError(f"unknown parameter(s): {', '.join(hints)}. Known parameters: "
                             f"{', '.join(known)}")
        defaults, checked = cls(), {}
        for f in dataclasses.fields(cls):
            value = values[f.name] if f.name in values else getattr(defaults, f.name)
            checked[f.name] = f.metadata["check"](f.name, value)
        if checked["force"] and checked["redraw"]:
            raise ValueError("force (measure again) and redraw (draw from stored results) "
                             "exclude each other: set one")
        checked["device"] = resolve_device(checked["device"])
        return cls(**checked)

    @property
    def figures_dir(self) -> Path:
        """figures/ for the default parameters (or figures_name ''), else a subfolder of it
        named by figures_name or derived from the parameters that differ."""
        base = Path(self.out_dir) / "figures"
        name = self.figures_name
        if name is None:
            changed = self.changed()
            if not changed:
                return base
            digest = hashlib.sha256(json.dumps(changed, sort_keys=True, default=str)
                                    .encode()).hexdigest()[:8]
            name = f"{self.dataset}-{self.scale:g}-{digest}"
        return base / name if name else base

    def changed(self) -> dict[str, Any]:
        """The measured parameters whose value differs from the default's (device compared
        after 'auto' is resolved), by name."""
        defaults = Params()
        changed = {}
        for name in self.names():
            if name in _NOT_MEASURED:
                continue
            value, default = getattr(self, name), getattr(defaults, name)
            if name == "device":
                value, default = resolve_device(value), resolve_device(default)
            if value != default:
                changed[name] = value
        return changed

    @property
    def results_dir(self) -> Path:
        return Path(self.out_dir) / "results"

    def store(self) -> Store:
        """The results store (results_dir); a redraw also draws from the results committed
        beside the figures (gnnrepro.experiments.archive)."""
        return Store(self.results_dir, archive=archive_dir(self.figures_dir))

    def key(self, names: Iterable[str]) -> dict[str, Any]:
        """The named parameters as a JSON-ready dict: what identifies an experiment's result."""
        return {name: copy.deepcopy(getattr(self, name)) for name in names}

    def sampling_kwargs(self) -> dict[str, Any]:
        """The arguments the sampling benchmarks' `measure` share (gnnrepro.bench): also
        their results' store key."""
        return {"dataset": self.dataset, "scale": self.scale, "root": self.root,
                "fanouts": list(self.fanouts), "batch_size": self.batch_size,
                "batches": self.sampling_batches, "threads": self.threads,
                "repeats": self.sampling_repeats, "seed": self.seed}

    def describe(self) -> str:
        """One line per parameter, for the notebook's log."""
        return "\n".join(f"{name:>18} = {getattr(self, name)!r}" for name in self.names())


def runnable_world_sizes(gpus: Iterable[int], device: str) -> tuple[list[int], dict[int, str]]:
    """Split world sizes into those the notebook runs here and {size: reason} for the rest:
    GPU ranks need a GPU each (gnnrepro.distributed.unavailable); CPU ranks, which could
    share cores, are run only up to one per core, so a figure never shows contention as
    scaling."""
    cores = os.cpu_count() or 1
    runnable, reasons = [], {}
    for size in gpus:
        reason = unavailable(size, device)
        if reason is None and device == "cpu" and size > cores:
            reason = (f"needs {size} CPU cores (one per rank); this machine has {cores} and "
                      f"device is cpu")
        if reason is None:
            runnable.append(size)
        else:
            reasons[size] = reason
    return runnable, reasons


def from_namespace(namespace: Mapping[str, Any], before: Iterable[str]) -> Params:
    """Params from a notebook's globals: every public name defined since `before` (the names
    that existed before the parameters cell) is a parameter, so a name papermill injected that
    the notebook does not declare is an error here, not a warning lost in the log."""
    before = set(before)
    values = {k: v for k, v in namespace.items() if k not in before and not k.startswith("_")}
    try:
        params = Params.from_mapping(values)
    except (TypeError, ValueError) as exc:
        # First in the cell's output, before papermill's or IPython's traceback around it.
        print(f"Parameter error: {exc}", file=sys.stderr)
        raise
    print(params.describe())
    return params
