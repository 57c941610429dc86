"""Sampling worker processes for the Loader: sample a batch, gather its features, report back.

The paper's design, kept as worker_kind='process' (the default is threads,
gnnrepro.pipeline.thread_workers, which share this module's Task and Result). Why processes:
a process has its own interpreter, so nothing it runs competes with the training loop for the
GIL; W processes run in parallel. Nothing large is copied: the graph, the feature table
and the staging buffers are in shared memory and mapped by every worker. A worker receives a
small task (batch index, batch id, a range of the epoch's shuffled ids, staging slot), writes
the gathered rows straight into that slot and sends back only the blocks, pickled by value
(numpy arrays: no per-batch shared-memory segments to leak when a process dies).

The workers are children of a gnnrepro.supervisor.Supervisor: a pair of pipes each, deaths
seen within one poll, a worker silent for longer than the timeout while it owes a batch is
reported as hung, and none outlives the Loader.
"""
from __future__ import annotations

import dataclasses

import multiprocessing as mp
import multiprocessing.connection
import time
import traceback
from typing import Any, NamedTuple

import numpy as np
import torch
import torch.multiprocessing  # registers the reductions that send shared tensors as handles

from gnnrepro.features.staging import StagingRing
from gnnrepro.features.store import FeatureStore
from gnnrepro.sampling.block import MiniBatch
from gnnrepro.supervisor import Supervisor

__all__ = ["Result", "Task", "WorkerPool", "pack", "unpack"]

# forkserver: workers fork from a clean server process that has imported torch but never run an
# OpenMP region (fork after OpenMP can deadlock), and start much faster than spawn because the
# server has already paid for `import torch` and the extension.
_CONTEXT = "forkserver"
_PRELOAD = ["gnnrepro.pipeline.workers"]
_PIPE_BYTES = 1 << 20  # result pipe capacity: a batch's blocks (MBs) move in fewer syscalls


class Task(NamedTuple):
    """One batch for a worker: seeds `ids[start:stop]`, features into staging slot `slot`
    (-1: none, the GPU gathers them).

    `ids` (the epoch's shuffled training ids, pickled by value) travels only with a worker's
    first task of an epoch, when that worker is idle, and is None after that, so later tasks
    stay a few bytes and a pipe full of them never blocks the main process.
    """

    index: int
    batch_id: int
    start: int
    stop: int
    slot: int
    ids: np.ndarray | None


class Result(NamedTuple):
    """A worker's answer: the MiniBatch (features are already in the staging slot; a worker
    process sends it packed and `WorkerPool.receive` unpacks it) and when it started,
    finished sampling and finished gathering (time.perf_counter, which is CLOCK_MONOTONIC on
    Linux and so comparable across processes), so the trainer can report the work it hid and
    draw it on a timeline."""

    index: int
    worker: int
    batch: Any
    start: float
    sampled: float
    gathered: float

    @property
    def sample_s(self) -> float:
        return self.sampled - self.start

    @property
    def gather_s(self) -> float:
        return self.gathered - self.sampled


def pack(mb: MiniBatch) -> MiniBatch:
    """A MiniBatch's seeds and blocks (typed or not) as numpy arrays, cheap to pickle by value
    (x and y are left unset)."""
    return dataclasses.replace(mb, x=None, y=None).apply(lambda t: t.numpy())


def unpack(packed: MiniBatch) -> MiniBatch:
    """Inverse of `pack`."""
    return packed.apply(torch.from_numpy)


def sample_task(task: Task, ids: torch.Tensor, sampler: Any) -> tuple[MiniBatch, float, float]:
    """Sample `task`'s batch from `ids`: (batch, start, sampled) on time.perf_counter."""
    start = time.perf_counter()
    mb = sampler.sample(ids[task.start:task.stop], task.batch_id)
    return mb, start, time.perf_counter()


