"""`run(world_size, ...)`: data-parallel training launched from Python, one process per rank.

The launcher loads the dataset once and moves every array of it (graph, features, labels,
splits) into shared memory before it starts the ranks with torch.multiprocessing (spawn):
tensors then travel as shared-memory handles, so every rank - and every sampling worker a rank
starts - maps the same pages; nothing is copied per rank.

Rendezvous: the launcher serves the process group's TCPStore itself, on MASTER_ADDR/MASTER_PORT
when set, else on a free port of 127.0.0.1 picked by the OS (no hard-coded port, no race).

Failure handling: the launcher waits on every rank's pipe and process sentinel at once. A rank
that raises sends its traceback; a rank that dies (killed, crashed) is seen by its sentinel.
Then the launcher gives the others a moment to report, terminates them (SIGTERM, then SIGKILL),
and raises RuntimeError naming the rank that failed first and why. Ranks die with the launcher
(PR_SET_PDEATHSIG) and their sampling workers with them (a worker exits when its rank's pipe
closes), so nothing is left behind. Collectives have a timeout, so no rank waits forever.

Memory: when every rank has finished training (its sampling workers still running), the ranks
wait while the launcher samples USS/PSS of its whole process tree - itself, ranks, workers -
once (gnnrepro.distributed.memory); the sum of PSS counts each shared page once.
"""
from __future__ import annotations

import ctypes
import multiprocessing.connection
import os
import signal
import time
import traceback
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from gnnrepro.checks import check_int
from gnnrepro.datasets import load_scaled
from gnnrepro.datasets.dataset import Dataset
from gnnrepro.distributed.machine_share import share_dataset_
from gnnrepro.distributed.memory import tree_memory
from gnnrepro.distributed.rank import RunConfig, init_process_group, train_rank
from gnnrepro.env import environment

__all__ = ["DistributedResult", "run"]

_GRACE_S = 2.0  # after a failure: how long the other ranks may still report theirs
_JOIN_S = 3.0  # how long a terminated rank gets to exit before it is killed
_PR_SET_PDEATHSIG = 1


@dataclass
class DistributedResult:
    """What run() measured: the all-reduced summary (see rank.train_rank), the memory sample,
    which copy of the data each rank reads (memory.data_copies), each rank's final parameters
    (`states`, not in to_dict) and pid, and the settings."""

    params: dict[str, Any]
    epochs: list[dict[str, Any]]
    ids_per_epoch: list[int]
    val_acc: float
    test_acc: float
    memory: dict[str, Any]
    data_copies_ranks: list[list[dict[str, Any]]]
    pids: list[int]
    states: list[dict[str, torch.Tensor]] = field(repr=False)
    env: dict[str, Any] = field(default_factory=environment)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (without the parameters)."""
        return {k: v for k, v in self.__dict__.items() if k != "states"}


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when the launcher dies (best effort elsewhere)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def _rank_main(rank: int, world_size: int, host: str, port: int, config: RunConfig,
               dataset: Dataset, conn: multiprocessing.connection.Connection) -> None:
    """A spawned rank: train, report ("ok", result) or ("error", traceback) to the launcher."""
    _die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the launcher's to handle

    def at_end() -> None:  # the launcher samples memory while every rank waits here
        conn.send(("measure",))
        conn.recv()

    try:
        store = dist.TCPStore(host, port, world_size, is_master=False,
                              timeout=timedelta(seconds=config.timeout_s))
        device = init_process_group(config, rank, world_size, rank, store)
        try:
            result = train_rank(config, dataset, device, at_end)
        finally:
            dist.destroy_process_group()
        conn.send(("ok", result))
    except BaseException:  # reported to the launcher, which raises it there
        conn.send(("error", traceback.format_exc()))
    finally:
        conn.close()


def _exit_cause(proc: mp.Process) -> str:
    proc.join(0.5)  # let the exit code settle
    code = proc.exitcode
    if code is not None and code < 0:
        return f"was killed by signal {signal.Signals(-code).name}"
    if code is not None:
        return f"exited with exit code {code} without reporting a result"
    return "closed its connection without reporting a result"


def _stop(procs: list[mp.Process]) -> None:
    """Terminate every rank still running (SIGKILL if SIGTERM does not do), and reap them."""
    for stop in ("terminate", "kill"):
        live = [p for p in procs if p.is_alive()]
        for proc in live:
            getattr(proc, stop)()
        deadline = time.monotonic() + _JOIN_S
        for proc in live:
            proc.join(max(0.0, deadline - time.monotonic()))
    for proc in procs:
        proc.join(0)


class _Watch:
    """The launcher's view of its ranks: results, failures, memory handshake."""

    def __init__(self, procs: list[mp.Process],
                 conns: list[multiprocessing.connection.Connection]):
        self.procs, self.conns = procs, conns
        self.results: dict[int, dict] = {}
        self.failures: list[tuple[int, str, bool]] = []  # (rank, cause, died without a report)
        self.measuring: set[int] = set()
        self.memory: dict[str, Any] | None = None

    def poll(self, timeout: float) -> None:
        """Handle what arrives within `timeout` s: results, errors, deaths, memory requests."""
        waiting = {c: r for r, c in enumerate(self.conns) if r not in self.results and
                   r not in {f[0] for f in self.failures}}
        sentinels = {self.procs[r].sentinel: r for r in waiting.values()}
        ready = multiprocessing.connection.wait(list(waiting) + list(sentinels), timeout)
        for obj in ready:
            if obj in waiting:
                rank = waiting[obj]
                try:
                    message = obj.recv()
                except (EOFError, OSError):
                    self._fail(rank, _exit_cause(self.procs[rank]), died=True)
                    continue
                if message[0] == "ok":
                    self.results[rank] = message[1]
                elif message[0] == "error":
                    self._fail(rank, f"raised:\n{message[1]}", died=False)
                elif message[0] == "measure":
                    self.measuring.add(rank)
        for sentinel, rank in sentinels.items():
            if sentinel in ready and rank not in self.results and not self._failed(rank):
                if not self.conns[rank].poll():  # its last message (if any) is read first
                    self._fail(rank, _exit_cause(self.procs[rank]), died=True)
        if self.measuring and len(self.measuring) == len(self.procs):
            self.memory = tree_memory()
            for rank in self.measuring:
                self.conns[rank].send(("go",))
            self.measuring.clear()

    def _failed(self, rank: int) -> bool:
        return any(f[0] == rank for f in self.failures)

    def _fail(self, rank: int, cause: str, died: bool) -> None:
        if not self._failed(rank):
            self.failures.append((rank, cause, died))

    def error(self) -> RuntimeError:
        """The first failure, preferring a rank that died over ranks whose collectives then
        failed because it was gone."""
        rank, cause, _ = sorted(self.failures, key=lambda f: not f[2])[0]
        others = [r for r, _, _ in self.failures if r != rank]
        also = f" (then rank(s) {others} failed too)" if others else ""
        return RuntimeError(f"distributed training failed: rank {rank} "
                            f"(pid {self.procs[rank].pid}) {cause}{also}")


