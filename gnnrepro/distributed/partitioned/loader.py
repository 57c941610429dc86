"""A partitioned rank's batches: its share of the seeds (`PartitionedPlan`), sampled by the
PartitionedSampler and gathered from PartitionedFeatures by the same Loader every pipeline uses
(`partitioned_loader`).

One worker thread of the Loader prepares the batches, in order, ahead of training, so the
exchanges of batch i+1 overlap the compute of batch i. It talks over its own process group
(the Exchange's), not the one DDP all-reduces on, so the two never interleave. Every rank
takes the same number of steps, so every rank's thread makes the same exchanges in the same
order.
"""
from __future__ import annotations

import math

import torch

from gnnrepro.checks import check_bool, check_int
from gnnrepro.distributed.partitioned.features import PartitionedFeatures
from gnnrepro.distributed.partitioned.sampler import PartitionedSampler
from gnnrepro.pipeline.loader import Loader
from gnnrepro.pipeline.plan import Plan, epoch_order
from gnnrepro.pipeline.shard import rank_batch_id
from gnnrepro.sampling.args import stream_seed

__all__ = ["PartitionedPlan", "partitioned_loader", "rank_share"]


def rank_share(ids: torch.Tensor, node_part: torch.Tensor, world_size: int,
               rank: int) -> torch.Tensor:
    """Rank `rank`'s share of `ids`: the ids ordered by owning part (then id) and cut into
    `world_size` contiguous near-equal pieces, so a machine's ranks mostly get the seeds its
    part owns (METIS balanced the training ids between the parts) and every id is in exactly
    one share."""
    check_int("world_size", world_size, 1)
    if not 0 <= rank < world_size:
        raise ValueError(f"rank must be in [0, {world_size}), got {rank}")
    if ids.numel() < world_size:
        raise ValueError(f"{ids.numel()} ids cannot be shared by {world_size} ranks")
    key = node_part[ids].to(torch.int64) * (int(node_part.numel()) + 1) + ids
    ordered = ids[torch.argsort(key)]
    return torch.tensor_split(ordered, world_size)[rank]


class PartitionedPlan(Plan):
    """The batch plan (gnnrepro.pipeline.plan.Plan) of a partitioned rank: batches of
    `batch_size` of its `rank_share` of `ids`, each epoch reshuffled with (seed, rank, epoch)
    unless shuffle=False. All ranks take steps = ceil(floor(len(ids) / world_size) /
    batch_size) batches (a single machine's count when world_size is 1); the last one takes
    the rest of the share (at most batch_size + 1 ids), so every id is used once per epoch.
    Batch ids follow gnnrepro.pipeline.shard.rank_batch_id, as in every other plan."""

    def __init__(self, ids: torch.Tensor, node_part: torch.Tensor, batch_size: int, *,
                 rank: int, world_size: int, seed: int = 0, shuffle: bool = True):
        self.batch_size = check_int("batch_size", batch_size, 1)
        self.seed = check_int("seed", seed, 0)
        self.shuffle = check_bool("shuffle", shuffle)
        self.share = rank_share(ids, node_part, world_size, rank)
        self.rank, self.world_size = rank, world_size
        self.steps = max(1, math.ceil((ids.numel() // world_size) / batch_size))

    def __len__(self) -> int:
        return self.steps

    @property
    def max_batch_size(self) -> int:
        """The most seeds a batch holds: the last one takes the rest of the share."""
        return max(self.batch_size, self.share.numel() - (self.steps - 1) * self.batch_size)

    def epoch_ids(self, epoch: int) -> torch.Tensor:
        """This rank's share in the order epoch `epoch` visits it."""
        return self.share[epoch_order(self.share.numel(), stream_seed(self.seed, self.rank),
                                      epoch, self.shuffle)]

    def bounds(self, b: int) -> tuple[int, int]:
        """[start, stop) of batch b within the epoch's order."""
        stop = self.share.numel() if b == self.steps - 1 else (b + 1) * self.batch_size
        return b * self.batch_size, stop

    def batch_id(self, epoch: int, b: int) -> int:
        return rank_batch_id(epoch, b, self.steps)


def partitioned_loader(sampler: PartitionedSampler, features: PartitionedFeatures,
                       labels: torch.Tensor, ids: torch.Tensor, batch_size: int, *, rank: int,
                       world_size: int, seed: int = 0, prefetch: int = 2,
                       shuffle: bool = True, timeout_s: float = 600.0) -> Loader:
    """The Loader of a partitioned rank's batches of `ids` (see the module doc): one worker
    thread, with this process's intra-op threads, holding up to `prefetch` finished batches
    while it makes the next (prefetch + 1 in flight): the exchanges wait on the other ranks,
    so the thread needs that much room to keep ahead of training."""
    plan = PartitionedPlan(ids, sampler.node_part, batch_size, rank=rank,
                           world_size=world_size, seed=seed, shuffle=shuffle)
    return Loader(None, sampler, "cpu", batch_size, workers=1, worker_kind="thread",
                  worker_threads=torch.get_num_threads(), prefetch=prefetch + 1,
                  timeout_s=timeout_s, plan=plan, labels=labels, feature_store=features)
