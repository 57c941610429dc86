"""The held-out edges of a link-prediction dataset and their fixed negatives, as OGB's
ogbl-citation2 splits (shared by citation-sim and the typed link datasets).

Why: held-out edges must be queries a model can answer from the rest of the graph, so each
query's source keeps at least one training edge: distinct sources among those with out-degree
>= 2, chosen uniformly, each give one uniformly chosen out-edge to val and another to test.
Each query's true destination is ranked against K uniform destinations (OGB's evaluation
negatives: one may rarely be a true edge of the query's source, or the source itself).
"""
from __future__ import annotations

import numpy as np

__all__ = ["fixed_negatives", "hold_out_edges"]


def hold_out_edges(rng: np.random.Generator, src: np.ndarray, num_src: int, num_queries: int,
                   name: str) -> tuple[np.ndarray, np.ndarray]:
    """(val, test) edge positions in `src` (int64 source ids of every edge, in [0, num_src)):
    `num_queries` distinct sources (ascending) with out-degree >= 2, each giving one uniformly
    chosen out-edge to val and another to test; RuntimeError naming dataset `name` when fewer
    sources qualify."""
    out_degree = np.bincount(src, minlength=num_src)
    eligible = np.flatnonzero(out_degree >= 2)
    if eligible.size < num_queries:
        raise RuntimeError(f"{name}: only {eligible.size} sources have two edges or more, "
                           f"{num_queries} queries needed")
    sources = np.sort(rng.choice(eligible, size=num_queries, replace=False))
    picked = np.zeros(num_src, dtype=bool)
    picked[sources] = True
    positions = np.flatnonzero(picked[src])  # the sources' out-edges, grouped by source next
    positions = positions[np.argsort(src[positions], kind="stable")]
    degree = out_degree[sources]
    start = np.cumsum(degree) - degree
    first = rng.integers(0, degree)
    second = rng.integers(0, degree - 1)
    second += second >= first  # uniform among the other out-edges
    return positions[start + first], positions[start + second]


def fixed_negatives(rng: np.random.Generator, num_dst: int, num_queries: int,
                    k: int) -> tuple[np.ndarray, np.ndarray]:
    """(val, test) int64 [num_queries, k]: uniform destination ids in [0, num_dst)."""
    val, test = (rng.integers(0, num_dst, size=(num_queries, k), dtype=np.int64)
                 for _ in range(2))
    return val, test
