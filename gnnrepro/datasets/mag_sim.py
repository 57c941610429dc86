"""mag-sim: a synthetic stand-in for ogbn-mag (papers, authors, institutions, fields of study).

Why: heterogeneous sampling and R-GCN/R-GAT training need ogbn-mag's schema, size and skew on
machines without the real data, at any fraction of its size (`scale`), with labels that only
the relations reveal well, as ogbn-mag's venues are (R-GCN ~47% there against ~27% for an MLP
on the paper features).

Scale 1.0 has ogbn-mag's 736,389 papers, 1,134,649 authors, 8,740 institutions and 59,965
fields of study; writes 7,145,660, cites 5,416,271, has_topic 7,505,078 and affiliated_with
1,043,998 edges, each with its reverse (gnnrepro.datasets.mag_schema: `cited_by` reverses
`cites`); 128 float32 features on papers only; 349 venues; split by year as ogbn-mag is
(train: year < 2018, 629,571 papers; val: 2018, 64,879; test: 2019, 41,939). Every count is
multiplied by `scale` (rounded); scale >= ~0.0041 (8,000 nodes in all).

Model (vectorised numpy; every part draws from its own generator seeded by (seed, part), so a
(scale, seed) pair gives the same arrays bit for bit and `paper_years` regenerates the years):

* every node of every type has a latent venue (its community) from a mildly imbalanced prior
  (p_c proportional to 1/(c+10)); a paper's label is its venue, except a LABEL_NOISE share
  replaced by a uniform venue (it caps every model's accuracy, as ogbn-mag's venues do);
* each relation has a "driver" side whose degrees are heavy-tailed weights (floor +
  Lomax) apportioned to exactly the relation's edge count (a paper's authors, references and
  topics; an author's affiliations), and a "picked" side drawn proportional to its own
  heavy-tailed popularity weights: with probability HOMOPHILY among the nodes of the
  driver's venue, else among all. So papers are written by authors of their venue, cite papers
  of their venue and have topics of their venue, and authors work at institutions of their
  venue. Repeated picks of one driver (and citing oneself) are redrawn: relations are simple;
* paper features = SIGNAL * (unit centroid of the venue) + N(0, 1) noise: only weakly
  informative, while the mean over a paper's authors' papers, its cited papers or its topics'
  papers averages the noise away and recovers the venue.

Measured (seed 0, test split, inputs standardised on the training papers): the nearest
training-venue centroid on the paper features alone, against the same on the features
concatenated with their per-relation 1- and 2-hop neighbour means (cites, cited_by, writes
after rev_writes, rev_has_topic after has_topic: R-GCN's aggregation, unlearned) gives 13.1%
against 53.7% at scale 0.02 (tests/test_mag_sim.py, `test_relations_reveal_the_venue`), 20.5%
against 59.7% at 0.1 and 26.0% against 62.3% at 1.0 (ogbn-mag's MLP: 26.9%). A 2-layer MLP
(hidden 256, dropout 0.5, Adam lr 0.01, 200 full-batch epochs, best validation epoch) on the
same inputs at 0.02: 16.5% against 42.8% (few training papers per venue for 640 inputs).

Generation at scale 1.0 takes ~17 s on 2 cores, cache entry written (0.1: 1.5 s), at a peak
of 1.0 GB resident of which the result is 0.6 GB. The entry (`array_bytes`) takes 0.60 GB at
1.0: features 0.38 GB, indices (int32, reverses included) 0.17 GB, indptr 0.04 GB, labels and
splits 0.01 GB; 0.06 GB at 0.1.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from gnnrepro.datasets import typed_cache
from gnnrepro.datasets.centroid_features import centroid_features
from gnnrepro.datasets.mag_schema import (AFFILIATED_WITH, CITES, HAS_TOPIC, NODE_TYPES,
                                          TARGET, WRITES, mag_graph)
from gnnrepro.datasets.planted import RelationModel, relation_edges
from gnnrepro.datasets.scaled import check_scale_and_seed
from gnnrepro.datasets.typed_dataset import TypedDataset
from gnnrepro.typed_graph import Relation

__all__ = ["NAME", "array_bytes", "counts", "generate", "load_mag_sim", "paper_years"]

NAME = "mag-sim"

# ogbn-mag at scale 1.0.
FULL_NODES = {"paper": 736_389, "author": 1_134_649, "institution": 8_740,
              "field_of_study": 59_965}
FULL_EDGES = {WRITES: 7_145_660, CITES: 5_416_271, HAS_TOPIC: 7_505_078,
              AFFILIATED_WITH: 1_043_998}
FULL_SPLITS = (629_571, 64_879, 41_939)  # train (year < 2018), val (2018), test (2019)
NUM_FEATURES = 128
NUM_CLASSES = 349
FIRST_YEAR, VAL_YEAR, TEST_YEAR = 2010, 2018, 2019
YEAR_GROWTH = 1.1  # papers per year grow by this factor over FIRST_YEAR..VAL_YEAR - 1

SIGNAL = 2.5  # centroid norm against unit-variance noise per feature: weak on its own
LABEL_NOISE = 0.3
HOMOPHILY = 0.3  # share of picks drawn from the driver's venue, in every relation
#: Per relation: the driver side ("src" or "dst"), and (floor, Lomax shape) of the driver's
#: degree weights and of the picked side's popularity weights.
DRIVERS: dict[Relation, RelationModel] = {
    WRITES: ("dst", (0.3, 3.0), (0.1, 2.5)), CITES: ("src", (0.3, 3.0), (0.05, 2.0)),
    HAS_TOPIC: ("src", (0.5, 4.0), (0.05, 1.5)),
    AFFILIATED_WITH: ("src", (0.3, 3.0), (0.05, 1.5))}
MIN_NODES = 8_000  # all types together: scale >= ~0.0041 (36 institutions, 244 fields)
_STREAMS = {"years": 1, "venues": 2, "labels": 3, "features": 4, "edges": 5}


def load_mag_sim(root: str | Path | None = None, scale: float = 1.0,
                 seed: int = 0) -> TypedDataset:
    """mag-sim at `scale` from the cache under `root`, generating it on the first call."""
    params = _check_params(scale, seed)
    return typed_cache.load_or_build(NAME, params, lambda: generate(**params), root=root)


def generate(scale: float = 1.0, seed: int = 0) -> TypedDataset:
    """mag-sim in memory (no cache); see the module docstring for the model."""
    params = _check_params(scale, seed)
    num_nodes, num_edges, _ = counts(params["scale"])
    seed = params["seed"]
    venues_rng = _rng(seed, "venues")
    venues = {t: _venues(venues_rng, num_nodes[t]) for t in NODE_TYPES}
    edges_rng = _rng(seed, "edges")
    edges = {rel: _relation(edges_rng, rel, num_edges[rel], venues) for rel in FULL_EDGES}
    graph = mag_graph(num_nodes, edges)
    del edges

    labels = venues[TARGET].copy()
    labels_rng = _rng(seed, "labels")
    noisy = labels_rng.random(labels.size) < LABEL_NOISE
    labels[noisy] = labels_rng.integers(0, NUM_CLASSES, size=int(noisy.sum()))
    years = paper_years(params["scale"], seed)
    splits = [torch.from_numpy(np.flatnonzero(mask)) for mask in
              (years < VAL_YEAR, years == VAL_YEAR, years == TEST_YEAR)]
    features = centroid_features(_rng(seed, "features"), venues[TARGET], NUM_CLASSES,
                                 NUM_FEATURES, SIGNAL)
    return TypedDataset(graph, {TARGET: torch.from_numpy(features)}, torch.from_numpy(labels),
                        TARGET, *splits, num_classes=NUM_CLASSES, name=NAME, params=params)


def counts(scale: float) -> tuple[dict[str, int], dict[Relation, int], tuple[int, int, int]]:
    """(nodes per type, edges per stored relation, (train, val, test) papers) at `scale`;
    test holds the papers the rounded train and val leave."""
    nodes = {t: round(n * scale) for t, n in FULL_NODES.items()}
    edges = {rel: round(e * scale) for rel, e in FULL_EDGES.items()}
    train, val = (round(n * nodes[TARGET] / FULL_NODES[TARGET]) for n in FULL_SPLITS[:2])
    return nodes, edges, (train, val, nodes[TARGET] - train - val)


def array_bytes(scale: float) -> dict[str, int]:
    """Bytes of the cache entry's arrays at `scale` (reverses included)."""
    nodes, edges, _ = counts(scale)
    indptr = sum(nodes[rel[2]] + nodes[rel[0]] + 2 for rel in edges) * 8
    return {"features": nodes[TARGET] * NUM_FEATURES * 4, "indices": sum(edges.values()) * 8,
            "indptr": indptr, "labels": nodes[TARGET] * 8, "splits": nodes[TARGET] * 8}


