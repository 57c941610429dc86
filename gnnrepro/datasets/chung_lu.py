"""Chung-Lu graphs with class structure: the edge model the synthetic datasets share.

Each candidate pair picks "same class c" with probability homophily * W_c / W or "any class"
otherwise (W_c: the class's weight mass), then draws both endpoints independently,
proportional to weight, within that group. Expected degree stays proportional to weight, and
most edges join same-class nodes. Self loops and repeated pairs are dropped and more
candidates drawn until exactly the target number of undirected pairs remains (the last
round's excess is dropped uniformly at random).
"""
from __future__ import annotations

import math

import numpy as np

from gnnrepro.datasets.dataset import symmetric_csc
from gnnrepro.graph import CSCGraph

__all__ = ["chung_lu_graph", "sample_pairs"]

_MAX_ROUNDS = 50


def chung_lu_graph(rng: np.random.Generator, classes: np.ndarray, weights: np.ndarray,
                   num_pairs: int, num_classes: int, homophily: float) -> CSCGraph:
    """The undirected graph (both directions stored) of sample_pairs' `num_pairs` pairs."""
    n = classes.size
    keys = sample_pairs(rng, classes, weights, num_pairs, num_classes, homophily)
    lo_end = (keys // n).astype(np.int32)
    np.remainder(keys, n, out=keys)
    hi_end = keys.astype(np.int32)
    del keys
    return symmetric_csc(lo_end, hi_end, n)


def sample_pairs(rng: np.random.Generator, classes: np.ndarray, weights: np.ndarray,
                 num_pairs: int, num_classes: int, homophily: float) -> np.ndarray:
    """Exactly `num_pairs` distinct non-loop pairs as sorted keys `min * N + max`: a share
    `homophily` of candidates inside one class (`classes` in [0, num_classes)), the rest
    between any nodes, endpoints drawn proportional to `weights`."""
    n = classes.size
    order = np.argsort(classes, kind="stable").astype(np.int32)  # nodes grouped by class
    ends = np.cumsum(np.bincount(classes, minlength=num_classes))
    groups = [*zip([0, *ends[:-1].tolist()], ends.tolist()), (0, n)]  # classes, then "any"
    mass = np.bincount(classes, weights=weights, minlength=num_classes)
    group_p = np.append(homophily * mass / mass.sum(), 1.0 - homophily)
    sorted_weights = weights[order]

    keys = np.empty(0, dtype=np.int64)
    expected_yield = 0.98  # share of candidates that turn out new; re-measured every round
    for _ in range(_MAX_ROUNDS):
        deficit = num_pairs - keys.size
        if deficit == 0:
            return keys
        drawn = math.ceil(deficit / expected_yield * 1.02) + 64
        new = _candidate_keys(rng, drawn, order, groups, group_p, sorted_weights)
        if keys.size:
            pos = np.minimum(np.searchsorted(keys, new), keys.size - 1)
            new = new[keys[pos] != new]
        expected_yield = max(new.size / drawn, 0.05)
        if new.size > deficit:
            new = np.delete(new, rng.choice(new.size, new.size - deficit, replace=False))
        keys = np.sort(np.concatenate((keys, new)))
    raise RuntimeError(f"could not place {num_pairs} distinct pairs in {_MAX_ROUNDS} rounds")


def _candidate_keys(rng: np.random.Generator, count: int, order: np.ndarray,
                    groups: list[tuple[int, int]], group_p: np.ndarray,
                    sorted_weights: np.ndarray) -> np.ndarray:
    """`count` Chung-Lu candidate pairs as sorted distinct keys `min * N + max`, loops dropped.

    Per group, both endpoint lists are multinomial draws expanded with np.repeat (O(group) work,
    no per-edge binary search); shuffling one of them pairs the endpoints at random.
    """
    u = np.empty(count, dtype=np.int32)
    v = np.empty(count, dtype=np.int32)
    start = 0
    for (lo, hi), size in zip(groups, rng.multinomial(count, group_p).tolist()):
        if size == 0:
            continue
        p = sorted_weights[lo:hi] / sorted_weights[lo:hi].sum()
        positions = np.arange(lo, hi, dtype=np.int32)
        u[start:start + size] = np.repeat(positions, rng.multinomial(size, p))
        v[start:start + size] = np.repeat(positions, rng.multinomial(size, p))
        rng.shuffle(v[start:start + size])
        start += size
    u, v = order[u], order[v]
    keys = np.minimum(u, v).astype(np.int64)
    keys *= order.size
    keys += np.maximum(u, v)
    keys[u == v] = -1  # self loops sort to the front and are cut off there
    del u, v
    keys.sort()
    keys = keys[np.searchsorted(keys, 0):]
    if keys.size > 1:
        keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))]
    return keys
