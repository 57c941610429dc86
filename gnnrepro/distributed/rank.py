"""One data-parallel rank: join the process group, train its share of every epoch with
gnnrepro.training's one loop (which wraps the model in DistributedDataParallel), then gather
the metrics.

Same code for CPU ranks (gloo) and GPUs (NCCL, one GPU per rank): only the backend and the
device differ. Every collective has the process group's timeout, so a rank whose peer died
raises within `timeout_s` instead of waiting forever.

What the ranks agree on without talking: the initial weights (torch.manual_seed(seed), and DDP
broadcasts rank 0's anyway), the epoch's permutation of the training ids (seeded by (seed,
epoch); see gnnrepro.pipeline.shard) and so the number of steps. Each rank then draws its own
dropout stream (seeded by (seed, rank)) and samples its seeds with the global step's batch id
(so that, without dropout, k ranks train as one rank with the global batch).
"""
from __future__ import annotations

import os
import statistics
import sys
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

from gnnrepro.config import TrainConfig, resolve_device
from gnnrepro.datasets.dataset import Dataset
from gnnrepro.distributed.memory import data_copies, release_free_heap
from gnnrepro.training import Checkpointing, reduce_stages, run_training

__all__ = ["exit_rank", "init_process_group", "rank_device", "train_rank"]


def rank_device(config: TrainConfig, local_rank: int, share_device: bool = False) -> torch.device:
    """The rank's device: the CPU, or GPU `local_rank` of this machine (one GPU per rank), or
    GPU 0 for every rank with `share_device` (a rehearsal of k GPUs on one)."""
    if resolve_device(config.device).startswith("cuda"):
        return torch.device("cuda", 0 if share_device else local_rank)
    return torch.device("cpu")


def _restarted_group_store(world_size: int, timeout: timedelta) -> dist.Store | None:
    """Under torchrun after an elastic restart (--max-restarts), the store of this attempt:
    torchrun's agent keeps one store across attempts, where the dead attempt's gloo addresses
    are still found (the restarted group then fails to connect), so each attempt's keys go
    under a prefix of their own. None otherwise (env:// as usual)."""
    attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    if attempt == "0" or os.environ.get("TORCHELASTIC_USE_AGENT_STORE") != "True":
        return None
    agent = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]),
                          world_size, is_master=False, timeout=timeout)
    return dist.PrefixStore(f"gnnrepro/attempt-{attempt}", agent)


def init_process_group(config: TrainConfig, rank: int, world_size: int, local_rank: int,
                       store: dist.Store | None = None, share_device: bool = False
                       ) -> torch.device:
    """Join the process group (NCCL on GPUs, gloo on CPUs) with `config.timeout_s` on every
    collective; `store` None means env:// (torchrun's MASTER_ADDR/MASTER_PORT). With
    `share_device` every rank runs on GPU 0 and the collectives go over gloo (on CUDA tensors):
    NCCL refuses two ranks on one device. Returns the rank's device."""
    device = rank_device(config, local_rank, share_device)
    backend = "nccl" if device.type == "cuda" and not share_device else "gloo"
    if device.type == "cuda":
        torch.cuda.set_device(device)
        # Let a failed or timed-out NCCL collective abort the process instead of hanging it.
        os.environ.setdefault("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")
    timeout = timedelta(seconds=config.timeout_s)
    if store is None:
        store = _restarted_group_store(world_size, timeout)
    if store is None:
        dist.init_process_group(backend, init_method="env://", rank=rank,
                                world_size=world_size, timeout=timeout)
    else:
        dist.init_process_group(backend, store=store, rank=rank, world_size=world_size,
                                timeout=timeout)
    return device


def _data_tensors(dataset: Dataset, loader: Any) -> dict[str, torch.Tensor]:
    """The dataset's arrays as this rank holds them, plus DGL's own graph arrays (the dgl
    pipeline builds a DGL graph in every rank)."""
    dgl = getattr(loader, "dgl_tensors", list)()
    return dataset.arrays() | {f"dgl[{i}]": t for i, t in enumerate(dgl)}