def gather_task(task: Task, mb: MiniBatch, store: FeatureStore,
                staging: torch.Tensor | StagingRing | None) -> float:
    """Gather sampled `mb`'s rows into the task's staging slot (of the shared [slots, rows,
    dim] tensor, or a ring's slot reserved to fit); when it finished."""
    if task.slot >= 0:  # -1: the GPU gathers this batch's rows (feature_source)
        out = (staging.slots[task.slot].reserve(store.num_rows(mb.input_nodes))
               if isinstance(staging, StagingRing) else staging[task.slot])
        store.gather(mb.input_nodes, out=out)
    return time.perf_counter()


def prepare(task: Task, ids: torch.Tensor, sampler: Any, store: FeatureStore,
            staging: torch.Tensor | None) -> tuple[MiniBatch, float, float, float]:
    """What a worker process does for `task`: sample its batch from `ids` and gather its rows
    into its staging slot. Returns (batch, start, sampled, gathered) on time.perf_counter."""
    mb, start, sampled = sample_task(task, ids, sampler)
    return mb, start, sampled, gather_task(task, mb, store, staging)


def _worker_main(wid: int, sampler: Any, store: FeatureStore, staging: torch.Tensor | None,
                 threads: int, tasks: mp.connection.Connection,
                 results: mp.connection.Connection) -> None:
    """Serve tasks until None or until the main process goes away (its pipe end closes)."""
    torch.set_num_threads(threads)
    ids = torch.empty(0, dtype=torch.int64)
    while True:
        try:
            task = tasks.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        if task.ids is not None:
            ids = torch.from_numpy(task.ids)
        try:
            mb, start, sampled, gathered = prepare(task, ids, sampler, store, staging)
            message: Any = Result(task.index, wid, pack(mb), start, sampled, gathered)
        except Exception as exc:  # reported to the main process, which raises it there
            message = ("error", f"while preparing batch {task.index}: "
                                f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")
        try:
            results.send(message)
        except (BrokenPipeError, OSError):
            return


class WorkerPool:
    """`num_workers` sampling processes sharing `sampler`, `store` and `staging` (no copies),
    run by a gnnrepro.supervisor.Supervisor.

    `staging` is the shared [slots, max_rows, dim] buffer tasks' slot indices refer to. A
    worker that raises, dies, or owes a batch and says nothing for `timeout_s`, makes
    `receive` raise RuntimeError naming it ("Loader worker k (pid p) ...") and the cause.
    """

    def __init__(self, num_workers: int, sampler: Any, store: FeatureStore,
                 staging: torch.Tensor | None, threads: int, timeout_s: float):
        self.timeout_s = timeout_s
        self._supervisor = Supervisor(_CONTEXT, preload=_PRELOAD, pipe_bytes=_PIPE_BYTES)
        self._owed: list[int] = [0] * num_workers  # tasks sent and not yet answered
        try:
            for wid in range(num_workers):
                self._supervisor.start(f"Loader worker {wid}", _worker_main,
                                       (wid, sampler, store, staging, threads), daemon=True)
        except BaseException:
            self.shutdown()
            raise

    @property
    def pids(self) -> list[int | None]:
        return self._supervisor.pids

    def submit(self, wid: int, task: Task) -> None:
        """Send `task` to worker `wid`; a dead worker raises RuntimeError."""
        if self._owed[wid] == 0:  # the silence clock starts with the first task owed
            self._supervisor.children[wid].heard = time.monotonic()
        self._supervisor.send(wid, task)
        self._owed[wid] += 1

    def receive(self, timeout: float) -> list[Result]:
        """Results that arrive within `timeout` s (maybe none); raise if any worker failed."""
        out = []
        for wid, result in self._supervisor.receive(timeout):
            self._owed[wid] -= 1
            out.append(result._replace(batch=unpack(result.batch)))
        self._supervisor.check_silence((w for w, n in enumerate(self._owed) if n),
                                       self.timeout_s)
        return out

    def shutdown(self) -> None:
        """Terminate every worker (kill it if that fails), join it, close the pipes.

        Not a polite "please exit": a worker may be blocked sending a result nobody will read,
        and workers hold nothing that needs flushing.
        """
        self._supervisor.stop()
