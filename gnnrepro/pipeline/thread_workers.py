"""Sampling worker threads for the Loader: WorkerPool's interface, inside the training process.

Why threads: the sampling and gather ops (torch.ops.gnnrepro.sample_fused, gather_rows) release
the GIL, so W threads sample and gather in parallel with each other and with the training loop,
without what a worker process costs: its own interpreter and torch (~100s of MB per rank), a
pipe that every batch's blocks are pickled through, and a script that must guard its training
code with `if __name__ == "__main__":` (process workers re-import the main module). A thread's
Result carries the MiniBatch itself.

Each thread samples with its own copy.copy of the sampler (FusedSampler's node map and lock are
per object: one shared sampler would serialize the threads on its lock; the copies share the
graph's tensors) and gathers with the store itself or its own copy (FeatureStore.thread_use).
A sampler or store whose `thread_use` is None cannot be used from threads (the DGL samplers:
dgl.seed is process-wide); the Loader refuses it with worker_kind='thread'.
Each sets its intra-op thread count for itself alone (gnnrepro._C.set_local_num_threads):
torch.set_num_threads would also change torch's process-wide default and MKL's global count,
and so the trainer's matmuls.

Failures as with processes: an exception in a thread makes `receive` raise RuntimeError naming
it ("Loader worker thread k raised ...") from the exception; a thread that owes a batch and
reports nothing for `timeout_s` is reported as hung. `shutdown` asks every thread to stop
(before its next task, and before gathering a batch it has sampled) and joins it. A thread
inside a C++ call (a sample, a gather, a disk read) cannot be interrupted: one that has not
stopped within _JOIN_S is left behind with a warning, as a daemon thread that ends when the call
returns, its result dropped. It never starts a gather after the stop, but one stuck inside a
gather (a hung disk read) writes the staging slot it was given when the read returns, after
the Loader may have handed that slot to another batch.
"""
from __future__ import annotations

import copy
import os
import queue
import threading
import time
import traceback
import warnings
from collections import deque
from typing import Any, NamedTuple

import torch

from gnnrepro import _ops
from gnnrepro.features.store import FeatureStore
from gnnrepro.pipeline.workers import Result, Task, gather_task, sample_task
from gnnrepro.sampling.block import MiniBatch

__all__ = ["ThreadWorkerPool", "set_local_num_threads"]

_JOIN_S = 2.0  # how long shutdown waits for the threads to finish the call they are in


def set_local_num_threads(n: int) -> bool:
    """Give the calling thread's parallel regions `n` threads, leaving every other thread and
    torch's process-wide default as they are. Returns False (and changes nothing) where this
    build cannot (torch's parallel backend is not OpenMP): the thread then uses the process's
    count."""
    if not _ops._C.local_threads_supported():
        return False
    _ops._C.set_local_num_threads(n)
    return True


class _Failure(NamedTuple):
    """A worker thread's exception while preparing batch `index`."""

    index: int
    exc: BaseException
    text: str


class _Sampled(NamedTuple):
    """A task sampled (its reads announced) and not yet gathered."""

    task: Task
    mb: MiniBatch
    start: float
    sampled: float


def _worker_main(wid: int, sampler: Any, store: FeatureStore, staging: torch.Tensor | None,
                 threads: int, tasks: queue.SimpleQueue, results: queue.SimpleQueue,
                 stop: threading.Event, read_ahead: bool) -> None:
    """Serve tasks until None or `stop`; put (wid, Result or _Failure) on `results`.

    With `read_ahead` and a store that reads ahead (FeatureStore.reads_ahead), every task
    already queued for this thread is sampled and its rows announced before the oldest is
    gathered, so the store's reads for the thread's next batches overlap this one's gather."""
    set_local_num_threads(threads)
    reads_ahead = read_ahead and store.reads_ahead
    ids = torch.empty(0, dtype=torch.int64)
    ahead: deque[_Sampled | _Failure] = deque()
    last = False  # None was queued after the tasks in `ahead`

    def sample(task: Task) -> _Sampled | _Failure:
        nonlocal ids
        if task.ids is not None:
            ids = torch.from_numpy(task.ids)
        try:
            mb, start, sampled = sample_task(task, ids, sampler)
            if reads_ahead and task.slot >= 0:
                store.prefetch(mb.input_nodes)
            return _Sampled(task, mb, start, sampled)
        except BaseException as exc:  # reported to the consumer, which raises it there
            return _failure(task.index, exc)

    try:
        while not (last and not ahead):
            if not ahead:
                task = tasks.get()
                if task is None or stop.is_set():
                    return
                ahead.append(sample(task))
            while reads_ahead and not last:
                try:
                    task = tasks.get_nowait()
                except queue.Empty:
                    break
                last = task is None
                if not last:
                    ahead.append(sample(task))
            item = ahead.popleft()
            if stop.is_set():  # the slot may be someone else's by now
                return
            if isinstance(item, _Sampled):
                try:
                    gathered = gather_task(item.task, item.mb, store, staging)
                    item = Result(item.task.index, wid, item.mb, item.start, item.sampled,
                                  gathered)
                except BaseException as exc:
                    item = _failure(item.task.index, exc)
            results.put((wid, item))
            # Held until the next task, the batch would keep the staging slot the consumer
            # leases to it (it attaches x to this very MiniBatch) while the thread waits.
            item = None
    finally:
        ahead.clear()
        if reads_ahead:
            store.discard_prefetched()  # reads still in flight finish before their buffers go


