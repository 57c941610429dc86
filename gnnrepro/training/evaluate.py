"""Mini-batch evaluation: accuracy of a model on node ids, with blocks from a given sampler.

Batch b of an evaluation always holds ids[b * batch_size:][:batch_size] and uses batch_id b, so
it is deterministic; with a torch.distributed group of several ranks each rank evaluates the
batches b with b % world_size == rank and the correct counts are summed, which gives exactly
the one-process count.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from gnnrepro.datasets.dataset import Dataset

__all__ = ["accuracy", "count_correct", "rank_and_world"]


def rank_and_world() -> tuple[int, int]:
    """(rank, world size) of the torch.distributed process group, (0, 1) without one."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


@torch.no_grad()
def count_correct(model: nn.Module, dataset: Dataset, sampler: Any, ids: torch.Tensor,
                  device: torch.device, batch_size: int, rank: int = 0, world_size: int = 1,
                  heartbeat: Callable[[], None] | None = None) -> torch.Tensor:
    """Correct predictions (int64 scalar on `device`) on the evaluation batches b of `ids`
    with b % world_size == rank, in eval mode (no dropout, no grad) on blocks sampled by
    `sampler` (on its own device; blocks and features are moved to `device`)."""
    was_training = model.training
    model.eval()
    correct = torch.zeros((), dtype=torch.int64, device=device)
    sampler_device = getattr(sampler, "device", torch.device("cpu"))
    for b in range(rank, -(-ids.numel() // batch_size), world_size):
        seeds = ids[b * batch_size: (b + 1) * batch_size]
        mb = sampler.sample(seeds.to(sampler_device), b)
        x = dataset.features[mb.input_nodes.cpu()].to(device)
        blocks = [blk.to(device) for blk in mb.blocks]
        pred = model(blocks, x).argmax(dim=1)
        correct += (pred == dataset.labels[seeds].to(device)).sum()
        if heartbeat is not None:
            heartbeat()
    model.train(was_training)
    return correct


def accuracy(model: nn.Module, dataset: Dataset, sampler: Any, ids: torch.Tensor,
             device: torch.device, batch_size: int,
             heartbeat: Callable[[], None] | None = None) -> float:
    """Accuracy (a fraction in [0, 1]) on node ids `ids`, NaN for no ids; the whole group's
    under a torch.distributed process group (every rank must call it)."""
    if ids.numel() == 0:
        return float("nan")
    rank, world_size = rank_and_world()
    correct = count_correct(model, dataset, sampler, ids, device, batch_size, rank, world_size,
                            heartbeat)
    if world_size > 1:
        dist.all_reduce(correct)
    return correct.item() / ids.numel()
