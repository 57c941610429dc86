"""citation-sim: a synthetic stand-in for ogbl-citation2 (link prediction), built and cached.

Why: link-prediction pipelines (edge batches, reverse-edge exclusion, per-query ranking against
1,000 negatives) need a graph with ogbl-citation2's shape on machines without the real data, at
any fraction of its size (`scale`), where what a model learns can be checked.

Model (vectorised numpy on one `np.random.default_rng(seed)` stream, so a (scale, seed) pair gives
the same arrays bit for bit; scale 1.0 has ogbl-citation2's counts: 2,927,963 nodes, 30,561,187
directed edges before the hold-out, 128 features, 86,956 val and 86,956 test queries):

* every node (paper) draws a latent community from a skewed prior (p_c proportional to
  1/(c+5), NUM_COMMUNITIES of them) and a heavy-tailed weight (floor + Pareto/Lomax);
* distinct Chung-Lu pairs (gnnrepro.datasets.chung_lu.sample_pairs: a share HOMOPHILY of
  candidates inside one community, endpoints proportional to weight, no loops), each directed
  from its higher node id (the newer paper) to its lower (the cited one): a DAG, as citations are;
* features = SIGNAL * (unit centroid of the community) + N(0, 1) noise: a weak community signal
  that neighbours' features sharpen, so a GNN has something to add over features alone;
* the hold-out, as OGB's (gnnrepro.datasets.edge_split): distinct sources among the nodes with
  out-degree >= 2, chosen uniformly, each losing one out-edge (uniform) to val and another to
  test; every other edge trains;
* negatives: NUM_NEGATIVES uniform node ids per val and test query. As in OGB, a negative may
  rarely be a true edge of the query's source (or its source itself); rankings keep it.

What trivial scorers reach (val MRR against 1,000 negatives, scale 0.01 / 0.05, seed 0; a random
ranking: 0.0075): cosine of own features 0.048 / 0.046; cosine of own + mean training-graph
neighbours' features (one GNN layer's view) 0.136 / 0.145; the candidate's degree 0.061 / 0.057.
So structure adds clearly to features, but with 64 communities the ceiling is far below
ogbl-citation2's GNN MRRs (~0.8): this dataset checks pipelines and learning, not leaderboards.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from gnnrepro.datasets import cache
from gnnrepro.datasets.centroid_features import centroid_features
from gnnrepro.datasets.chung_lu import sample_pairs
from gnnrepro.datasets.edge_split import fixed_negatives, hold_out_edges
from gnnrepro.datasets.link_dataset import (LinkDataset, link_graph, no_node_labels,
                                            read_link_entry)
from gnnrepro.datasets.scaled import check_scale_and_seed
from gnnrepro.progress import announce

__all__ = ["NAME", "generate", "load_citation_sim"]

NAME = "citation-sim"

# ogbl-citation2 at scale 1.0.
FULL_NODES = 2_927_963
FULL_EDGES = 30_561_187  # directed, val and test edges included
FULL_QUERIES = 86_956  # val edges, and as many test edges
NUM_FEATURES = 128
NUM_NEGATIVES = 1_000  # per val and test query

NUM_COMMUNITIES = 64
HOMOPHILY = 0.8  # share of candidate pairs drawn inside one community
PARETO_SHAPE = 2.5  # tail index of the node weights
WEIGHT_FLOOR = 0.1  # weight = floor + Lomax(shape)
SIGNAL = 4.0  # centroid norm against unit-variance noise per feature
MIN_NODES = 1000  # below this the communities cannot hold their share of the edges
MIN_QUERIES = 8  # val (and test) queries at the smallest scales
_ANNOUNCE_NODES = 500_000  # larger builds say what they are doing


def load_citation_sim(root: str | Path | None = None, scale: float = 1.0,
                      seed: int = 0) -> LinkDataset:
    """citation-sim at `scale` from the cache under `root`, generating it on the first call."""
    params = _check_params(scale, seed)
    return cache.load_or_build(NAME, params, lambda: generate(**params), root=root,
                               read=read_link_entry)


def generate(scale: float = 1.0, seed: int = 0) -> LinkDataset:
    """Generate citation-sim in memory (no cache); see the module docstring for the model."""
    params = _check_params(scale, seed)
    n, num_edges, num_queries = _counts(params["scale"])
    rng = np.random.default_rng(params["seed"])
    big = n >= _ANNOUNCE_NODES
    if big:
        announce(f"{NAME}: generating {n} nodes and {num_edges} directed edges")

    prior = 1.0 / (np.arange(NUM_COMMUNITIES) + 5.0)
    communities = rng.choice(NUM_COMMUNITIES, size=n, p=prior / prior.sum())
    weights = WEIGHT_FLOOR + rng.pareto(PARETO_SHAPE, size=n)
    keys = sample_pairs(rng, communities, weights, num_edges, NUM_COMMUNITIES, HOMOPHILY)
    del weights
    dst = keys // n  # the lower id: the older, cited paper
    np.remainder(keys, n, out=keys)
    src = keys  # the higher id: the citing paper
    del keys

    if big:
        announce(f"{NAME}: holding out {num_queries} val and test edges")
    val_pos, test_pos = hold_out_edges(rng, src, n, num_queries, NAME)
    train = np.ones(num_edges, dtype=bool)
    train[val_pos] = False
    train[test_pos] = False
    features = centroid_features(rng, communities, NUM_COMMUNITIES, NUM_FEATURES, SIGNAL,
                                 progress=f"{NAME} features")
    val_neg, test_neg = fixed_negatives(rng, n, num_queries, NUM_NEGATIVES)

    train_src, train_dst = torch.from_numpy(src[train]), torch.from_numpy(dst[train])
    del train
    if big:
        announce(f"{NAME}: building the graph of {2 * train_src.numel()} edges")
    t = torch.from_numpy
    return LinkDataset(graph=link_graph(train_src, train_dst, n), features=t(features),
                       **no_node_labels(n), name=NAME, params=params, train_src=train_src,
                       train_dst=train_dst, val_src=t(src[val_pos]), val_dst=t(dst[val_pos]),
                       val_neg=t(val_neg), test_src=t(src[test_pos]), test_dst=t(dst[test_pos]),
                       test_neg=t(test_neg))


def _check_params(scale: float, seed: int) -> dict[str, float | int]:
    """Validated, canonical parameters (they name the cache directory)."""
    return check_scale_and_seed(NAME, scale, seed, FULL_NODES, MIN_NODES)


def _counts(scale: float) -> tuple[int, int, int]:
    """(nodes, directed edges before the hold-out, val queries = test queries) at `scale`."""
    return (round(FULL_NODES * scale), round(FULL_EDGES * scale),
            max(round(FULL_QUERIES * scale), MIN_QUERIES))