def run(world_size: int, dataset: str | Dataset = "products-sim", *,
        scale: float | None = None, root: str | None = None,
        **settings: Any) -> DistributedResult:
    """Train on `world_size` ranks (processes; GPUs 0..world_size-1 with device="cuda") and
    return the all-reduced result. `dataset` is a name (loaded once, with `scale` for
    products-sim and `root`) or a Dataset; `settings` are RunConfig fields (pipeline, fanouts,
    batch_size per rank, epochs, lr, hidden, threads per rank, workers, seed, device,
    timeout_s, ...). A failed rank raises RuntimeError naming it and the cause."""
    check_int("world_size", world_size, 1)
    config = RunConfig(**settings)
    if torch.device(config.device).type == "cuda" and world_size > torch.cuda.device_count():
        raise ValueError(f"world_size={world_size} needs {world_size} GPUs, "
                         f"{torch.cuda.device_count()} present")
    if isinstance(dataset, str):
        dataset = load_scaled(dataset, root, scale)
    share_dataset_(dataset)
    host = os.environ.get("MASTER_ADDR", "127.0.0.1")
    store = dist.TCPStore(host, int(os.environ.get("MASTER_PORT", 0)), world_size,
                          is_master=True, wait_for_workers=False,
                          timeout=timedelta(seconds=config.timeout_s))
    ctx = mp.get_context("spawn")
    procs: list[mp.Process] = []
    conns: list[multiprocessing.connection.Connection] = []
    try:
        for rank in range(world_size):
            here, there = ctx.Pipe(duplex=True)
            proc = ctx.Process(target=_rank_main, name=f"gnnrepro-rank-{rank}",
                               args=(rank, world_size, host, store.port, config, dataset,
                                     there))
            proc.start()
            there.close()
            procs.append(proc)
            conns.append(here)
        watch = _Watch(procs, conns)
        while len(watch.results) < world_size and not watch.failures:
            watch.poll(1.0)
        if watch.failures:
            deadline = time.monotonic() + _GRACE_S
            while (time.monotonic() < deadline
                   and len(watch.results) + len(watch.failures) < world_size):
                watch.poll(max(0.0, deadline - time.monotonic()))
            raise watch.error()
    finally:
        _stop(procs)
        for conn in conns:
            conn.close()
    first = watch.results[0]
    return DistributedResult(
        params={**config.to_dict(), "world_size": world_size,
                "backend": first["backend"],
                "dataset": dataset.name, "dataset_params": dict(dataset.params),
                "loader": first["loader"], "loader_workers": first["loader_workers"],
                "launcher": "gnnrepro.distributed.run (spawn)"},
        epochs=first["epochs"], ids_per_epoch=first["ids_per_epoch"],
        val_acc=first["val_acc"], test_acc=first["test_acc"], memory=watch.memory or {},
        data_copies_ranks=first["data_copies_ranks"], pids=[p.pid for p in procs],
        states=[{k: torch.from_numpy(v) for k, v in watch.results[r]["state"].items()}
                for r in range(world_size)])
