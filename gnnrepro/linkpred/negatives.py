"""Negative destinations for link prediction, k per positive edge (DGL's
`dgl.dataloading.negative_sampler.Uniform(k)` and `GlobalUniform`, PyG's negative_sampling).

"uniform" draws k destinations uniformly over the destination type's nodes for each positive
(src, dst): a negative may happen to be a true edge, as in DGL's Uniform and OGB's evaluation
negatives. "global" never draws a true edge: a draw that is one is drawn again (up to
MAX_REDRAWS times, then an error naming the source: a source linked to nearly every node has no
negatives to give). Draws are a function of (seed, batch_id) only.
"""
from __future__ import annotations

import torch

from gnnrepro.graph import CSCGraph
from gnnrepro.sampling.args import stream_seed

__all__ = ["NEGATIVE_MODES", "EdgeSet", "draw_negatives"]

NEGATIVE_MODES = ("uniform", "global")
MAX_REDRAWS = 32


class EdgeSet:
    """Membership of (src, dst) pairs in a CSC graph's edges: keys dst * num_src + src, sorted
    (8 bytes an edge), answered by binary search."""

    def __init__(self, graph: CSCGraph):
        self.num_src = graph.num_src_nodes
        dst = torch.repeat_interleave(torch.arange(graph.num_nodes, dtype=torch.int64),
                                      graph.indptr[1:] - graph.indptr[:-1],
                                      output_size=graph.num_edges)
        keys = dst * self.num_src + graph.indices.to(torch.int64)
        drops = keys[1:] < keys[:-1] if keys.numel() > 1 else torch.zeros(0, dtype=torch.bool)
        self.keys = torch.sort(keys).values if bool(drops.any()) else keys

    def contains(self, src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
        """bool, shaped as src/dst: whether src -> dst is an edge."""
        query = dst * self.num_src + src
        if self.keys.numel() == 0:
            return torch.zeros_like(query, dtype=torch.bool)
        at = torch.searchsorted(self.keys, query.reshape(-1)).clamp_(max=self.keys.numel() - 1)
        return (self.keys[at] == query.reshape(-1)).reshape(query.shape)


def draw_negatives(src: torch.Tensor, k: int, num_dst_nodes: int, seed: int, batch_id: int,
                   mode: str = "uniform", edges: EdgeSet | None = None,
                   stream: int = 0) -> torch.Tensor:
    """int64 [len(src), k]: negative destinations for the positives from `src` (mode as in the
    module docstring; "global" needs `edges`); `stream` numbers independent draws of one
    batch (negative sources are drawn as stream 1)."""
    gen = torch.Generator().manual_seed(stream_seed(stream_seed(seed, batch_id), stream))
    out = torch.randint(0, num_dst_nodes, (src.numel(), k), generator=gen)
    if mode == "uniform":
        return out
    sources = src.reshape(-1, 1).expand(-1, k)
    for _ in range(MAX_REDRAWS):
        true_edge = edges.contains(sources, out)
        if not bool(true_edge.any()):
            return out
        out[true_edge] = torch.randint(0, num_dst_nodes, (int(true_edge.sum()),), generator=gen)
    first = int(sources[edges.contains(sources, out)][0])
    raise ValueError(f"negatives: source {first} kept drawing true edges ({MAX_REDRAWS} redraws): "
                     "it links to nearly every node, so 'global' negatives cannot avoid them")
