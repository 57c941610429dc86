"""PartitionedSampler: the fused sampler's blocks, sampled by the machines that own the nodes.

Per layer, outward from the seeds, a machine sends each destination node to its owner - one
all-to-all per layer, carrying every machine's requests at once - and the owner samples them
with the fused op on its part. The op keys each destination's random numbers by (seed,
batch_id, layer, global node id), and the owner's graph (PartData.global_graph) keeps global
ids and each node's neighbours in the dataset's order, so the owner draws exactly the
neighbours one machine would. To sample layer l with that key, the owner runs the op with
fanouts [1] * l + [fanouts[l]] and keeps its last block (the layers below are a small
overhead; layer 0, the widest, has none). The answers come back in request order; the
requester puts them in destination order and relabels like the op does (destinations first,
then new sources in first-occurrence order), so the blocks are the single machine's
`FusedSampler` blocks, bit for bit.
"""
from __future__ import annotations

from collections.abc import Sequence

import torch

from gnnrepro.distributed.partitioned.exchange import Exchange
from gnnrepro.partition.manifest import PartData
from gnnrepro.sampling import FusedSampler
from gnnrepro.sampling.args import check_fanouts, check_seed
from gnnrepro.sampling.block import Block, MiniBatch

__all__ = ["PartitionedSampler", "relabel"]

_EMPTY = torch.empty(0, dtype=torch.int64)


def relabel(dst: torch.Tensor, neighbours: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The fused op's relabel rule: (source nodes, local neighbour ids), where the sources are
    `dst` (unique) followed by the new nodes of `neighbours` in first-occurrence order."""
    nodes = torch.cat([dst, neighbours])
    unique, inverse = torch.unique(nodes, return_inverse=True)
    first = torch.full((unique.numel(),), nodes.numel(), dtype=torch.int64)
    first.scatter_reduce_(0, inverse, torch.arange(nodes.numel()), "amin")
    order = torch.argsort(first)
    local = torch.empty_like(order)
    local[order] = torch.arange(order.numel())
    return unique[order], local[inverse[dst.numel():]]


class PartitionedSampler:
    """One machine's share of partitioned sampling (see the module doc).

    `part` is this machine's part and `node_part` the owner of every node; `rank_of_part[p]` is
    the rank this rank sends part p's requests to (the rank of the same local rank on machine
    p). Every rank must call `sample` the same number of times (ranks answer one another's
    requests inside it). `stats` counts the edges sampled and those of remote destinations.
    """

    name = "partitioned"

    def __init__(self, part: PartData, node_part: torch.Tensor, fanouts: Sequence[int],
                 exchange: Exchange, rank_of_part: Sequence[int], *, replace: bool = False,
                 seed: int = 0):
        self.fanouts = check_fanouts(fanouts)
        self.seed = check_seed(seed)
        if len(rank_of_part) != int(node_part.max()) + 1 or part.part >= len(rank_of_part):
            raise ValueError(f"rank_of_part must name a rank for each of the "
                             f"{int(node_part.max()) + 1} parts, got {list(rank_of_part)}")
        if any(not 0 <= r < exchange.world_size for r in rank_of_part):
            raise ValueError(f"rank_of_part holds ranks outside [0, {exchange.world_size}): "
                             f"{list(rank_of_part)}")
        self.part = part.part
        self.node_part = node_part
        self.exchange = exchange
        self.rank_of_part = list(rank_of_part)
        self.device = torch.device("cpu")
        graph = part.global_graph(node_part.numel())
        self._servers = [FusedSampler(graph, [1] * layer + [f], replace=replace, seed=seed)
                         for layer, f in enumerate(self.fanouts)]
        self.stats = {"edges": 0, "remote_edges": 0}

    def sample(self, seeds: torch.Tensor, batch_id: int = 0) -> MiniBatch:
        """The blocks of the mini-batch rooted at `seeds` (unique global ids), input first."""
        batch_id = check_seed(batch_id, "batch_id")
        seeds = seeds.to(torch.int64).contiguous()
        blocks: list[Block] = []
        dst = seeds
        for layer in range(len(self.fanouts) - 1, -1, -1):
            block = self._layer(dst, batch_id, layer)
            blocks.append(block)
            dst = block.src_nodes
        blocks.reverse()
        return MiniBatch(seeds, blocks[0].src_nodes, blocks, batch_id=batch_id)

    def _layer(self, dst: torch.Tensor, batch_id: int, layer: int) -> Block:
        """One layer: requests to the owners, their answers, merged and relabelled."""
        owner = self.node_part[dst].to(torch.int64)
        order = torch.argsort(owner, stable=True)
        chunks = dst[order].split(torch.bincount(owner, minlength=len(self.rank_of_part))
                                  .tolist())
        sends = [_EMPTY] * self.exchange.world_size
        header = torch.tensor([batch_id, layer], dtype=torch.int64)
        for p, chunk in enumerate(chunks):
            if chunk.numel():
                sends[self.rank_of_part[p]] = torch.cat([header, chunk])
        requests = self.exchange.all_to_all(sends, "sampling")
        replies = self.exchange.all_to_all([self._serve(r, layer) for r in requests],
                                           "sampling")
        counts_sorted, picked_sorted = [], []
        for p, chunk in enumerate(chunks):
            if chunk.numel():
                reply = replies[self.rank_of_part[p]]
                counts_sorted.append(reply[: chunk.numel()])
                picked_sorted.append(reply[chunk.numel():])
                if p != self.part:
                    self.stats["remote_edges"] += picked_sorted[-1].numel()
        counts_in_order = torch.cat(counts_sorted)
        counts = torch.empty_like(counts_in_order)
        counts[order] = counts_in_order
        starts = torch.empty_like(counts_in_order)
        starts[order] = torch.cumsum(counts_in_order, 0) - counts_in_order
        indptr = torch.zeros(dst.numel() + 1, dtype=torch.int64)
        torch.cumsum(counts, 0, out=indptr[1:])
        num_edges = int(indptr[-1])
        gather = (torch.repeat_interleave(starts - indptr[:-1], counts, output_size=num_edges)
                  + torch.arange(num_edges))
        neighbours = torch.cat(picked_sorted)[gather]
        self.stats["edges"] += num_edges
        src_nodes, indices = relabel(dst, neighbours)
        return Block(indptr, indices, src_nodes, dst.numel())

    def _serve(self, request: torch.Tensor, layer: int) -> torch.Tensor:
        """Answer one rank's request for `layer`: [batch_id, layer, nodes...] ->
        [count per node..., picked neighbours in node order...]."""
        if request.numel() == 0:
            return _EMPTY
        batch_id, asked_layer = int(request[0]), int(request[1])
        nodes = request[2:]
        if asked_layer != layer:
            raise RuntimeError(f"ranks are out of step: a request for layer {asked_layer} "
                               f"arrived while sampling layer {layer}")
        if bool((self.node_part[nodes] != self.part).any()):
            raise RuntimeError(f"part {self.part} was asked for nodes it does not own")
        block = self._servers[layer].sample(nodes, batch_id).blocks[-1]
        return torch.cat([block.in_degrees(), block.src_nodes[block.indices]])
