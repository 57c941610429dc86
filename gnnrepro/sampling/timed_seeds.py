"""Batch items that are (node, time) pairs, for a temporal sampler.

Why: PyG's temporal NeighborLoader takes `input_nodes` with one `input_time` each, and a node
may come several times at different times (a user at each of their purchases, RelBench's
training tables). A node id alone cannot say which time it is sampled at, so a Loader's plan
hands over positions into the pairs (`BatchPlan(len(nodes), batch_size)`), and TimedSeeds
samples item i as node nodes[i] at times[i].
"""
from __future__ import annotations

import copy

import torch

from gnnrepro.checks import check_id_tensor
from gnnrepro.sampling.block import MiniBatch
from gnnrepro.sampling.temporal import check_time_tensor
from gnnrepro.sampling.typed import with_target

__all__ = ["TimedSeeds"]


class TimedSeeds:
    """`sampler` (a temporal FusedSampler) over batch items that are positions into `nodes`
    and `times`: `sample(positions, batch_id)` samples nodes[positions], each at its time (on
    a typed graph nodes of type `target`). The Loader reads the sampler's graph, device,
    fanouts, weights, temporal arguments and target from here, as from the sampler itself."""

    def __init__(self, sampler: object, nodes: torch.Tensor, times: object,
                 target: str | None = None):
        temporal = getattr(sampler, "temporal", None)
        if temporal is None or not temporal.timed:
            raise ValueError("sampler: TimedSeeds samples with a temporal FusedSampler "
                             "(times=...)")
        if sampler.typed:
            if target is None:
                raise ValueError("target: the node type of `nodes` is needed on a typed graph")
            sampler = with_target(sampler, target)
        elif target is not None:
            raise ValueError("target names a node type of a typed graph; this graph is "
                             "homogeneous")
        self.nodes = check_id_tensor(nodes, "nodes", torch.device("cpu")).to(torch.int64)
        self.times = check_time_tensor(times, "times", self.nodes.numel())
        self.sampler, self.target = sampler, target
        self.graph, self.device, self.fanouts = sampler.graph, sampler.device, sampler.fanouts
        self.weights, self.temporal = sampler.weights, temporal

    def sample(self, positions: torch.Tensor, batch_id: int = 0) -> MiniBatch:
        """The blocks of the items at `positions` (int64 ids into nodes and times)."""
        positions = positions.cpu()
        return self.sampler.sample(self.nodes[positions], batch_id,
                                   seed_time=self.times[positions])

    def __copy__(self) -> "TimedSeeds":
        # a worker thread's copy samples with its own copy of the sampler (its own node map)
        return TimedSeeds(copy.copy(self.sampler), self.nodes, self.times, self.target)
