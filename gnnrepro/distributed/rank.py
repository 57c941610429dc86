"""One data-parallel rank: join the process group, train its share of every epoch under
DistributedDataParallel with train()'s own epoch loop, then all-reduce the metrics.

Same code for CPU ranks (gloo) and GPUs (NCCL, one GPU per rank): only the backend and the
device differ. Every collective has the process group's timeout, so a rank whose peer died
raises within `timeout_s` instead of waiting forever.

What the ranks agree on without talking: the initial weights (torch.manual_seed(seed), and DDP
broadcasts rank 0's anyway), the epoch's permutation of the training ids (seeded by (seed,
epoch); see gnnrepro.pipeline.shard) and so the number of steps. Each rank then draws its own
dropout stream (seeded by (seed, rank)) and samples with its own batch ids.
"""
from __future__ import annotations

import dataclasses
import os
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from gnnrepro.checks import check_device, check_int, check_positive_float
from gnnrepro.datasets.dataset import Dataset
from gnnrepro.distributed.memory import data_copies
from gnnrepro.pipeline.pipelines import PIPELINES, make_loader
from gnnrepro.profiling import StageTimer, reduce_stages
from gnnrepro.sampling import FusedSampler
from gnnrepro.sampling.args import check_fanouts, stream_seed
from gnnrepro.models.graphsage import check_dropout
from gnnrepro.train import build_model, count_correct, train_epoch

__all__ = ["RunConfig", "init_process_group", "rank_device", "train_rank"]


@dataclass(frozen=True)
class RunConfig:
    """What every rank trains: the pipeline, model and optimizer settings (batch_size is per
    rank, as in DGL's multi-GPU DataLoader), threads per rank, and the collective timeout."""

    pipeline: str = "fused+pinned"
    fanouts: tuple[int, ...] = (15, 10, 5)
    batch_size: int = 1024
    epochs: int = 3
    lr: float = 0.003
    hidden: int = 256
    dropout: float = 0.5
    threads: int = 1
    workers: int = 1
    streams: int = 2
    prefetch: int = 2
    seed: int = 0
    device: str = "cpu"
    eval_batch_size: int = 4096
    timeout_s: float = 60.0

    def __post_init__(self) -> None:
        if self.pipeline not in PIPELINES:
            raise ValueError(f"pipeline must be one of {', '.join(PIPELINES)}, "
                             f"got {self.pipeline!r}")
        object.__setattr__(self, "fanouts", tuple(check_fanouts(list(self.fanouts))))
        for name, low in (("batch_size", 1), ("epochs", 1), ("hidden", 1), ("threads", 1),
                          ("workers", 0), ("streams", 1), ("prefetch", 1), ("seed", 0),
                          ("eval_batch_size", 1)):
            check_int(name, getattr(self, name), low)
        check_device(self.device)
        for name in ("lr", "timeout_s"):
            object.__setattr__(self, name, check_positive_float(name, getattr(self, name)))
        object.__setattr__(self, "dropout", check_dropout(self.dropout))

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "fanouts": list(self.fanouts)}


def rank_device(config: RunConfig, local_rank: int) -> torch.device:
    """The rank's device: the CPU, or GPU `local_rank` of this machine (one GPU per rank)."""
    if torch.device(config.device).type == "cuda":
        return torch.device("cuda", local_rank)
    return torch.device("cpu")


def init_process_group(config: RunConfig, rank: int, world_size: int, local_rank: int,
                       store: dist.Store | None = None) -> torch.device:
    """Join the process group (NCCL on GPUs, gloo on CPUs) with `config.timeout_s` on every
    collective; `store` None means env:// (torchrun's MASTER_ADDR/MASTER_PORT). Returns the
    rank's device."""
    device = rank_device(config, local_rank)
    backend = "nccl" if device.type == "cuda" else "gloo"
    if device.type == "cuda":
        torch.cuda.set_device(device)
        # Let a failed or timed-out NCCL collective abort the process instead of hanging it.
        os.environ.setdefault("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")
    timeout = timedelta(seconds=config.timeout_s)
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