def paper_years(scale: float, seed: int = 0) -> np.ndarray:
    """int64 year of every paper: exactly the split's counts of VAL_YEAR and TEST_YEAR, the
    training papers spread over FIRST_YEAR..VAL_YEAR - 1 (more each year), shuffled."""
    params = _check_params(scale, seed)
    _, _, (n_train, n_val, n_test) = counts(params["scale"])
    rng = _rng(params["seed"], "years")
    share = YEAR_GROWTH ** np.arange(VAL_YEAR - FIRST_YEAR)
    years = np.concatenate((FIRST_YEAR + rng.choice(share.size, n_train, p=share / share.sum()),
                            np.full(n_val, VAL_YEAR), np.full(n_test, TEST_YEAR)))
    rng.shuffle(years)
    return years.astype(np.int64)


def _check_params(scale: float, seed: int) -> dict[str, float | int]:
    """Validated, canonical parameters (they name the cache directory)."""
    return check_scale_and_seed(NAME, scale, seed, sum(FULL_NODES.values()), MIN_NODES)


def _rng(seed: int, part: str) -> np.random.Generator:
    return np.random.default_rng([seed, _STREAMS[part]])


def _venues(rng: np.random.Generator, n: int) -> np.ndarray:
    """int64 latent venue of `n` nodes, p_c proportional to 1/(c+10)."""
    prior = 1.0 / (np.arange(NUM_CLASSES) + 10.0)
    return rng.choice(NUM_CLASSES, size=n, p=prior / prior.sum())


def _relation(rng: np.random.Generator, rel: Relation, count: int,
              venues: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(src, dst) int64 ids of `count` distinct edges of `rel` (gnnrepro.datasets.planted)."""
    return relation_edges(rng, DRIVERS[rel], count, venues[rel[0]], venues[rel[2]],
                          rel[0] == rel[2], HOMOPHILY, NUM_CLASSES, NAME)
