"""The batch plan: which training ids each batch of an epoch holds, and its sampler batch id.

Epoch e visits the ids in an order seeded by (seed, e) (`epoch_order`), so what each batch
holds depends only on (seed, epoch), never on how many workers or streams prepare it. A
data-parallel rank takes its share of every global batch (gnnrepro.pipeline.shard), and the
batch ids follow `rank_batch_id`: `epoch * steps + step`, the global step's on every rank.
"""
from __future__ import annotations

from typing import Protocol

import numpy as np
import torch

from gnnrepro.checks import check_bool, check_int
from gnnrepro.pipeline.shard import ShardPlan

__all__ = ["BatchPlan", "Plan", "epoch_order"]


def epoch_order(num: int, seed: int, epoch: int, shuffle: bool = True) -> torch.Tensor:
    """The order (int64 [num]) in which epoch `epoch` visits the training ids.

    Seeded by (seed, epoch) through numpy's SeedSequence, so nearby seeds and epochs give
    unrelated permutations.
    """
    if not shuffle:
        return torch.arange(num)
    state = np.random.SeedSequence([seed, epoch]).generate_state(1, np.uint64)[0]
    gen = torch.Generator().manual_seed(int(state) & (2**63 - 1))
    return torch.randperm(num, generator=gen)


class Plan(Protocol):
    """What the Loader needs of a batch plan: len() batches per epoch, the epoch's order of
    the ids, batch b's [start, stop) in it and seeds, its batch id, and the largest batch."""

    batch_size: int
    seed: int
    shuffle: bool
    rank: int
    world_size: int

    def __len__(self) -> int: ...

    @property
    def max_batch_size(self) -> int: ...

    def epoch_ids(self, epoch: int) -> torch.Tensor: ...

    def bounds(self, b: int) -> tuple[int, int]: ...

    def batch_id(self, epoch: int, b: int) -> int: ...

    def seeds(self, order: torch.Tensor, b: int) -> torch.Tensor:
        """Batch b's seeds, taken from the epoch's order."""
        start, stop = self.bounds(b)
        return order[start:stop]


class BatchPlan(Plan):
    """Rank `rank`'s batches of `ids`, epoch by epoch: `epoch_ids(e)` is the epoch's order of
    the ids, `seeds(order, b)` batch b's part of it and `batch_id(e, b)` its sampler batch id."""

    def __init__(self, ids: torch.Tensor | int, batch_size: int, *, seed: int = 0,
                 shuffle: bool = True, world_size: int = 1, rank: int = 0,
                 drop_last: bool = False):
        """`ids`: the training ids, or a count n for the ids 0..n-1 (a link loader's edge
        ids), whose epoch order is then the ids themselves (no gather of one random read an
        id: 1.4 s an epoch at 30M)."""
        if isinstance(ids, bool) or not isinstance(ids, (int, torch.Tensor)):
            raise TypeError(f"ids must be a tensor of ids or a count, got {type(ids).__name__}")
        self.ids = None if isinstance(ids, int) else ids
        self.num_ids = check_int("ids", ids, 0) if isinstance(ids, int) else ids.numel()
        self.seed = check_int("seed", seed, 0)
        self.shuffle = check_bool("shuffle", shuffle)
        self.shard = ShardPlan(self.num_ids, batch_size, world_size, rank, drop_last)
        self.batch_size = self.shard.batch_size

    def __len__(self) -> int:
        return self.shard.steps

    @property
    def rank(self) -> int:
        return self.shard.rank

    @property
    def world_size(self) -> int:
        return self.shard.world_size

    @property
    def max_batch_size(self) -> int:
        """The most seeds a batch holds (what a staging slot is sized for)."""
        return self.shard.max_batch_size

    def epoch_ids(self, epoch: int) -> torch.Tensor:
        """The ids in the order epoch `epoch` visits them (every rank holds the same order)."""
        order = epoch_order(self.num_ids, self.seed, epoch, self.shuffle)
        return order if self.ids is None else self.ids[order]

    def bounds(self, b: int) -> tuple[int, int]:
        """[start, stop) of batch b within the epoch's order."""
        return self.shard.bounds(b)

    def batch_id(self, epoch: int, b: int) -> int:
        """The sampler's batch id of batch b of `epoch`."""
        return self.shard.batch_id(epoch, b)
