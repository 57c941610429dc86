"""On-disk dataset cache: build once, then memory-map the arrays on every later load.

Layout: `<root>/<name>/<k=v-k=v>/` holding one .npy per array plus `meta.json` (written last);
features larger than memory come as a dense feature file, `features.gnnf`
(gnnrepro.feature_file), instead of `features.npy`, mapped the same way.
Why: generating products-sim or parsing OGB's CSVs takes minutes at full size, while mapping
.npy files copy-on-write (`mmap_mode="c"`) takes well under a second and shares the page cache
between processes. A directory is written in full under a temporary name next to its final one
and renamed into place, so an interrupted build never leaves a half-written entry; a concurrent
builder that loses the rename race uses the winner's entry.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from gnnrepro.datasets.anonymous import random_access_copy
from gnnrepro.datasets.dataset import ARRAYS, Dataset
from gnnrepro.feature_file import read_header

__all__ = ["FEATURE_FILE", "FORMAT_VERSION", "default_root", "entry_dir", "load_or_build",
           "write_atomically",
           "read_entry", "write_meta"]

FORMAT_VERSION = 1  # bump when the layout or a generator changes: old entries get rebuilt
#: Arrays the sampler reads at random, copied out of the file mapping when they fit.
RANDOM_ACCESS = ("indptr", "indices")
#: The features of an entry written as a feature file (gnnrepro.feature_file) instead of .npy.
FEATURE_FILE = "features.gnnf"
_log = logging.getLogger(__name__)


def default_root() -> Path:
    """`$GNNREPRO_DATA`, else `~/.cache/gnnrepro`."""
    return Path(os.environ.get("GNNREPRO_DATA") or "~/.cache/gnnrepro").expanduser()


def entry_dir(root: str | Path, name: str, params: dict[str, Any]) -> Path:
    """The cache directory of one (name, params); strings (paths) enter it as a short hash."""
    parts = []
    for key, value in params.items():
        if isinstance(value, str):
            value = hashlib.sha1(value.encode()).hexdigest()[:12]
        elif not isinstance(value, (bool, int, float)):
            raise TypeError(f"cache parameter {key}={value!r} must be a str, bool, int or float")
        parts.append(f"{key}={value}")
    return Path(root) / name / ("-".join(parts) or "default")


def load_or_build(name: str, params: dict[str, Any], build: Callable[[], Any],
                  root: str | Path | None = None, *,
                  read: Callable[[Path, str, dict[str, Any]], Any] | None = None,
                  write: Callable[[Any, Path, dict[str, Any]], None] | None = None) -> Any:
    """The cached (name, params) dataset, calling `build()` and caching it when absent/corrupt.

    The returned arrays are always the memory-mapped cache files, so after a build the in-memory
    copy is freed and first and later loads return the same thing. `read` and `write` (default:
    this module's, for a Dataset) read and write another kind of entry (a TypedDataset's:
    gnnrepro.datasets.typed_cache) under the same rules.
    """
    read = read_entry if read is None else read
    write = _write if write is None else write
    directory = entry_dir(default_root() if root is None else root, name, params)
    dataset = read(directory, name, params)
    if dataset is not None:
        return dataset
    if directory.exists():
        _log.warning("rebuilding invalid cache entry %s", directory)
        shutil.rmtree(directory, ignore_errors=True)
    write(build(), directory, params)
    dataset = read(directory, name, params)
    if dataset is None:
        raise RuntimeError(f"cache entry {directory} is unreadable right after writing it")
    return dataset


def read_entry(directory: Path, name: str, params: dict[str, Any]) -> Dataset | None:
    """The dataset in `directory`, or None if it is missing, partial, stale or corrupt."""
    try:
        meta = json.loads((directory / "meta.json").read_text())
        if (meta.get("format_version") != FORMAT_VERSION or meta.get("name") != name
                or meta.get("params") != json.loads(json.dumps(params))):
            return None
        arrays = {k: np.load(directory / f"{k}.npy", mmap_mode="c") for k in ARRAYS
                  if k != "features" or not (directory / FEATURE_FILE).exists()}
        if "features" not in arrays:
            arrays["features"] = read_header(directory / FEATURE_FILE).dense_rows().numpy()
        counts = meta["counts"]
        if (arrays["indptr"].shape != (counts["num_nodes"] + 1,)
                or arrays["indices"].shape != (counts["num_edges"],)
                or arrays["features"].shape != (counts["num_nodes"], counts["num_features"])
                or any(arrays[k].shape != (counts[k],) for k in ("train_idx", "val_idx",
                                                                  "test_idx"))):
            return None
        for key in RANDOM_ACCESS:  # the sampler's random reads: see gnnrepro.datasets.anonymous
            arrays[key] = random_access_copy(arrays[key])
        return Dataset.from_arrays({k: torch.from_numpy(a) for k, a in arrays.items()},
                                   num_classes=int(meta["num_classes"]), name=name,
                                   params=meta["params"])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as err:
        _log.warning("ignoring corrupt cache entry %s: %s", directory, err)
        return None


def _write(dataset: Dataset, directory: Path, params: dict[str, Any]) -> None:
    """Write `dataset` to a temporary sibling of `directory`, then rename it into place.

    `params` (the cache key) is what meta.json records and what later reads must match.
    """
    def fill(tmp: Path) -> None:
        tensors = dataset.arrays()
        for key, tensor in tensors.items():
            np.save(tmp / f"{key}.npy", tensor.numpy())
        write_meta(tmp, dataset.name, dataset.num_classes, params, {
            "num_nodes": dataset.num_nodes, "num_edges": dataset.graph.num_edges,
            "num_features": dataset.num_features,
            **{k: tensors[k].numel() for k in ("train_idx", "val_idx", "test_idx")}})
    write_atomically(directory, fill)


def write_atomically(directory: Path, fill: Callable[[Path], None]) -> None:
    """`fill(tmp)` writes an entry into a temporary sibling of `directory`, then renamed into
    place; a concurrent builder that renamed first wins (its entry is used)."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{directory.name}.tmp-", dir=directory.parent))
    try:
        fill(tmp)
        try:
            os.replace(tmp, directory)
        except OSError:
            if not (directory / "meta.json").exists():
                raise
            _log.info("another process cached %s first; using its entry", directory)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def write_meta(directory: Path, name: str, num_classes: int, params: dict[str, Any],
               counts: dict[str, int]) -> None:
    """Write the entry's meta.json (last: an entry without it is incomplete). `counts`:
    num_nodes, num_edges, num_features and the three split sizes, checked on every read."""
    meta = {"format_version": FORMAT_VERSION, "name": name, "num_classes": num_classes,
            "params": params, "counts": counts}
    (directory / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
