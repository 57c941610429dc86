"""The notebooks' parameters: one typed schema (name, type, default, help) and its validation.

The schema is the `Params` dataclass; every field carries its help text and a check. The
notebooks' `parameters` cells are generated from it (notebooks/make_notebooks.py), so what
`papermill --help-notebook` prints is this help. papermill only warns about a parameter the
notebook does not declare; `from_namespace` turns that into an error naming it.
"""
from __future__ import annotations

import copy
import dataclasses
import difflib
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import torch

from gnnrepro.checks import check_bool, check_int, check_positive_float
from gnnrepro.datasets import KNOWN_DATASETS

__all__ = ["Params", "from_namespace", "resolve_device", "runnable_world_sizes"]

Check = Callable[[str, Any], Any]


def _base_dir() -> Path:
    """Where relative paths start: the checkout holding this package, else the working dir."""
    checkout = Path(__file__).resolve().parents[2]
    return checkout if (checkout / "pyproject.toml").exists() else Path.cwd()


def _check_int(low: int) -> Check:
    return lambda name, value: check_int(f"parameter {name}", value, low)


def _check_positive_float(name: str, value: Any) -> float:
    return check_positive_float(f"parameter {name}", value)


def _check_bool(name: str, value: Any) -> bool:
    return check_bool(f"parameter {name}", value)


