"""open_feature_store: one entry point for every feature store kind, by name.

`feature_store` = memory | disk | mmap | lmdb is a setting accepted everywhere features are
chosen (the pipelines, the CLI, the notebooks); this turns the name plus a dataset (or a
feature file) into the store, which the Loader then takes. The disk-backed kinds read the dataset cache's feature file (converted from its
features.npy once, see features.file_store), so all three read the same bytes.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

from gnnrepro.checks import check_int
from gnnrepro.datasets.cache import FEATURE_FILE, default_root, entry_dir
from gnnrepro.datasets.dataset import Dataset
from gnnrepro.datasets.typed_cache import feature_file_name
from gnnrepro.datasets.typed_dataset import TypedDataset
from gnnrepro.features.baseline_stores import LmdbFeatureStore, MmapFeatureStore, write_lmdb
from gnnrepro.features.disk import DiskFeatureStore
from gnnrepro.feature_file import block_size_of, read_header, write_feature_file
from gnnrepro.features.file_store import ensure_feature_file
from gnnrepro.features.hot import hot_nodes
from gnnrepro.features.store import FeatureStore, InMemoryFeatureStore
from gnnrepro.features.typed_store import TypedFeatureStore

__all__ = ["FEATURE_STORES", "feature_file_for", "open_feature_store", "typed_feature_file"]

FEATURE_STORES = ("memory", "disk", "mmap", "lmdb")


def feature_file_for(dataset: Dataset, path: str | os.PathLike | None = None,
                     pack_block: int | None = None) -> Path:
    """The feature file of `dataset`: `path` if given (written from the dataset's features
    when absent), else one in the dataset's cache entry (converted from features.npy once).
    `pack_block`: block-packed rows (see feature_file), else dense. An entry whose features
    are a feature file already (features.gnnf) is used as it is when its rows fit the blocks."""
    if path is not None:
        path = Path(path)
        try:
            info = read_header(path)
            if (info.num_nodes, info.dim) == tuple(dataset.features.shape) and \
                    info.packed == (pack_block is not None):
                return path
        except (FileNotFoundError, ValueError):
            pass
        return write_feature_file(path, dataset.features, pack_block=pack_block).path
    entry = entry_dir(default_root(), dataset.name, dataset.params)
    npy, dense = entry / "features.npy", entry / FEATURE_FILE
    if not npy.exists() and dense.exists():  # features written as a feature file (igb-sim)
        info = read_header(dense)
        if pack_block is None or not info.row_bytes % pack_block:  # dense is packed already
            return dense
        return feature_file_for(dataset, entry / f"features.packed{pack_block}.gnnf",
                                pack_block)
    if not npy.exists():
        raise ValueError(f"dataset {dataset.name!r} has no cache entry with features.npy "
                         f"(looked for {npy}): pass path= for its feature file")
    return ensure_feature_file(npy, pack_block=pack_block).path


def open_feature_store(kind: str, source: Dataset | str | os.PathLike, *,
                       path: str | os.PathLike | None = None, hot_bytes: int = 0,
                       cache_bytes: int = 0, hot_policy: str = "degree", share: bool = True,
                       pin: bool = False, pack: bool = True,
                       **disk_options: Any) -> FeatureStore:
    """The `kind` store of `source` (a Dataset, or a feature file's path).

    With a Dataset, "disk" reads a block-packed copy of its features (`pack`; rows never
    straddle a block of the device: about half the bytes per random row) and "mmap"/"lmdb"
    the dense one; `path` names the file to use (written when absent).
    hot_bytes / cache_bytes: memory budgets of the disk store's hot set (needs a Dataset: hot
    nodes come from its graph, by `hot_policy` "degree" or "pagerank") and CLOCK cache.
    disk_options go to DiskFeatureStore (engine, threads, queue_depth, max_gap_bytes, ...), or
    for "mmap" to MmapFeatureStore (advice).
    A TypedDataset gets a TypedFeatureStore of one `kind` store per featured node type
    (memory, disk or mmap; its cache entry's files, see typed_feature_file).
    """
    if kind not in FEATURE_STORES:
        raise ValueError(f"feature_store must be one of {', '.join(FEATURE_STORES)}, "
                         f"got {kind!r}")
    check_int("hot_bytes", hot_bytes, 0)
    check_int("cache_bytes", cache_bytes, 0)
    if isinstance(source, TypedDataset) and hot_bytes:
        raise ValueError("hot_bytes does not take a typed dataset (hot sets are chosen from a "
                         "homogeneous graph): use cache_bytes")
    if isinstance(source, TypedDataset):
        return _typed_store(kind, source, cache_bytes, share, pin, disk_options)
    dataset = source if isinstance(source, Dataset) else None
    if dataset is None and not isinstance(source, (str, os.PathLike)):
        raise TypeError(f"source must be a Dataset or a path, got {type(source).__name__}")
    if kind == "memory":
        if dataset is not None:
            return InMemoryFeatureStore(dataset.features, share=share, pin=pin)
        info = read_header(source)
        rows = np.fromfile(info.path, dtype=np.uint8, count=info.data_bytes,
                           offset=info.data_offset)
        table = torch.from_numpy(rows).view(info.dtype).view(info.num_nodes, info.dim)
        order = info.order()
        if order is not None:
            table = torch.empty_like(table).index_copy_(0, order, table)
        return InMemoryFeatureStore(table, share=share, pin=pin)
    packed = None
    if kind == "disk" and pack and dataset is not None:
        where = Path(path).parent if path is not None else entry_dir(
            default_root(), dataset.name, dataset.params)
        where.mkdir(parents=True, exist_ok=True)
        block = block_size_of(where)
        row_bytes = dataset.features.shape[1] * dataset.features.element_size()
        packed = block if row_bytes % block else None
    file = feature_file_for(dataset, path, packed) if dataset is not None else Path(source)
    if kind == "mmap":
        return MmapFeatureStore(file, **disk_options)
    if kind == "lmdb":
        db = file.with_suffix(".lmdb")  # rows in the feature file's order
        mm = MmapFeatureStore(file)
        try:
            store = LmdbFeatureStore(db, mm.position)
            if (store.num_nodes, store.dim) == (mm.num_nodes, mm.dim):
                return store
            store.close()
        except Exception:  # absent or unreadable: (re)build it from the feature file
            pass
        shutil.rmtree(db, ignore_errors=True)
        write_lmdb(db, mm.table)
        return LmdbFeatureStore(db, mm.position)
    hot_ids = None
    if hot_bytes:
        if dataset is None:
            raise ValueError("hot_bytes needs a Dataset source (hot nodes come from its graph)")
        row_bytes = read_header(file).row_bytes
        hot_ids = hot_nodes(dataset.graph, hot_bytes // row_bytes, hot_policy,
                            dataset.train_idx)
    return DiskFeatureStore(file, hot_ids=hot_ids, cache_bytes=cache_bytes, share=share,
                            pin=pin, **disk_options)


def typed_feature_file(dataset: TypedDataset, node_type: str) -> Path:
    """The feature file of one node type of a cached typed dataset: the entry's own
    (`feat-<type>.gnnf`, igbh-sim) or one converted once from its `feat-<type>.npy`, packed
    into blocks when its rows would straddle them."""
    entry = entry_dir(default_root(), dataset.name, dataset.params)
    own = entry / feature_file_name(node_type)
    if own.exists():
        return own
    npy = entry / f"feat-{node_type}.npy"
    if not npy.exists():
        raise ValueError(f"dataset {dataset.name!r} has no cache entry with features of "
                         f"{node_type!r} (looked for {own} and {npy}): a typed dataset is read "
                         "from disk only from its cache entry")
    block = block_size_of(entry)
    row_bytes = dataset.features[node_type].shape[1] * dataset.features[node_type].element_size()
    straddles = row_bytes % block and block % row_bytes
    packed = block if straddles else None
    name = f"feat-{node_type}.gnnf" if packed is None else f"feat-{node_type}.packed{block}.gnnf"
    return ensure_feature_file(npy, entry / name, pack_block=packed).path


def _typed_store(kind: str, dataset: TypedDataset, cache_bytes: int, share: bool, pin: bool,
                 disk_options: dict[str, Any]) -> TypedFeatureStore:
    """Per featured node type a `kind` store (memory, disk or mmap); the disk stores share
    `cache_bytes` in proportion to their types' bytes."""
    if kind == "memory":
        return TypedFeatureStore({t: InMemoryFeatureStore(x, share=share, pin=pin)
                                  for t, x in dataset.features.items()})
    if kind == "lmdb":
        raise ValueError("feature_store='lmdb' does not take a typed dataset: use memory, disk "
                         "or mmap")
    files = {t: typed_feature_file(dataset, t) for t in dataset.features}
    if kind == "mmap":
        return TypedFeatureStore({t: MmapFeatureStore(f, **disk_options)
                                  for t, f in files.items()})
    total = sum(x.numel() * x.element_size() for x in dataset.features.values())
    return TypedFeatureStore({
        t: DiskFeatureStore(f, cache_bytes=cache_bytes * (x.numel() * x.element_size()) // total,
                            share=share, pin=pin, **disk_options)
        for (t, f), x in zip(files.items(), dataset.features.values())})
