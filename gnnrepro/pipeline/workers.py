"""Sampling worker processes for the Loader: sample a batch, gather its features, report back.

Why processes: sampling and gathering hold the GIL in places and compete with the training
loop; W processes run them in parallel. Nothing large is copied: the graph, the feature table
and the staging buffers are in shared memory and mapped by every worker. A worker receives a
small task (batch index, batch id, a range of the epoch's shuffled ids, staging slot), writes
the gathered rows straight into that slot and sends back only the blocks, pickled by value
(numpy arrays: no per-batch shared-memory segments to leak when a process dies).

Each worker has its own pair of pipes, so a worker that dies mid-message cannot corrupt another
worker's channel, and the main process waits on all pipes and process sentinels at once with a
timeout: a dead worker is noticed within one poll, never waited for forever.
"""
from __future__ import annotations

import fcntl
import multiprocessing as mp
import multiprocessing.connection
import signal
import time
import traceback
from typing import Any, NamedTuple

import numpy as np
import torch
import torch.multiprocessing  # registers the reductions that send shared tensors as handles

from gnnrepro.features.store import FeatureStore
from gnnrepro.sampling.block import Block, MiniBatch

__all__ = ["Task", "Result", "WorkerPool", "pack", "unpack"]

# forkserver: workers fork from a clean server process that has imported torch but never run an
# OpenMP region (fork after OpenMP can deadlock), and start much faster than spawn because the
# server has already paid for `import torch` and the extension.
_CONTEXT = "forkserver"
_PRELOAD = ["gnnrepro.pipeline.workers"]
_JOIN_S = 2.0  # how long a terminated (or dead) worker gets to exit before it is killed
_PIPE_BYTES = 1 << 20  # result pipe capacity: a batch's blocks (MBs) move in fewer syscalls


class Task(NamedTuple):
    """One batch for a worker: seeds `ids[start:stop]`, features into staging slot `slot`.

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
    """A worker's answer: the packed MiniBatch (features are already in the staging slot) and
    when it started, finished sampling and finished gathering (time.perf_counter, which is
    CLOCK_MONOTONIC on Linux and so comparable across processes), so the trainer can report
    the work it hid and draw it on a timeline."""

    index: int
    worker: int
    packed: tuple
    start: float
    sampled: float
    gathered: float

    @property
    def sample_s(self) -> float:
        return self.sampled - self.start

    @property
    def gather_s(self) -> float:
        return self.gathered - self.sampled


def pack(mb: MiniBatch) -> tuple:
    """A MiniBatch's seeds and blocks as numpy arrays, cheap to pickle by value."""
    blocks = tuple((b.indptr.numpy(), b.indices.numpy(), b.src_nodes.numpy(), b.num_dst)
                   for b in mb.blocks)
    return mb.seeds.numpy(), blocks, mb.batch_id


def unpack(packed: tuple) -> MiniBatch:
    """Inverse of `pack` (x and y are left unset)."""
    seeds, blocks, batch_id = packed
    blocks = [Block(torch.from_numpy(p), torch.from_numpy(i), torch.from_numpy(s), n)
              for p, i, s, n in blocks]
    return MiniBatch(torch.from_numpy(seeds), blocks[0].src_nodes, blocks, batch_id=batch_id)


