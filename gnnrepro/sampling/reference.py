"""ReferenceSampler: the unfused two-step sampler in plain torch.

Step 1 samples every layer to a global-id COO frontier (src, dst); step 2 relabels it with
torch.unique. It is the correctness oracle for the fused op (same block layout: destinations
first, new sources in first-occurrence order) and the unfused ablation in benchmarks.
"""
from __future__ import annotations

from collections.abc import Sequence

import torch

from gnnrepro.checks import check_bool
from gnnrepro.graph import CSCGraph
from gnnrepro.sampling.args import (check_fanouts, check_graph, check_seed, check_seeds,
                                    stream_seed)
from gnnrepro.sampling.block import Block, MiniBatch

__all__ = ["ReferenceSampler"]

# Above this fanout, sampling without replacement switches from rank walks to random keys.
_MAX_WALK_FANOUT = 24


class ReferenceSampler:
    """Pure-torch uniform neighbour sampler with the FusedSampler API."""

    name = "reference"

    def __init__(self, graph: CSCGraph, fanouts: Sequence[int], replace: bool = False,
                 seed: int = 0):
        self.graph = check_graph(graph)
        self.fanouts = check_fanouts(fanouts)
        self.replace = check_bool("replace", replace)
        self.seed = check_seed(seed)

    def sample(self, seeds: torch.Tensor, batch_id: int = 0) -> MiniBatch:
        """Sample the blocks of one mini-batch rooted at `seeds` (unique node ids)."""
        seeds = check_seeds(seeds, self.graph)
        batch_id = check_seed(batch_id, "batch_id")
        gen = torch.Generator(device=self.graph.device)
        gen.manual_seed(stream_seed(self.seed, batch_id))
        blocks: list[Block] = []
        dst = seeds
        for fanout in reversed(self.fanouts):
            src, counts = self._sample_layer(dst, fanout, gen)
            block = _to_block(dst, src, counts)
            blocks.append(block)
            dst = block.src_nodes
        blocks.reverse()
        return MiniBatch(seeds, blocks[0].src_nodes, blocks, batch_id=batch_id)

    def _sample_layer(self, dst: torch.Tensor, fanout: int,
                      gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """Global ids of the picked neighbours in destination order, and picks per destination."""
        indptr, indices = self.graph.indptr, self.graph.indices
        dev = dst.device
        start = indptr[dst]
        degree = indptr[dst + 1] - start
        if fanout == -1:
            counts = degree
        elif self.replace:
            counts = torch.where(degree > 0, fanout, 0)
        else:
            counts = degree.clamp(max=fanout)
        total = int(counts.sum())
        seg = torch.repeat_interleave(torch.arange(dst.numel(), device=dev), counts,
                                      output_size=total)
        seg_start = torch.cumsum(counts, 0) - counts
        rank = torch.arange(total, device=dev) - seg_start[seg]
        if fanout == -1:
            offset = rank
        elif self.replace:
            u = torch.rand(total, generator=gen, device=dev, dtype=torch.float64)
            offset = (u * degree[seg]).long().clamp(max=degree[seg] - 1)
        else:
            offset = torch.where(degree[seg] <= fanout, rank, 0)
            sampled = torch.nonzero(degree > fanout).flatten()
            picks = _distinct_offsets(degree[sampled], fanout, gen)
            where = seg_start[sampled].unsqueeze(1) + torch.arange(fanout, device=dev)
            offset[where.flatten()] = picks.flatten()
        src = indices[start[seg] + offset].to(torch.int64)
        return src, counts


def _distinct_offsets(degree: torch.Tensor, k: int, gen: torch.Generator) -> torch.Tensor:
    """For each row, k distinct offsets drawn uniformly from [0, degree) (all degrees > k).

    Small k: draw j picks the t-th of the degree - j offsets not yet chosen, and a walk over the
    sorted picks turns that rank into an offset (O(k^2) torch ops over all rows). Large k: the k
    smallest of one random key per neighbour (O(sum of degrees)).
    """
    rows, dev = degree.numel(), degree.device
    if rows == 0:
        return torch.empty(0, k, dtype=torch.int64, device=dev)
    if k > _MAX_WALK_FANOUT:
        row = torch.repeat_interleave(torch.arange(rows, device=dev), degree)
        # float64 keys: float32's 24-bit keys tie on hub rows, and ties would be broken by
        # the sort rather than the generator.
        keys = torch.rand(row.numel(), generator=gen, device=dev, dtype=torch.float64)
        order = torch.argsort(keys)
        order = order[torch.argsort(row[order], stable=True)]  # by row, random within a row
        row_start = torch.cumsum(degree, 0) - degree
        firsts = row_start.unsqueeze(1) + torch.arange(k, device=dev)
        return order[firsts] - row_start.unsqueeze(1)
    chosen = torch.full((rows, k), torch.iinfo(torch.int64).max, dtype=torch.int64, device=dev)
    for j in range(k):
        u = torch.rand(rows, generator=gen, device=dev, dtype=torch.float64)
        t = (u * (degree - j)).long().clamp(max=degree - j - 1)
        for i in range(j):  # chosen[:, :j] is sorted, so one ascending pass suffices
            t += (chosen[:, i] <= t).long()
        chosen[:, j] = t
        chosen = torch.sort(chosen, dim=1).values
    return chosen


def _to_block(dst: torch.Tensor, src: torch.Tensor, counts: torch.Tensor) -> Block:
    """Relabel a global-id frontier: destinations first, then new sources by first occurrence."""
    num_dst = dst.numel()
    candidates = torch.cat([dst, src])
    uniq, inverse = torch.unique(candidates, return_inverse=True)
    first = torch.full((uniq.numel(),), candidates.numel(), dtype=torch.int64, device=dst.device)
    first.scatter_reduce_(0, inverse, torch.arange(candidates.numel(), device=dst.device), "amin")
    order = torch.argsort(first)
    local = torch.empty_like(order)
    local[order] = torch.arange(order.numel(), device=dst.device)
    indptr = torch.zeros(num_dst + 1, dtype=torch.int64, device=dst.device)
    torch.cumsum(counts, 0, out=indptr[1:])
    return Block(indptr, local[inverse[num_dst:]], uniq[order], num_dst)