def train_rank(config: TrainConfig, dataset: Dataset,
               at_end: Callable[[], dict | None],
               heartbeat: Callable[[], None] | None = None,
               checkpointing: Checkpointing | None = None) -> dict[str, Any]:
    """Train this rank's share with gnnrepro.training's one loop (the process group must
    exist) and return the run's all-reduced summary - identical on every rank - plus this
    rank's own parameters ("state").

    `checkpointing`: the run's checkpoints and resume (gnnrepro.training.resume), the same
    settings on every rank.

    `at_end()` is called on every rank when training is over and the loader's workers are
    still running (the moment memory is measured); what it returns is kept as "memory".
    Summary: epochs [{epoch, epoch_s (slowest rank), ranks_epoch_s, loss (over all seeds),
    seeds (sum over ranks), stages {"mean", "ranks"}}], val_acc, test_acc, ids_per_epoch,
    data_copies_ranks (per rank: which copy of each data array it reads, see
    gnnrepro.distributed.memory.data_copies).
    """
    rank, world_size = dist.get_rank(), dist.get_world_size()

    def before_close(loader: Any) -> dict[str, Any]:
        release_free_heap()  # every pipeline alike: measure what the rank holds
        memory = at_end()  # first: reading the page tables costs memory of its own
        return {"memory": memory, "copies": data_copies(_data_tensors(dataset, loader)),
                "loader": repr(loader), "loader_workers": getattr(loader, "workers", 0)}

    result = run_training(dataset, config, rank=rank, world_size=world_size,
                          heartbeat=heartbeat, before_close=before_close,
                          checkpointing=checkpointing)
    device = torch.device(result.params["device"])
    history = result.epochs
    end = result.params.pop("before_close")
    sums = torch.tensor([[e.loss * e.seeds, e.seeds] for e in history], dtype=torch.float64,
                        device=device)
    dist.all_reduce(sums)
    ranks_epoch_s = _gather([e.epoch_s for e in history], world_size)
    ranks_copies = _gather(end["copies"], world_size)
    ranks_stages = _gather([e.stages for e in history], world_size)
    epochs = []
    for e in range(config.epochs):
        per_rank = [stages[e] for stages in ranks_stages]
        epochs.append({
            "epoch": e, "epoch_s": max(r[e] for r in ranks_epoch_s),
            "ranks_epoch_s": [r[e] for r in ranks_epoch_s],
            "loss": sums[e, 0].item() / max(sums[e, 1].item(), 1.0),
            "seeds": int(sums[e, 1].item()),
            "stages": {"mean": reduce_stages(per_rank, statistics.fmean), "ranks": per_rank}})
    return {
        "epochs": epochs,
        "ids_per_epoch": [e["seeds"] for e in epochs],
        "val_acc": result.val_acc,
        "test_acc": result.test_acc,
        "memory": end["memory"],
        "data_copies_ranks": ranks_copies,
        "loader": end["loader"],
        "loader_workers": end["loader_workers"],  # sampling processes per rank
        "threads": result.params["threads"],
        "backend": dist.get_backend(),
        # numpy, pickled by value: a torch tensor sent through a pipe is a shared-memory
        # handle that the receiver can only open while the sender is still alive
        "state": {k: v.numpy() for k, v in result.state.items()},
    }


def exit_rank(status: int) -> None:
    """End a torchrun rank's process with `status`, without the interpreter's finalization
    (as multiprocessing's children end): torch's C++ threads of the process group (destroyed,
    not all joined) make a finalizing rank abort now and then ("terminate called without an
    active exception": 1 run in 3 to 14 here), failing a run whose results were all written.
    Call it once everything is closed and written; stdout and stderr are flushed first."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def _gather(value: Any, world_size: int) -> list[Any]:
    """Every rank's `value`, in rank order."""
    out: list[Any] = [None] * world_size
    dist.all_gather_object(out, value)
    return out
