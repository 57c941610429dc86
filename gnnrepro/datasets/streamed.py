"""Building a cache entry larger than memory: the steps igb-sim and papers-sim share.

Why: their arrays (41 and 57 GB of features, a 6 GB edge array) are written piece by piece
straight into the cache entry, never held whole. The build happens in `<entry>.partial/` under
a lock and is renamed into place when complete, so an interrupted build is never taken for a
dataset; a progress record (`graph.json`) and the feature file's checkpoint let the next call
resume it. Free disk is checked before anything is written, naming the bytes. Chunks are made
by a thread pool and consumed in order, at most one per thread (plus one) in flight, so memory
is bounded by the chunk size and the result does not depend on the thread count.
"""
from __future__ import annotations

import errno
import fcntl
import json
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import torch

from gnnrepro.datasets import cache
from gnnrepro.datasets.dataset import Dataset
from gnnrepro.feature_file import FeatureFileWriter
from gnnrepro.progress import Progress, announce

__all__ = ["NpyOut", "check_disk", "fresh_partial", "load_streamed", "ordered_map",
           "read_progress", "worker_count", "write_features", "write_progress"]

PROGRESS_FILE = "graph.json"
T = TypeVar("T")


def load_streamed(root: str | Path | None, name: str, params: dict[str, Any], num_classes: int,
                  stages: Callable[[Path], dict[str, int] | None],
                  read: Callable[[Path, str, dict[str, Any]], Any] = cache.read_entry) -> Any:
    """The (name, params) entry under `root` (default: the cache's), built first when absent:
    `stages(partial)` writes every array into the partial directory (resuming what an earlier
    call left there) and returns meta.json's counts (or None when it wrote its own meta.json:
    a typed entry). `read` reads an entry (None when absent or stale)."""
    directory = cache.entry_dir(cache.default_root() if root is None else root, name, params)
    dataset = read(directory, name, params)
    if dataset is None:
        _build(directory, name, params, num_classes, stages, read)
        dataset = read(directory, name, params)
    if dataset is None:
        raise RuntimeError(f"cache entry {directory} is unreadable right after building it")
    return dataset


def _build(directory: Path, name: str, params: dict[str, Any], num_classes: int,
           stages: Callable[[Path], dict[str, int] | None],
           read: Callable[[Path, str, dict[str, Any]], Any]) -> None:
    """Build the entry in `<directory>.partial/` (resuming one left there), then rename it."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    partial = directory.with_name(directory.name + ".partial")
    with open(directory.with_name(directory.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one builder at a time; the others wait, then read
        if read(directory, name, params) is not None:
            return
        if directory.exists():
            shutil.rmtree(directory)  # incomplete or stale: read refused it
        counts = stages(partial)
        if counts is not None:
            cache.write_meta(partial, name, num_classes, params, counts)
        os.replace(partial, directory)


def check_disk(partial: Path, name: str, params: dict[str, Any], need: int,
               hint: str = "") -> None:
    """OSError(ENOSPC) naming the bytes needed and free when the `need` bytes of a whole
    entry, less those the partial build holds already, exceed the free disk."""
    have = (sum(f.stat().st_blocks * 512 for f in partial.glob("*") if f.is_file())
            if partial.exists() else 0)  # allocated bytes: preallocated files are sparse
    free = shutil.disk_usage(partial.parent).free
    if free < need - have:
        raise OSError(errno.ENOSPC, f"{name} at scale {params['scale']} needs {need - have} "
                                    f"more bytes of disk ({need / 1e9:.1f} GB in all) under "
                                    f"{partial.parent}, but {free} are free; free some space "
                                    f"or set GNNREPRO_DATA to a larger disk{hint}")


def read_progress(partial: Path, params: dict[str, Any]) -> dict[str, Any] | None:
    """The progress record of a partial build of `params`, or None if there is none (or it
    belongs to other parameters or another cache format)."""
    try:
        state = json.loads((partial / PROGRESS_FILE).read_text())
    except (OSError, ValueError):
        return None
    ok = (isinstance(state, dict) and state.get("params") == params
          and state.get("version") == cache.FORMAT_VERSION)
    return state if ok else None


def write_progress(partial: Path, params: dict[str, Any], **state: Any) -> None:
    """Record the partial build's progress (atomically: a crash leaves the old record)."""
    tmp = partial / (PROGRESS_FILE + ".tmp")
    tmp.write_text(json.dumps({"params": params, "version": cache.FORMAT_VERSION, **state}))
    os.replace(tmp, partial / PROGRESS_FILE)