def _check_str(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise TypeError(f"parameter {name} must be a non-empty string, got {value!r}")
    return value


def _check_dataset(name: str, value: Any) -> str:
    value = _check_str(name, value)
    if value not in KNOWN_DATASETS:
        raise ValueError(f"parameter {name}: unknown dataset {value!r}; known: "
                         f"{', '.join(KNOWN_DATASETS)}")
    return value


def _check_path(name: str, value: Any) -> str:
    """An absolute path; relative ones start at the repository root, '~' is expanded."""
    path = Path(_check_str(name, value)).expanduser()
    return str(path if path.is_absolute() else _base_dir() / path)


def _check_optional_path(name: str, value: Any) -> str | None:
    return None if value is None else _check_path(name, value)


def _check_list(item: Check, *, nonempty: bool = False, unique: bool = False) -> Check:
    """A list of items passing `item`; a comma-separated string (papermill -p) is split."""
    def check(name: str, value: Any) -> list:
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
            value = [int(v) if v.lstrip("-").isdigit() else v for v in value]
        if not isinstance(value, (list, tuple)):
            raise TypeError(f"parameter {name} must be a list, got {value!r}")
        out = [item(f"{name}[{i}]", v) for i, v in enumerate(value)]
        if nonempty and not out:
            raise ValueError(f"parameter {name} must not be empty")
        if unique and len(set(map(repr, out))) != len(out):
            raise ValueError(f"parameter {name} has duplicates: {out}")
        return out
    return check


def _check_fanout(name: str, value: Any) -> int:
    value = _check_int(-1)(name, value)
    if value == 0:
        raise ValueError(f"parameter {name} must be >= 1, or -1 for all neighbours, got 0")
    return value


_check_fanouts = _check_list(_check_fanout, nonempty=True)


def _check_device(name: str, value: Any) -> str:
    value = _check_str(name, value)
    index = value.partition(":")[2]
    if value not in ("auto", "cpu", "cuda") and not (value.startswith("cuda:") and index.isdigit()):
        raise ValueError(f"parameter {name} must be 'auto', 'cpu', 'cuda' or 'cuda:N', "
                         f"got {value!r}")
    return value


def _param(default: Any, check: Check, help: str) -> Any:
    """A schema field: its default, its check, and the help `--help-notebook` shows."""
    meta = {"check": check, "help": help}
    if isinstance(default, list):
        return field(default_factory=lambda: copy.deepcopy(default), metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class Params:
    """Notebook parameters. `from_mapping` validates them (device resolved, paths absolute);
    `Params()` holds the raw defaults.

    Field annotations are written into the notebooks' parameters cells as they are here.
    Help texts hold no '=' (papermill's parameter parser would skip the line).
    """

    dataset: str = _param(
        "products-sim", _check_dataset,
        "dataset: products-sim (built in, synthetic) or ogbn-products, ogbn-arxiv, "
        "ogbn-papers100M (read from root)")
    compare_datasets: list[str] = _param(
        [], _check_list(_check_dataset, unique=True),
        "more datasets that 02_sampling_speedup compares, beside dataset")
    scale: float = _param(
        0.05, _check_positive_float,
        "products-sim size as a fraction of ogbn-products (1.0 is 2.45M nodes); "
        "ignored by OGB data")
    root: Optional[str] = _param(
        None, _check_optional_path,
        "dataset directory: the OGB root for ogbn-* (None: $GNNREPRO_OGB_ROOT, else ~/data/ogb), "
        "the cache for products-sim (None: $GNNREPRO_DATA, else ~/.cache/gnnrepro)")
    fanouts: list[int] = _param(
        [15, 10, 5], _check_fanouts,
        "neighbours sampled per layer, input layer first (-1: all)")
    batch_size: int = _param(1024, _check_int(1), "seed nodes per mini-batch")
    epochs: int = _param(
        3, _check_int(1),
        "training epochs per run; times are medians over the epochs after the first")
    device: str = _param(
        "auto", _check_device,
        "training device: auto (cuda if available, else cpu), cpu, cuda or cuda:N")
    gpus: list[int] = _param(
        [1, 2, 4, 8], _check_list(_check_int(1), nonempty=True, unique=True),
        "world sizes (GPUs, or CPU processes on the cpu device) for 04_scaling; "
        "sizes this machine cannot run are listed as not run")
    threads: int = _param(2, _check_int(1), "CPU threads for sampling and the model")
    workers: int = _param(1, _check_int(0), "sampling worker processes (0: in the trainer)")
    streams: int = _param(2, _check_int(1), "CUDA streams for host-to-device feature copies")
    seed: int = _param(0, _check_int(0), "random seed (batches, model initialisation)")
    train_repeats: int = _param(
        2, _check_int(1),
        "rounds of the end-to-end runs of 01 and 03, pipeline orders from a Williams design "
        "(balanced at a multiple of 2n rounds for n odd, n for n even), each pipeline in a "
        "fresh process; epoch times pooled over rounds")
    timeline_batches: int = _param(
        6, _check_int(0), "batches recorded for 03_end_to_end's timeline figure")
    sampling_batches: int = _param(
        30, _check_int(1), "seed batches each sampler samples in 02_sampling_speedup")
    sampling_repeats: int = _param(
        2, _check_int(1), "passes over those batches (interleaved; medians reported)")
    sweep_batch_sizes: list[int] = _param(
        [512, 1024, 2048], _check_list(_check_int(1), unique=True),
        "batch sizes swept by 05_sensitivity (other settings from the parameters above)")
    sweep_fanouts: list[list[int]] = _param(
        [[5, 5, 5], [10, 10, 5], [15, 10, 5]], _check_list(_check_fanouts, unique=True),
        "fanout lists swept by 05_sensitivity")
    sweep_workers: list[int] = _param(
        [0, 1, 2], _check_list(_check_int(0), unique=True),
        "worker counts swept by 05_sensitivity")
    sweep_streams: list[int] = _param(
        [1, 2, 4], _check_list(_check_int(1), unique=True),
        "CUDA stream counts swept by 05_sensitivity (not run on the cpu device)")
    out_dir: str = _param(
        ".", _check_path,
        "where figures/ and results/ go; relative paths start at the repository root")
    force: bool = _param(
        False, _check_bool, "recompute even if results for these parameters are stored")

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
        checked["device"] = resolve_device(checked["device"])
        return cls(**checked)

    @property
    def figures_dir(self) -> Path:
        return Path(self.out_dir) / "figures"

    @property
    def results_dir(self) -> Path:
        return Path(self.out_dir) / "results"

    def key(self, names: Iterable[str]) -> dict[str, Any]:
        """The named parameters as a JSON-ready dict: what identifies an experiment's result."""
        return {name: copy.deepcopy(getattr(self, name)) for name in names}

    def describe(self) -> str:
        """One line per parameter, for the notebook's log."""
        return "\n".join(f"{name:>18} = {getattr(self, name)!r}" for name in self.names())


def resolve_device(device: str) -> str:
    """'auto' -> 'cuda' if CUDA is available, else 'cpu'; a CUDA device that is not there is
    a ValueError rather than a failure deep inside a benchmark."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda"):
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        index = int(device.partition(":")[2] or 0)
        if index >= count:
            raise ValueError(f"parameter device is {device!r} but this machine has {count} "
                             f"CUDA device(s); use 'auto' or 'cpu'")
    return device


def runnable_world_sizes(gpus: Iterable[int], device: str) -> tuple[list[int], dict[int, str]]:
    """Split world sizes into those this machine can run and {size: reason} for the rest.

    On CUDA a world size needs that many GPUs; on the cpu device, one core per rank.
    """
    if device.startswith("cuda"):
        have, unit = torch.cuda.device_count(), "GPU"
    else:
        have, unit = os.cpu_count() or 1, "CPU core"
    runnable, reasons = [], {}
    for size in gpus:
        if size <= have:
            runnable.append(size)
        else:
            reasons[size] = (f"needs {size} {unit}s (one per rank); this machine has {have}"
                             + ("" if unit == "GPU" else f" and device is {device}"))
    return runnable, reasons


def from_namespace(namespace: Mapping[str, Any], before: Iterable[str]) -> Params:
    """Params from a notebook's globals: every public name defined since `before` (the names
    that existed before the parameters cell) is a parameter, so a name papermill injected that
    the notebook does not declare is an error here, not a warning lost in the log."""
    before = set(before)
    values = {k: v for k, v in namespace.items() if k not in before and not k.startswith("_")}
    params = Params.from_mapping(values)
    print(params.describe())
    return params
