"""The stores a disk-backed store is measured against: a memory-mapped file, and LMDB.

* MmapFeatureStore: the feature file mapped and indexed - what DGL (np.load(mmap_mode="r"))
  and GIDS's baseline do. Every row read is a page fault into the page cache, which the OS
  evicts under memory pressure; 4 KiB pages (plus read-ahead) per 400-byte row.
* LmdbFeatureStore: rows in an LMDB database (the store a study of DGL's multi-GPU memory use compares), `rows_per_key`
  consecutive rows per value, keys big-endian so the B-tree keeps them in row order.
Both follow InMemoryFeatureStore's gather(ids, out) contract.
"""
from __future__ import annotations

import mmap
import os
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from gnnrepro import _ops
from gnnrepro.checks import check_int
from gnnrepro.feature_file import read_header
from gnnrepro.features.file_store import FileFeatureStore
from gnnrepro.features.store import FeatureStore
from gnnrepro.progress import Progress

__all__ = ["MMAP_ADVICE", "LmdbFeatureStore", "MmapFeatureStore", "write_lmdb"]

MMAP_ADVICE = ("normal", "random")

_NP = {torch.float32: np.float32, torch.float16: np.float16, torch.float64: np.float64}


class MmapFeatureStore(FileFeatureStore):
    """Rows of the feature file at `path`, memory-mapped read-only and gathered from the map
    (thread-safe: the map is only read).

    `advice` "normal" is what DGL's np.load(mmap_mode="r") does: a fault reads around the
    page (the device's read-ahead, read_ahead_kb: 128 KiB on most Linux systems, 8 MiB on some
    cloud VMs). "random" (madvise MADV_RANDOM) reads only the faulting pages: what a user who
    knows the access is random would ask for.
    """

    thread_use = "share"

    def __init__(self, path: str | os.PathLike, advice: str = "normal"):
        if advice not in MMAP_ADVICE:
            raise ValueError(f"advice must be one of {', '.join(MMAP_ADVICE)}, got {advice!r}")
        self.advice = advice
        self.path = Path(path)
        self.info = read_header(self.path)
        if self.info.packed:
            raise ValueError(f"{self.path} is block-packed: the mmap store reads dense feature "
                             "files (like DGL's np.load(mmap_mode='r'))")
        if self.info.dtype not in _NP:
            raise TypeError(f"{self.path}: mmap store supports {list(_NP)}, not "
                            f"{self.info.dtype}")
        order = self.info.order()
        self.position = None if order is None else torch.empty_like(order).scatter_(
            0, order, torch.arange(order.numel()))
        array = np.memmap(self.path, dtype=_NP[self.info.dtype], mode="r",
                          offset=self.info.data_offset, shape=(self.info.num_nodes,
                                                               self.info.dim))
        if advice == "random" and array.size:
            array._mmap.madvise(mmap.MADV_RANDOM)  # the whole mapping (numpy's own mmap)
        with warnings.catch_warnings():  # read-only map: gather only ever reads it
            warnings.simplefilter("ignore", UserWarning)
            self.table = torch.from_numpy(array) if array.size else torch.empty(0, self.info.dim)


    def gather(self, ids: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        """Rows `ids` (a page fault per row not yet in the page cache)."""
        ids, out = self.gather_args(ids, out)
        if self.position is not None:
            ids = self.position[ids.long()]
        _ops.ops.gather_rows(self.table, ids, out)
        return out[: ids.numel()]

    def __getstate__(self) -> dict:
        return {"path": self.path, "advice": self.advice}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["path"], state["advice"])


def _append(txn: Any, start: int, rows: np.ndarray, path: Path) -> None:
    if not txn.put(start.to_bytes(8, "big"), np.ascontiguousarray(rows).tobytes(),
                   append=True):
        raise RuntimeError(f"LMDB refused row key {start} in {path}: keys must be new and "
                           "ascending")


def _write_growing(env: Any, size: int, write: Callable[[Any], object]) -> int:
    """Run `write(txn)` in one write transaction, doubling the map and running it again while
    it fills the map (the full transaction is aborted: nothing half-written). The map size."""
    import lmdb
    while True:
        try:
            with env.begin(write=True) as txn:
                write(txn)
            return size
        except lmdb.MapFullError:
            size *= 2
            env.set_mapsize(size)


