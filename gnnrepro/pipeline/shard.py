"""How one epoch's shuffled training ids are split between data-parallel ranks and into batches.

Every rank shuffles the ids with the same (seed, epoch) (see `plan.epoch_order`), so all ranks
hold the same permutation without communicating. Step s of the epoch takes the next
`world_size * batch_size` ids of the permutation - one global batch - and rank r trains on the
r-th of `world_size` nearly equal contiguous parts of it (sizes differ by at most one). So:

* every id is trained exactly once per epoch across ranks (nothing is padded or dropped unless
  drop_last asks for it);
* every rank does the same number of steps, so no rank waits in an all-reduce for a step
  another rank never takes;
* with one rank, batches are exactly the single-process ones: batch_size ids each, the last
  one smaller.

The last global batch can hold fewer ids than there are ranks (1 <= rest < world_size); some
ranks would then get an empty batch. Instead those ids join the step before, whose parts then
hold batch_size or batch_size + 1 ids (`max_batch_size`). With drop_last, only full global
batches are trained.

Batch ids (the sampler's random stream) are the global step's, `epoch * steps + step`, the same
on every rank: the sampler's random numbers are keyed by (seed, batch id, layer, node), so a
node sampled by two ranks of a step gets the same neighbours, and the ranks' batches of a step
together are exactly the one batch a single process draws for the global batch (what makes k
ranks train as one rank with the global batch: gnnrepro.distributed.equivalence).
"""
from __future__ import annotations

import math

from gnnrepro.checks import check_bool, check_int

__all__ = ["ShardPlan", "rank_batch_id"]


def rank_batch_id(epoch: int, step: int, steps: int) -> int:
    """The sampler's batch id of every rank's batch `step` of `epoch` (of `steps` per epoch):
    the global step's, unique across steps and epochs. Every loader that shards batches
    between ranks (this plan, the partitioned loader) numbers them so."""
    return epoch * steps + step


class ShardPlan:
    """Rank `rank`'s batches of an epoch over `num_ids` permuted ids (see the module doc)."""

    def __init__(self, num_ids: int, batch_size: int, world_size: int = 1, rank: int = 0,
                 drop_last: bool = False):
        self.num_ids = check_int("num_ids", num_ids, 0)
        self.batch_size = check_int("batch_size", batch_size, 1)
        self.world_size = check_int("world_size", world_size, 1)
        self.rank = check_int("rank", rank, 0)
        self.drop_last = check_bool("drop_last", drop_last)
        if rank >= world_size:
            raise ValueError(f"rank must be < world_size={world_size}, got {rank}")
        if world_size > 1 and 0 < num_ids < world_size:
            raise ValueError(f"{num_ids} training ids cannot be split between {world_size} "
                             f"ranks: every rank needs at least one")
        step = world_size * batch_size
        if drop_last:
            self.steps = num_ids // step
            self._used = self.steps * step
        else:
            self.steps = math.ceil(num_ids / step)
            if self.steps > 1 and 0 < num_ids - (self.steps - 1) * step < world_size:
                self.steps -= 1  # a last global batch too small to split joins the one before
            self._used = num_ids

    def _step_range(self, step: int) -> tuple[int, int]:
        """[begin, end) of global batch `step` within the permutation."""
        begin = step * self.world_size * self.batch_size
        last = step == self.steps - 1
        return begin, (self._used if last else begin + self.world_size * self.batch_size)

    def bounds(self, step: int) -> tuple[int, int]:
        """[start, stop) of this rank's batch at `step` within the epoch's permutation."""
        begin, end = self._step_range(step)
        size, extra = divmod(end - begin, self.world_size)
        start = begin + self.rank * size + min(self.rank, extra)
        return start, start + size + (self.rank < extra)

    def batch_id(self, epoch: int, step: int) -> int:
        """The sampler's batch id for this rank's batch `step` of `epoch` (the global step's)."""
        return rank_batch_id(epoch, step, self.steps)

    @property
    def max_batch_size(self) -> int:
        """The most ids any rank's batch holds: batch_size, or one more when the last global
        batch was merged into the one before."""
        if self.steps == 0:
            return self.batch_size
        begin, end = self._step_range(self.steps - 1)
        return max(self.batch_size, -(-(end - begin) // self.world_size))