def _grow_pipe(conn: mp.connection.Connection) -> None:
    """Raise a pipe's capacity to _PIPE_BYTES where Linux allows it (else keep the default)."""
    if hasattr(fcntl, "F_SETPIPE_SZ"):
        try:
            fcntl.fcntl(conn.fileno(), fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
        except OSError:  # above /proc/sys/fs/pipe-max-size
            pass


def _worker_main(wid: int, sampler: Any, store: FeatureStore, staging: torch.Tensor,
                 tasks: mp.connection.Connection, results: mp.connection.Connection,
                 threads: int) -> None:
    """Serve tasks until None or until the main process goes away (its pipe end closes)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to handle
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
            start = time.perf_counter()
            mb = sampler.sample(ids[task.start:task.stop], task.batch_id)
            sampled = time.perf_counter()
            store.gather(mb.input_nodes, out=staging[task.slot])
            message: Any = Result(task.index, wid, pack(mb), start, sampled,
                                  time.perf_counter())
        except Exception as exc:  # reported to the main process, which raises it there
            message = ("error", task.index, wid,
                       f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")
        try:
            results.send(message)
        except (BrokenPipeError, OSError):
            return


class WorkerPool:
    """`num_workers` sampling processes sharing `sampler`, `store` and `staging` (no copies).

    `staging` is the shared [slots, max_rows, dim] buffer tasks' slot indices refer to.
    """

    def __init__(self, num_workers: int, sampler: Any, store: FeatureStore,
                 staging: torch.Tensor, threads: int):
        ctx = mp.get_context(_CONTEXT)
        ctx.set_forkserver_preload(_PRELOAD)
        self.procs: list[mp.process.BaseProcess] = []
        self._tasks: list[mp.connection.Connection] = []
        self._results: list[mp.connection.Connection] = []
        try:
            for wid in range(num_workers):
                task_r, task_w = ctx.Pipe(duplex=False)
                res_r, res_w = ctx.Pipe(duplex=False)
                _grow_pipe(res_r)
                proc = ctx.Process(target=_worker_main, name=f"gnnrepro-loader-{wid}",
                                   args=(wid, sampler, store, staging, task_r, res_w, threads),
                                   daemon=True)
                proc.start()
                # Drop our copies of the worker's ends: its death then reads as EOF / EPIPE here.
                task_r.close()
                res_w.close()
                self.procs.append(proc)
                self._tasks.append(task_w)
                self._results.append(res_r)
        except BaseException:
            self.shutdown()
            raise

    def submit(self, wid: int, task: Task) -> None:
        """Send `task` to worker `wid`; a dead worker raises RuntimeError."""
        try:
            self._tasks[wid].send(task)
        except (BrokenPipeError, OSError) as exc:
            self._raise_dead(wid, exc)

    def receive(self, timeout: float) -> list[Result]:
        """Results that arrive within `timeout` s (maybe none); raise if any worker failed."""
        sentinels = [p.sentinel for p in self.procs]
        ready = mp.connection.wait(self._results + sentinels, timeout)
        out = []
        for wid, conn in enumerate(self._results):
            if conn not in ready:
                continue
            try:
                message = conn.recv()
            except (EOFError, OSError) as exc:
                self._raise_dead(wid, exc)
            if message[0] == "error":
                _, index, _, text = message
                raise RuntimeError(f"Loader worker {wid} (pid {self.procs[wid].pid}) raised "
                                   f"while preparing batch {index}: {text}")
            out.append(message)
        for wid, proc in enumerate(self.procs):
            if proc.exitcode is not None:
                self._raise_dead(wid)
        return out

    def _raise_dead(self, wid: int, cause: BaseException | None = None) -> None:
        proc = self.procs[wid]
        proc.join(_JOIN_S)  # let the exit code settle
        code = proc.exitcode
        if code is not None and code < 0:
            how = f"was killed by signal {signal.Signals(-code).name}"
        elif code is not None:
            how = f"exited unexpectedly with exit code {code}"
        else:
            how = f"stopped responding ({type(cause).__name__}: {cause})"
        raise RuntimeError(f"Loader worker {wid} (pid {proc.pid}) {how}") from cause

    def shutdown(self) -> None:
        """Terminate every worker (kill it if that fails), join it, close the pipes.

        Not a polite "please exit": a worker may be blocked sending a result nobody will read,
        and workers hold nothing that needs flushing.
        """
        for stop in ("terminate", "kill"):
            for proc in self.procs:
                if proc.is_alive():
                    getattr(proc, stop)()
                    proc.join(_JOIN_S)
        for conn in self._tasks + self._results:
            conn.close()
        self.procs, self._tasks, self._results = [], [], []
