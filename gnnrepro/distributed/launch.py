"""`launch(world_size, ...)`: data-parallel training launched from Python, one process per rank.

The launcher loads the dataset once and moves every array of it (graph, features, labels,
splits) into shared memory before it starts the ranks with torch.multiprocessing (spawn):
tensors then travel as shared-memory handles, so every rank - and every sampling worker a rank
starts - maps the same pages; nothing is copied per rank.

Rendezvous: the launcher serves the process group's TCPStore itself, on MASTER_ADDR/MASTER_PORT
when set, else on a free port of 127.0.0.1 picked by the OS (no hard-coded port, no race).

Failure handling: the ranks are children of a gnnrepro.supervisor.Supervisor. A rank that
raises sends its traceback; a rank that dies (killed, crashed) is seen by its sentinel; a rank
that sends nothing (its training loop beats once a second) for timeout_s is hung. Then the
launcher gives the others a moment to report, terminates them (SIGTERM, then SIGKILL), and
raises RuntimeError naming the rank that failed first and why. Ranks die with the launcher
(PR_SET_PDEATHSIG) and their sampling workers with them, so nothing is left behind.
Collectives have a timeout, so no rank waits forever.

Memory: when every rank has finished training (its sampling workers still running), the ranks
wait while the launcher samples USS/PSS of its whole process tree - itself, ranks, workers -
once (gnnrepro.distributed.memory); the sum of PSS counts each shared page once.
"""
from __future__ import annotations

import multiprocessing.connection
import os
import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

from gnnrepro.checks import check_bool, check_int
from gnnrepro.datasets import load_scaled
from gnnrepro.datasets.dataset import Dataset
from gnnrepro.distributed.machine_share import share_dataset_
from gnnrepro.distributed.memory import tree_memory
from gnnrepro.config import TrainConfig, resolve_device
from gnnrepro.distributed.rank import init_process_group, train_rank
from gnnrepro.env import environment
from gnnrepro.supervisor import ChildFailed, Heartbeat, Supervisor, run_reporting

__all__ = ["DistributedResult", "launch", "unavailable"]

_GRACE_S = 2.0  # after a failure: how long the other ranks may still report theirs


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


def _private_copy(dataset: Dataset) -> Dataset:
    """The dataset with every array copied into this process's own memory (what a process
    that loads its own copy holds), the shared one no longer referenced."""
    arrays = {name: array.clone() for name, array in dataset.arrays().items()}
    return Dataset.from_arrays(arrays, num_classes=dataset.num_classes, name=dataset.name,
                               params=dict(dataset.params))


def _rank_main(rank: int, world_size: int, host: str, port: int, config: TrainConfig,
               dataset: Dataset, share_device: bool, own_data: bool,
               inbox: multiprocessing.connection.Connection,
               outbox: multiprocessing.connection.Connection) -> None:
    """A rank (a Supervisor child): train, report ("ok", result) or ("error", traceback)."""
    if own_data:
        dataset = _private_copy(dataset)

    def at_end() -> None:  # the launcher samples memory while every rank waits here
        outbox.send(("measure",))
        inbox.recv()

    def body() -> dict[str, Any]:
        store = dist.TCPStore(host, port, world_size, is_master=False,
                              timeout=timedelta(seconds=config.timeout_s))
        init_process_group(config, rank, world_size, rank, store, share_device)
        try:
            return train_rank(config, dataset, at_end, Heartbeat(outbox))
        finally:
            dist.destroy_process_group()

    run_reporting(body, outbox)


def unavailable(world_size: int, device: str, share_device: bool = False) -> str | None:
    """Why this machine cannot run `world_size` ranks on `device` (resolved), or None: GPU
    ranks need a GPU each (one for all with `share_device`); CPU ranks can always run (they
    may share cores)."""
    if device.startswith("cuda") and share_device and torch.cuda.device_count() < 1:
        return "needs a GPU (the ranks share GPU 0); this machine has none"
    if device.startswith("cuda") and not share_device and world_size > torch.cuda.device_count():
        return (f"needs {world_size} GPUs (one per rank); this machine has "
                f"{torch.cuda.device_count()}")
    return None