def _failure(index: int, exc: BaseException) -> _Failure:
    return _Failure(index, exc, f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")


class ThreadWorkerPool:
    """`num_workers` sampling threads with gnnrepro.pipeline.workers.WorkerPool's interface.

    Thread k samples with copy.copy(sampler) and gathers with `store` (its copy.copy where
    store.thread_use is "copy"; the Loader refuses stores without one) into `staging[slot]`,
    using `threads` intra-op threads of its own; with `read_ahead` it announces its queued
    batches to a store that reads ahead (see _worker_main).
    """

    def __init__(self, num_workers: int, sampler: Any, store: FeatureStore,
                 staging: torch.Tensor | None, threads: int, timeout_s: float,
                 read_ahead: bool = True):
        self.timeout_s = timeout_s
        self._results: queue.SimpleQueue = queue.SimpleQueue()
        self._tasks = [queue.SimpleQueue() for _ in range(num_workers)]
        self._stop = threading.Event()
        self._owed = [0] * num_workers  # tasks sent and not yet answered
        self._heard = [time.monotonic()] * num_workers  # the last answer, or the first task owed
        self._threads: list[threading.Thread] = []
        try:
            for wid in range(num_workers):
                mine = copy.copy(store) if store.thread_use == "copy" else store
                thread = threading.Thread(
                    target=_worker_main, name=f"Loader worker thread {wid}", daemon=True,
                    args=(wid, copy.copy(sampler), mine, staging, threads, self._tasks[wid],
                          self._results, self._stop, read_ahead))
                thread.start()
                self._threads.append(thread)
        except BaseException:
            self.shutdown()
            raise

    @property
    def pids(self) -> list[int | None]:
        """The process each worker runs in: this one (never signal it to stop a worker)."""
        return [os.getpid()] * len(self._tasks)

    def submit(self, wid: int, task: Task) -> None:
        """Queue `task` for worker thread `wid`."""
        if self._owed[wid] == 0:  # the silence clock starts with the first task owed
            self._heard[wid] = time.monotonic()
        self._tasks[wid].put(task)
        self._owed[wid] += 1

    def receive(self, timeout: float) -> list[Result]:
        """Results that arrive within `timeout` s (maybe none); raise RuntimeError naming the
        worker thread if one raised, or owes a batch and has been silent for `timeout_s`."""
        out = []
        try:
            items = [self._results.get(timeout=timeout)]
        except queue.Empty:
            items = []
        while not self._results.empty():
            items.append(self._results.get_nowait())
        for wid, message in items:
            self._owed[wid] -= 1
            self._heard[wid] = time.monotonic()
            if isinstance(message, _Failure):
                raise RuntimeError(f"Loader worker thread {wid} raised while preparing batch "
                                   f"{message.index}: {message.text}") from message.exc
            out.append(message)
        now = time.monotonic()
        for wid, owed in enumerate(self._owed):
            if owed and now - self._heard[wid] > self.timeout_s:
                raise RuntimeError(f"Loader worker thread {wid} sent nothing for "
                                   f"{now - self._heard[wid]:.0f} s (limit {self.timeout_s:g} "
                                   f"s): hung, or too slow for the timeout")
        return out

    def shutdown(self) -> None:
        """Stop the threads (each after the call it is in) and join them. Idempotent."""
        self._stop.set()
        for tasks in self._tasks:
            tasks.put(None)  # wakes a thread waiting for a task
        deadline = time.monotonic() + _JOIN_S
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        stuck = [t.name for t in self._threads if t.is_alive()]
        self._threads = []
        if stuck:
            warnings.warn(f"{', '.join(stuck)} did not stop within {_JOIN_S:g} s (inside a "
                          f"call that cannot be interrupted); left running as daemon "
                          f"thread(s) that end when the call returns", RuntimeWarning,
                          stacklevel=2)