def write_lmdb(path: str | os.PathLike, features: np.ndarray | torch.Tensor,
               rows_per_key: int = 1, map_size: int | None = None) -> Path:
    """Write `features` into a new LMDB database directory `path`, `rows_per_key` rows a value.

    The map starts at `map_size` bytes (None: the table plus a quarter) and doubles whenever
    it fills: what LMDB takes depends on its page layout (a value just over half a page or a
    page fills two), so no fixed factor is safe. Keys are written in order with append=True,
    which packs leaf pages full instead of leaving them half empty after each split. Rows go
    in transactions of about 64 MiB; one that fills the map is aborted, the map grown and the
    transaction written again, so nothing is lost.
    """
    import lmdb
    if isinstance(features, torch.Tensor):
        features = features.numpy()
    check_int("rows_per_key", rows_per_key, 1)
    if map_size is not None:
        check_int("map_size", map_size, 1 << 20)
    path = Path(path)
    if (path / "data.mdb").exists():
        raise ValueError(f"path {path} already holds an LMDB database: remove it first "
                         "(write_lmdb writes a new one, it does not overwrite rows)")
    path.mkdir(parents=True, exist_ok=True)
    n, dim = features.shape
    size = map_size if map_size is not None else int(features.nbytes * 1.25) + (16 << 20)
    row_bytes = max(1, dim * features.dtype.itemsize)
    keys_per_txn = max(1, (64 << 20) // (row_bytes * rows_per_key))
    env = lmdb.open(str(path), map_size=size, subdir=True, lock=False, sync=False)
    try:
        starts = list(range(0, n, rows_per_key))
        pieces = [starts[i:i + keys_per_txn] for i in range(0, len(starts), keys_per_txn)]
        meta = f"{n},{dim},{features.dtype},{rows_per_key}".encode()
        with Progress(f"write lmdb {path.name}", len(pieces) + 1, "transactions") as bar:
            for piece in pieces:
                size = _write_growing(env, size, lambda txn, piece=piece: [
                    _append(txn, start, features[start:start + rows_per_key], path)
                    for start in piece])
                bar.update()
            # __meta__ sorts after every row key: last, so that append=True holds throughout
            size = _write_growing(env, size, lambda txn: txn.put(b"__meta__", meta))
            bar.update()
        env.sync(True)
    finally:
        env.close()
    return path


class LmdbFeatureStore(FeatureStore):
    """Rows from the LMDB database at `path` (written by write_lmdb): one get per key.

    `position[node]` is the row the database stores node `node` at (None: the same row), so a
    database written from a feature file's rows keeps that file's row order. Thread-safe: one
    read transaction at a time (the environment is opened with lock=False, which leaves
    concurrent transactions to the caller).
    """

    thread_use = "share"

    def __init__(self, path: str | os.PathLike, position: torch.Tensor | None = None):
        import lmdb
        self.path = Path(path)
        self.position = position
        self._env = lmdb.open(str(self.path), readonly=True, lock=False, readahead=False,
                              subdir=True)
        with self._env.begin() as txn:
            meta = txn.get(b"__meta__")
        if meta is None:
            raise ValueError(f"{self.path} is not a feature database (no __meta__ key)")
        n, dim, dtype, per = meta.decode().split(",")
        self._num_nodes, self._dim, self._per = int(n), int(dim), int(per)
        self._np_dtype = np.dtype(dtype)
        self._dtype = torch.from_numpy(np.empty(0, self._np_dtype)).dtype
        self._lock = threading.Lock()

    @property
    def num_nodes(self) -> int:
        return self._num_nodes

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def dtype(self) -> torch.dtype:
        return self._dtype

    def nbytes(self) -> int:
        return self._num_nodes * self._dim * self._np_dtype.itemsize

    def gather(self, ids: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        """Rows `ids`: one LMDB get per distinct key, in key order."""
        ids, out = self.gather_args(ids, out)
        if ids.numel() == 0:
            return out[:0]
        ids64 = (ids.long() if self.position is None else self.position[ids.long()]).numpy()
        keys, key_of = np.unique(ids64 // self._per, return_inverse=True)
        chunks = np.empty((keys.size, self._per, self._dim), dtype=self._np_dtype)
        with self._lock, self._env.begin(buffers=True) as txn:
            for i, k in enumerate(keys.tolist()):
                value = txn.get((k * self._per).to_bytes(8, "big"))
                if value is None:
                    raise KeyError(f"{self.path}: no row block for node {k * self._per}")
                block = np.frombuffer(value, dtype=self._np_dtype).reshape(-1, self._dim)
                chunks[i, :block.shape[0]] = block
        rows = torch.from_numpy(chunks[key_of, ids64 % self._per])
        out[: ids.numel()] = rows
        return out[: ids.numel()]

    def close(self) -> None:
        self._env.close()

    def __getstate__(self) -> dict:
        return {"path": self.path, "position": self.position}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["path"], state["position"])
