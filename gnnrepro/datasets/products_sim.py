"""products-sim: a synthetic stand-in for ogbn-products, built in seconds and cached.

Why: the benchmarks need a graph with ogbn-products' size, degree skew and label structure on
machines that do not hold the real data, at any fraction of its size (`scale`).

Model (vectorised numpy on one `np.random.default_rng(seed)` stream, so a (scale, seed) pair gives
the same arrays bit for bit):

* every node draws a latent class from a mildly imbalanced prior (p_c proportional to 1/(c+10));
* Chung-Lu edges with heavy-tailed node weights (floor + Pareto/Lomax): each candidate pair picks
  "same class c" with probability HOMOPHILY * W_c / W or "any class" otherwise (W_c: the class's
  weight mass), then draws both endpoints independently, proportional to weight, within that
  group. Expected degree stays proportional to weight, and most edges join same-class nodes.
  Self loops and repeated pairs are dropped and more candidates drawn until exactly the target
  number of undirected pairs remains (the last round's excess is dropped uniformly at random);
* features = SIGNAL * (unit centroid of the latent class) + N(0, 1) noise;
* labels = the latent class, except a LABEL_NOISE fraction replaced by a uniform class. The noise
  caps every model's accuracy the way ogbn-products' ambiguous categories do, so neighbour
  aggregation lifts accuracy by a products-like margin over a feature-only MLP instead of to
  ~100%. The price: fewer edges join nodes with equal *labels* than in ogbn-products (the
  measured fractions and accuracies: benchmarks/NOTES.md, "products-sim").
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from gnnrepro.datasets import cache
from gnnrepro.datasets.centroid_features import centroid_features
from gnnrepro.datasets.chung_lu import chung_lu_graph
from gnnrepro.datasets.dataset import Dataset
from gnnrepro.datasets.scaled import check_scale_and_seed

__all__ = ["NAME", "load_products_sim", "generate"]

NAME = "products-sim"

# ogbn-products at scale 1.0.
FULL_NODES = 2_449_029
FULL_PAIRS = 61_859_140  # undirected; stored both ways: 123,718,280 directed edges
FULL_TRAIN = 196_615
FULL_VAL = 39_323
NUM_FEATURES = 100
NUM_CLASSES = 47

HOMOPHILY = 0.75  # share of candidate pairs drawn inside one class
PARETO_SHAPE = 3.0  # tail index of the node weights: max degree ~10k at scale 1
WEIGHT_FLOOR = 0.05  # weight = floor + Lomax(shape): ~5% of nodes get degree <= 5
SIGNAL = 3.1  # centroid norm against unit-variance noise per feature
LABEL_NOISE = 0.2  # share of labels replaced by a uniform class
MIN_NODES = 1000  # below this the class subgraphs cannot hold their share of the edges


def load_products_sim(root: str | Path | None = None, scale: float = 1.0,
                      seed: int = 0) -> Dataset:
    """products-sim at `scale` from the cache under `root`, generating it on the first call."""
    params = _check_params(scale, seed)
    return cache.load_or_build(NAME, params, lambda: generate(**params), root=root)


def generate(scale: float = 1.0, seed: int = 0) -> Dataset:
    """Generate products-sim in memory (no cache); see the module docstring for the model."""
    params = _check_params(scale, seed)
    num_nodes, num_pairs, num_train, num_val = _counts(params["scale"])
    rng = np.random.default_rng(params["seed"])

    prior = 1.0 / (np.arange(NUM_CLASSES) + 10.0)
    classes = rng.choice(NUM_CLASSES, size=num_nodes, p=prior / prior.sum())
    weights = WEIGHT_FLOOR + rng.pareto(PARETO_SHAPE, size=num_nodes)
    graph = chung_lu_graph(rng, classes, weights, num_pairs, NUM_CLASSES, HOMOPHILY)
    del weights

    features = centroid_features(rng, classes, NUM_CLASSES, NUM_FEATURES, SIGNAL)
    labels = classes.astype(np.int64)
    noisy = rng.random(num_nodes) < LABEL_NOISE
    labels[noisy] = rng.integers(0, NUM_CLASSES, size=int(noisy.sum()))

    perm = rng.permutation(num_nodes)
    splits = np.split(perm, [num_train, num_train + num_val])
    train_idx, val_idx, test_idx = (torch.from_numpy(np.sort(s)) for s in splits)
    return Dataset(graph=graph, features=torch.from_numpy(features),
                   labels=torch.from_numpy(labels), train_idx=train_idx, val_idx=val_idx,
                   test_idx=test_idx, num_classes=NUM_CLASSES, name=NAME, params=params)


def _check_params(scale: float, seed: int) -> dict[str, float | int]:
    """Validated, canonical parameters (they name the cache directory)."""
    return check_scale_and_seed(NAME, scale, seed, FULL_NODES, MIN_NODES)


def _counts(scale: float) -> tuple[int, int, int, int]:
    """(nodes, undirected pairs, train, val) at `scale`; test is every remaining node."""
    return (round(FULL_NODES * scale), round(FULL_PAIRS * scale), round(FULL_TRAIN * scale),
            round(FULL_VAL * scale))