def train_rank(config: RunConfig, dataset: Dataset, device: torch.device,
               at_end: Callable[[], dict | None]) -> dict[str, Any]:
    """Train this rank's share (the process group must exist) and return the run's all-reduced
    summary - identical on every rank - plus this rank's own parameters.

    `at_end()` is called on every rank when training is over and the loader's workers are
    still running (the moment memory is measured); what it returns is kept as "memory".
    Summary: epochs [{epoch, epoch_s (slowest rank), ranks_epoch_s, loss (over all seeds),
    seeds (sum over ranks), stages {"mean", "ranks"}}], val_acc, test_acc, ids_per_epoch,
    data_copies_ranks (per rank: which copy of each data array it reads, see
    gnnrepro.distributed.memory.data_copies).
    """
    rank, world_size = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(config.threads)
    fanouts = list(config.fanouts)
    loader = make_loader(config.pipeline, dataset, fanouts, device, config.batch_size,
                         config.seed, config.workers, config.streams, config.prefetch,
                         rank=rank, world_size=world_size)
    try:
        model = build_model(dataset, len(fanouts), config.hidden, config.dropout, config.seed,
                            device)
        if world_size > 1:  # each rank its own dropout masks; a single rank keeps train()'s
            torch.manual_seed(stream_seed(config.seed, rank))
        ddp = DistributedDataParallel(model, device_ids=[device] if device.type == "cuda"
                                      else None)
        optimizer = torch.optim.Adam(ddp.parameters(), lr=config.lr)
        timer = StageTimer(device, in_process=loader.in_process)
        history = [train_epoch(ddp, optimizer, loader, timer, device, epoch)
                   for epoch in range(config.epochs)]
        memory = at_end()  # first: reading the page tables costs memory of its own
        copies = data_copies(_data_tensors(dataset, loader))
    finally:
        loader.close()

    evaluator = FusedSampler(dataset.graph, fanouts, seed=config.seed)
    correct = torch.stack([count_correct(model, dataset, evaluator, ids, device,
                                         config.eval_batch_size, rank, world_size)
                           for ids in (dataset.val_idx, dataset.test_idx)])
    sums = torch.tensor([[e.loss * e.seeds, e.seeds] for e in history], dtype=torch.float64,
                        device=device)
    times = torch.tensor([e.epoch_s for e in history], dtype=torch.float64, device=device)
    dist.all_reduce(correct)
    dist.all_reduce(sums)
    ranks_epoch_s: list[list[float]] = [[] for _ in range(world_size)]
    dist.all_gather_object(ranks_epoch_s, times.tolist())
    ranks_copies: list[list] = [[] for _ in range(world_size)]
    dist.all_gather_object(ranks_copies, copies)
    ranks_stages: list[list[dict]] = [[] for _ in range(world_size)]
    dist.all_gather_object(ranks_stages, [e.stages for e in history])
    epochs = []
    for e in range(config.epochs):
        per_rank = [stages[e] for stages in ranks_stages]
        epochs.append({
            "epoch": e, "epoch_s": max(r[e] for r in ranks_epoch_s),
            "ranks_epoch_s": [r[e] for r in ranks_epoch_s],
            "loss": sums[e, 0].item() / max(sums[e, 1].item(), 1.0),
            "seeds": int(sums[e, 1].item()),
            "stages": {"mean": reduce_stages(per_rank, statistics.fmean), "ranks": per_rank}})
    val, test = correct.tolist()
    return {
        "epochs": epochs,
        "ids_per_epoch": [e["seeds"] for e in epochs],
        "val_acc": val / dataset.val_idx.numel() if dataset.val_idx.numel() else float("nan"),
        "test_acc": test / dataset.test_idx.numel() if dataset.test_idx.numel() else float("nan"),
        "memory": memory,
        "data_copies_ranks": ranks_copies,
        "loader": repr(loader),
        "loader_workers": getattr(loader, "workers", 0),  # sampling processes per rank
        "backend": dist.get_backend(),
        # numpy, pickled by value: a torch tensor sent through a pipe is a shared-memory
        # handle that the receiver can only open while the sender is still alive
        "state": {k: v.detach().cpu().numpy() for k, v in model.state_dict().items()},
    }