def launch(world_size: int, dataset: str | Dataset = "products-sim", *,
        scale: float | None = None, root: str | None = None, share_device: bool = False,
        own_data: bool = False, **settings: Any) -> DistributedResult:
    """Train on `world_size` ranks (processes; GPUs 0..world_size-1 with device="cuda") and
    return the all-reduced result. `dataset` is a name (loaded once, with `scale` for
    products-sim and `root`) or a Dataset; `settings` are TrainConfig fields (pipeline,
    fanouts, batch_size per rank, epochs, lr, hidden, threads per rank, workers, seed, device,
    timeout_s, ...). `share_device`: with device="cuda", every rank on GPU 0, collectives over
    gloo (a rehearsal of the multi-GPU path on one GPU: never a scaling measurement).
    `own_data`: every rank copies the dataset into its own memory first (what processes that
    each load their own copy hold; the memory the shared copy saves). A rank that raises, dies,
    or sends nothing for timeout_s raises RuntimeError naming it and the cause."""
    check_int("world_size", world_size, 1)
    share_device = check_bool("share_device", share_device)
    own_data = check_bool("own_data", own_data)
    config = TrainConfig(**settings)
    reason = unavailable(world_size, resolve_device(config.device), share_device)
    if reason is not None:
        raise ValueError(f"world_size={world_size} {reason}")
    if isinstance(dataset, str):
        dataset = load_scaled(dataset, root, scale)
    share_dataset_(dataset)
    host = os.environ.get("MASTER_ADDR", "127.0.0.1")
    store = dist.TCPStore(host, int(os.environ.get("MASTER_PORT", 0)), world_size,
                          is_master=True, wait_for_workers=False,
                          timeout=timedelta(seconds=config.timeout_s))
    supervisor = Supervisor("spawn")
    results: dict[int, dict[str, Any]] = {}
    memory: dict[str, Any] = {}
    measuring: set[int] = set()
    try:
        for rank in range(world_size):
            supervisor.start(f"rank {rank}", _rank_main,
                             (rank, world_size, host, store.port, config, dataset,
                              share_device, own_data))
        try:
            while len(results) < world_size:
                for rank, message in supervisor.receive(1.0):
                    if message[0] == "ok":
                        results[rank] = message[1]
                    elif message[0] == "measure":
                        measuring.add(rank)
                if len(measuring) == world_size:  # every rank waits: sample memory once
                    memory = tree_memory()
                    for rank in measuring:
                        supervisor.send(rank, ("go",))
                    measuring.clear()
                supervisor.check_silence((r for r in range(world_size) if r not in results
                                          and r not in measuring), config.timeout_s)
        except ChildFailed:
            deadline = time.monotonic() + _GRACE_S  # the others may still report theirs
            while (time.monotonic() < deadline
                   and len(results) + len(supervisor.failures) < world_size):
                supervisor.receive(max(0.0, deadline - time.monotonic()), raise_failure=False)
            raise RuntimeError(f"distributed training failed: {supervisor.first_cause()}") \
                from None
    finally:
        supervisor.stop()
    first = results[0]
    return DistributedResult(
        params={**config.to_dict(), "world_size": world_size,
                "backend": first["backend"], "share_device": share_device,
                "own_data": own_data,
                "dataset": dataset.name, "dataset_params": dict(dataset.params),
                "loader": first["loader"], "loader_workers": first["loader_workers"],
                "threads": first["threads"],
                "launcher": "gnnrepro.distributed.launch (spawn)"},
        epochs=first["epochs"], ids_per_epoch=first["ids_per_epoch"],
        val_acc=first["val_acc"], test_acc=first["test_acc"], memory=memory,
        data_copies_ranks=first["data_copies_ranks"], pids=supervisor.pids,
        states=[{k: torch.from_numpy(v) for k, v in results[r]["state"].items()}
                for r in range(world_size)])
