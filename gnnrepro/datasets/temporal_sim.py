"""temporal-sim: products-sim's graph with edge and label times, built to leak the future.

Why: a time-respecting sampler (a seed sampled at its node_time walks only edges with
edge_time <= node_time) must be checked against a graph where ignoring time visibly helps,
i.e. where the future holds label information the past does not.

Model (vectorised numpy on one `np.random.default_rng(seed)` stream, so a (scale, seed) pair gives
the same arrays bit for bit; scale 1.0 has ogbn-products' size):

* classes, node weights and Chung-Lu edges as in products-sim (gnnrepro.datasets.chung_lu), with
  HOMOPHILY chosen so that about half the edges join same-class nodes; every label is the class;
* features = SIGNAL * (unit centroid of the class) + N(0, 1) noise: a weak class signal, so
  neighbours carry most of what a model can learn;
* the leak: homophily grows with time (communities consolidate). With U uniform in [0, 1), a
  same-class edge's time is floor(T * U**(1/TIME_SKEW)) (skewed late) and a cross-class edge's
  floor(T * (1 - U**(1/TIME_SKEW))) (skewed early), T = HORIZON. U is a hash of the unordered
  pair and a seeded salt, so both directions of an edge get the same time without tracking which
  CSC positions pair up, and the pass costs linear time in the edges;
* node_time uniform in [0, T); the splits are temporal: train the nodes asked in the first 70% of
  [0, T), val the next 15%, test the last 15%.

So the earlier a node is asked, the smaller and the less same-class its past neighbourhood (at
scale 0.05 the edges join same-class nodes 50% of the time overall, but a train node's past
edges 34% and a val node's 44%, and a train node keeps 34% of its edges): a model that
aggregates future edges is clearly more accurate than one that respects time, and the latter
still beats features alone. Measured with tests/test_temporal_sim.py's leak proxy (logistic
regression on own + mean neighbour features) at scale 0.05, val accuracy: features alone 0.28,
past neighbours only 0.50, all neighbours 0.84. With TIME_SKEW = 1 (no drift) past-only loses
only 0.11 to all at scale 0.01, to having fewer neighbours; the drift makes it 0.29.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from gnnrepro.datasets import cache
from gnnrepro.datasets.centroid_features import centroid_features
from gnnrepro.datasets.chung_lu import chung_lu_graph
from gnnrepro.datasets.products_sim import (FULL_NODES, FULL_PAIRS, MIN_NODES, NUM_CLASSES,
                                            NUM_FEATURES, PARETO_SHAPE, WEIGHT_FLOOR)
from gnnrepro.datasets.scaled import check_scale_and_seed
from gnnrepro.datasets.temporal_dataset import TemporalDataset, read_temporal_entry
from gnnrepro.graph import CSCGraph
from gnnrepro.progress import Progress, announce

__all__ = ["HORIZON", "NAME", "generate", "load_temporal_sim"]

NAME = "temporal-sim"

HORIZON = 10_000  # times are integers in [0, HORIZON)
TRAIN_END = 7_000  # train: node_time < TRAIN_END; val: < VAL_END; test: the rest
VAL_END = 8_500
HOMOPHILY = 0.5  # share of candidate pairs drawn inside one class
SIGNAL = 1.5  # centroid norm against unit-variance noise per feature
TIME_SKEW = 1.5  # the exponent a of U**(1/a): how late same-class (early cross-class) edges come
_CHUNK_EDGES = 1 << 22  # edges per pass of the time hash (bounds its temporaries to ~200 MB)
_ANNOUNCE_NODES = 500_000  # larger builds say what they are doing


def load_temporal_sim(root: str | Path | None = None, scale: float = 1.0,
                      seed: int = 0) -> TemporalDataset:
    """temporal-sim at `scale` from the cache under `root`, generating it on the first call."""
    params = _check_params(scale, seed)
    return cache.load_or_build(NAME, params, lambda: generate(**params), root=root,
                               read=read_temporal_entry)


def generate(scale: float = 1.0, seed: int = 0) -> TemporalDataset:
    """Generate temporal-sim in memory (no cache); see the module docstring for the model."""
    params = _check_params(scale, seed)
    num_nodes = round(FULL_NODES * params["scale"])
    num_pairs = round(FULL_PAIRS * params["scale"])
    rng = np.random.default_rng(params["seed"])
    if num_nodes >= _ANNOUNCE_NODES:
        announce(f"{NAME}: generating {num_nodes} nodes and {num_pairs} undirected edges")

    prior = 1.0 / (np.arange(NUM_CLASSES) + 10.0)
    classes = rng.choice(NUM_CLASSES, size=num_nodes, p=prior / prior.sum())
    weights = WEIGHT_FLOOR + rng.pareto(PARETO_SHAPE, size=num_nodes)
    graph = chung_lu_graph(rng, classes, weights, num_pairs, NUM_CLASSES, HOMOPHILY)
    del weights
    features = centroid_features(rng, classes, NUM_CLASSES, NUM_FEATURES, SIGNAL)
    edge_time = _edge_times(graph, classes, salt=int(rng.integers(2**63)))
    node_time = rng.integers(0, HORIZON, size=num_nodes, dtype=np.int64)

    train_idx, val_idx, test_idx = (
        torch.from_numpy(np.flatnonzero(mask)) for mask in
        (node_time < TRAIN_END, (node_time >= TRAIN_END) & (node_time < VAL_END),
         node_time >= VAL_END))
    return TemporalDataset(graph=graph, features=torch.from_numpy(features),
                           labels=torch.from_numpy(classes.astype(np.int64)), train_idx=train_idx,
                           val_idx=val_idx, test_idx=test_idx, num_classes=NUM_CLASSES, name=NAME,
                           params=params, edge_time=torch.from_numpy(edge_time),
                           node_time=torch.from_numpy(node_time))


def _check_params(scale: float, seed: int) -> dict[str, float | int]:
    """Validated, canonical parameters (they name the cache directory)."""
    return check_scale_and_seed(NAME, scale, seed, FULL_NODES, MIN_NODES)


def _edge_times(graph: CSCGraph, classes: np.ndarray, salt: int) -> np.ndarray:
    """int64 [E]: every CSC position's time (module docstring), chunk by chunk of nodes."""
    indptr, indices = graph.indptr.numpy(), graph.indices.numpy()
    n = graph.num_nodes
    times = np.empty(graph.num_edges, dtype=np.int64)
    with Progress(f"{NAME} edge times", graph.num_edges, "edges") as bar:
        lo = 0
        while lo < n:
            hi = max(int(np.searchsorted(indptr, indptr[lo] + _CHUNK_EDGES, side="right")) - 1,
                     lo + 1)
            a, b = int(indptr[lo]), int(indptr[hi])
            dst = np.repeat(np.arange(lo, hi, dtype=np.int64), np.diff(indptr[lo:hi + 1]))
            src = indices[a:b].astype(np.int64)
            late = _uniform(np.minimum(src, dst) * n + np.maximum(src, dst), salt)
            late **= 1.0 / TIME_SKEW
            cross = classes[src] != classes[dst]
            late[cross] = 1.0 - late[cross]
            late *= HORIZON
            np.minimum(late, HORIZON - 1, out=late)  # 1 - U**(1/a) reaches 1.0 at U = 0
            times[a:b] = late
            bar.update(b - a)
            lo = hi
    return times


def _uniform(keys: np.ndarray, salt: int) -> np.ndarray:
    """float64 in [0, 1) per int64 key: splitmix64 of `key ^ salt`, a fixed function of both."""
    z = keys.astype(np.uint64) ^ np.uint64(salt)
    z += np.uint64(0x9E3779B97F4A7C15)
    z ^= z >> np.uint64(30)
    z *= np.uint64(0xBF58476D1CE4E5B9)
    z ^= z >> np.uint64(27)
    z *= np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    return (z >> np.uint64(11)).astype(np.float64) * 2.0**-53
