"""PartitionedLoader: the BatchSource of a partitioned rank - its share of the seeds, blocks
from the PartitionedSampler, rows from PartitionedFeatures - prepared `prefetch` batches ahead
by a thread, so the exchanges of batch i+1 overlap the compute of batch i.

The thread talks over its own process group (the Exchange's), not the one DDP all-reduces
on, so the two never interleave. Every rank takes the same number of steps, so every rank's
thread makes the same exchanges in the same order.
"""
from __future__ import annotations

import math
import queue
import threading
import time
from collections.abc import Iterator

import torch

from gnnrepro.checks import check_int
from gnnrepro.distributed.partitioned.features import PartitionedFeatures
from gnnrepro.distributed.partitioned.sampler import PartitionedSampler
from gnnrepro.pipeline.loader import epoch_order
from gnnrepro.pipeline.shard import rank_batch_id
from gnnrepro.pipeline.spans import Span
from gnnrepro.sampling.args import stream_seed
from gnnrepro.sampling.block import MiniBatch

__all__ = ["PartitionedLoader", "rank_share"]

_DONE = object()


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


class PartitionedLoader:
    """Batches of `batch_size` of this rank's share of `ids` (each epoch reshuffled with
    (seed, rank, epoch) unless shuffle=False). All ranks take steps = ceil(floor(len(ids) /
    world_size) / batch_size) batches (a single machine's count when world_size is 1); the
    last one takes the rest of the share (at most batch_size + 1 ids), so every id is used
    once per epoch. Batch ids are (epoch * steps + step) * world_size +
    rank, as in gnnrepro.pipeline.shard."""

    in_process = False

    def __init__(self, sampler: PartitionedSampler, features: PartitionedFeatures,
                 labels: torch.Tensor, ids: torch.Tensor, batch_size: int, *, rank: int,
                 world_size: int, seed: int = 0, prefetch: int = 1, shuffle: bool = True):
        self.batch_size = check_int("batch_size", batch_size, 1)
        self.prefetch = check_int("prefetch", prefetch, 1)
        self.sampler, self.features, self.labels = sampler, features, labels
        self.share = rank_share(ids, sampler.node_part, world_size, rank)
        self.rank, self.world_size, self.seed, self.shuffle = rank, world_size, seed, shuffle
        self.steps = max(1, math.ceil((ids.numel() // world_size) / batch_size))
        self.device = torch.device("cpu")
        self._epoch = 0
        self._work = {"sample": 0.0, "extract": 0.0}

    def __len__(self) -> int:
        return self.steps

    def work_seconds(self) -> dict[str, float]:
        return dict(self._work)

    def spans(self) -> list[Span]:
        return []

    def close(self) -> None:
        """Nothing to release: an epoch's thread ends with its last batch."""

    def batches(self, epoch: int) -> Iterator[tuple[int, torch.Tensor]]:
        """(batch id, seeds) of this rank's batches of `epoch`."""
        order = (epoch_order(self.share.numel(), stream_seed(self.seed, self.rank), epoch)
                 if self.shuffle else torch.arange(self.share.numel()))
        for step in range(self.steps):
            stop = None if step == self.steps - 1 else (step + 1) * self.batch_size
            seeds = self.share[order[step * self.batch_size: stop]]
            yield rank_batch_id(epoch, step, self.steps, self.world_size, self.rank), seeds

    def __iter__(self) -> Iterator[MiniBatch]:
        epoch, self._epoch = self._epoch, self._epoch + 1
        self._work = {"sample": 0.0, "extract": 0.0}
        ready: queue.Queue = queue.Queue(self.prefetch)
        thread = threading.Thread(target=self._produce, args=(epoch, ready), daemon=True,
                                  name=f"partitioned-loader-{epoch}")
        thread.start()
        while (item := ready.get()) is not _DONE:
            if isinstance(item, BaseException):
                raise RuntimeError(f"partitioned loading failed: {item}") from item
            yield item
        thread.join()

    def _produce(self, epoch: int, ready: queue.Queue) -> None:
        try:
            for batch_id, seeds in self.batches(epoch):
                start = time.perf_counter()
                mb = self.sampler.sample(seeds, batch_id)
                middle = time.perf_counter()
                mb.x = self.features.rows(mb.input_nodes)
                mb.y = self.labels[seeds]
                self._work["sample"] += middle - start
                self._work["extract"] += time.perf_counter() - middle
                ready.put(mb)
            ready.put(_DONE)
        except BaseException as exc:  # handed to the consumer, which raises it
            ready.put(exc)

    def __repr__(self) -> str:
        return (f"PartitionedLoader(part={self.sampler.part}, rank={self.rank}, "
                f"world_size={self.world_size}, batch_size={self.batch_size}, "
                f"steps={self.steps}, prefetch={self.prefetch})")
