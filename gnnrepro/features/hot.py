"""Which nodes' rows to keep in memory (GIDS's hot-node buffer): by in-degree or reverse PageRank.

A sampled mini-batch reaches node u about as often as u is an in-neighbour of nodes it
already holds, so rows of high in-degree nodes are read most. Reverse PageRank refines that:
the probability of reaching u by walks that start at the training nodes and step from a node to
a uniformly chosen in-neighbour (what neighbour sampling does), over as many steps as layers.
"""
from __future__ import annotations

import torch

from gnnrepro.graph import CSCGraph

__all__ = ["HOT_POLICIES", "hot_nodes", "reverse_pagerank"]

HOT_POLICIES = ("degree", "pagerank")


def reverse_pagerank(graph: CSCGraph, seeds: torch.Tensor, steps: int = 3,
                     damping: float = 0.85) -> torch.Tensor:
    """float64 [num_nodes]: visit mass of `steps`-step walks from `seeds` to in-neighbours."""
    n = graph.num_nodes
    deg = (graph.indptr[1:] - graph.indptr[:-1]).to(torch.float64)
    src = graph.indices.long()
    start = torch.zeros(n, dtype=torch.float64)
    start[seeds.long()] = 1.0 / max(seeds.numel(), 1)
    x, score = start.clone(), start.clone()
    for _ in range(steps):
        share = torch.where(deg > 0, x / deg.clamp(min=1), torch.zeros_like(x))
        x = damping * torch.zeros(n, dtype=torch.float64).index_add_(
            0, src, share.repeat_interleave(graph.indptr[1:] - graph.indptr[:-1]))
        score += x
    return score


def hot_nodes(graph: CSCGraph, budget_rows: int, policy: str = "degree",
              seeds: torch.Tensor | None = None) -> torch.Tensor:
    """The (at most) `budget_rows` nodes to keep in memory, hottest first (int64)."""
    if policy not in HOT_POLICIES:
        raise ValueError(f"hot_policy must be one of {', '.join(HOT_POLICIES)}, got {policy!r}")
    k = max(0, min(int(budget_rows), graph.num_nodes))
    if k == 0:
        return torch.empty(0, dtype=torch.int64)
    if policy == "degree":
        score = (graph.indptr[1:] - graph.indptr[:-1]).to(torch.float64)
    else:
        if seeds is None:
            raise ValueError("hot_policy='pagerank' needs the training seeds")
        score = reverse_pagerank(graph, seeds)
    return torch.topk(score, k, sorted=True).indices