def fresh_partial(partial: Path, name: str) -> None:
    """An empty partial directory, saying so when an unusable one is thrown away."""
    if partial.exists():
        announce(f"{name}: starting over: {partial} holds no usable graph")
        shutil.rmtree(partial)
    partial.mkdir()


def worker_count(cap: int | None = None) -> int:
    """Threads a build may use: the CPUs this process may run on, at most `cap` (what
    bounds the memory of the chunks in flight)."""
    cpus = max(1, len(os.sched_getaffinity(0)))
    return cpus if cap is None else min(cpus, cap)


def ordered_map(fn: Callable[..., T], calls: Sequence[tuple], workers: int) -> Iterator[T]:
    """`fn(*args)` for each of `calls`, run on `workers` threads and yielded in order, at
    most workers + 1 in flight (memory bounded by the chunk, not the table)."""
    with ThreadPoolExecutor(workers) as pool:
        pending = [pool.submit(fn, *args) for args in calls[:workers + 1]]
        try:
            for i in range(len(calls)):
                result = pending.pop(0).result()
                if i + workers + 1 < len(calls):
                    pending.append(pool.submit(fn, *calls[i + workers + 1]))
                yield result
        finally:  # stopped early (an error, an interrupt): drop what has not started
            for future in pending:
                future.cancel()


def write_features(partial: Path, name: str, num_nodes: int, num_features: int,
                   rows: Callable[[int, int], np.ndarray], group_rows: int,
                   checkpoint_bytes: int, max_workers: int | None = None,
                   file_name: str = cache.FEATURE_FILE,
                   dtype: torch.dtype = torch.float32) -> None:
    """Write the entry's `dtype` feature file `file_name`, `rows(start, stop)` a chunk at a
    time (start a multiple of group_rows) on up to `max_workers` threads, resuming after its
    last checkpoint (every checkpoint_bytes)."""
    writer = FeatureFileWriter(partial / file_name, num_nodes, num_features, dtype,
                               partial=partial / f"{file_name}.partial", resume=True)
    if writer.rows_done:
        announce(f"{name}: resuming the features at row {writer.rows_done} of {num_nodes}")
    else:
        announce(f"{name}: writing {writer.total_bytes / 1e9:.1f} GB of features to "
                 f"{partial / file_name}")
    step = max(group_rows, writer.chunk_rows // group_rows * group_rows)
    calls = [(s, min(s + step, num_nodes)) for s in range(writer.rows_done, num_nodes, step)]
    every = max(1, checkpoint_bytes // (step * num_features * dtype.itemsize))
    try:
        with Progress(f"{name} features", num_nodes - writer.rows_done, "rows") as bar, \
                closing(ordered_map(rows, calls, worker_count(max_workers))) as chunks:
            for i, chunk in enumerate(chunks):
                writer.append(chunk)
                bar.update(chunk.shape[0])
                if (i + 1) % every == 0:
                    writer.checkpoint()
        writer.finish()
    except BaseException:
        writer.close()  # the partial file stays: the next build resumes at its checkpoint
        raise


class NpyOut:
    """A .npy file of `length` `dtype` values, preallocated (sparse) and written in slices
    with pwrite: written pages stay in the page cache, out of the builder's resident memory
    (a writable memory map would count every page written). `resume` reopens the file an
    interrupted build left, when it has this dtype and length."""

    def __init__(self, path: Path, dtype: np.dtype | type, length: int, resume: bool = False):
        self.path, self.dtype = path, np.dtype(dtype)
        if not (resume and self._matches(length)):
            np.lib.format.open_memmap(path, mode="w+", dtype=self.dtype, shape=(length,))
        self.offset = np.load(path, mmap_mode="r").offset
        self._fd = os.open(path, os.O_RDWR)

    def _matches(self, length: int) -> bool:
        try:
            old = np.load(self.path, mmap_mode="r")
        except (OSError, ValueError):
            return False
        return old.dtype == self.dtype and old.shape == (length,)

    def write(self, start: int, values: np.ndarray) -> None:
        """values into elements [start, start + len(values))."""
        data = memoryview(np.ascontiguousarray(values, dtype=self.dtype)).cast("B")
        at = self.offset + start * self.dtype.itemsize
        while data:
            done = os.pwrite(self._fd, data, at)
            data, at = data[done:], at + done

    def sync(self) -> None:
        """Make what was written durable (before recording it as progress)."""
        os.fsync(self._fd)

    def close(self) -> None:
        os.close(self._fd)

    def __enter__(self) -> "NpyOut":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
