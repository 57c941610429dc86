"""TypedLinkDataset: link prediction on one relation of a typed dataset (DGL's heterogeneous
link prediction on one edge type), e.g. mag-sim's ('paper', 'cites', 'paper') or
('author', 'writes', 'paper').

Why: as a LinkDataset is for a homogeneous graph, a typed link dataset holds the relation's
training edges and its val/test queries with fixed negatives, and a graph the sampler sees
without the held-out edges. On a typed graph a held-out edge also has a twin in the reverse
relation (mag-sim's `cited_by`, `rev_writes`), through which it would leak into every batch:
both are removed. `hold_out_relation` splits the relation as citation-sim is split
(gnnrepro.datasets.edge_split) and rebuilds the relation and its reverse from the training
edges: edge i of each (its id in sampled blocks) is training edge i, train_src[i] ->
train_dst[i] and its twin, so `reverse_eids` is the identity into the reverse relation. The
node labels and splits of the typed dataset are kept; every other relation is shared.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import torch

from gnnrepro.checks import check_int
from gnnrepro.datasets.edge_split import fixed_negatives, hold_out_edges
from gnnrepro.datasets.edge_queries import EdgeQueries
from gnnrepro.datasets.typed_dataset import TypedDataset
from gnnrepro.graph import CSCGraph
from gnnrepro.typed_graph import Relation, TypedGraph

__all__ = ["TypedLinkDataset", "hold_out_relation", "reverse_relation"]

QUERY_SHARE = 0.01  # of the relation's edges, to val and as many to test
MIN_QUERIES = 8
NUM_NEGATIVES = 1_000  # per query, as citation-sim's and ogbl-citation2's
_SPLIT_STREAM = 7  # the split's generator: default_rng([seed, _SPLIT_STREAM])


@dataclass(repr=False, kw_only=True)
class TypedLinkDataset(TypedDataset, EdgeQueries):
    """A TypedDataset plus `relation`'s EdgeQueries (`train_src` of its source type ->
    `train_dst` of its destination type: edge i of the relation, and of `reverse` where the
    graph has one), held out of the graph with their reverse twins."""

    relation: Relation
    reverse: Relation | None

    def __post_init__(self) -> None:
        super().__post_init__()
        self.check_edge_queries()
        rels = {"relation": self.relation}
        if self.reverse is not None:
            rels["reverse"] = self.reverse
            if (self.reverse[0], self.reverse[2]) != (self.relation[2], self.relation[0]):
                raise ValueError(f"reverse {self.reverse} must run from {self.relation[2]!r} "
                                 f"to {self.relation[0]!r}")
        for name, rel in rels.items():
            if rel not in self.graph.relations:
                raise ValueError(f"{name} {rel} is not a relation of the graph")
            if self.graph.relations[rel].num_edges != self.num_train_edges:
                raise ValueError(f"{name} {rel} must hold the {self.num_train_edges} training "
                                 f"edges, got {self.graph.relations[rel].num_edges}")

    @property
    def reverse_eids(self) -> dict[Relation, torch.Tensor] | None:
        """{reverse relation: int64 [E_t]}, the id of each training edge's twin there (what a
        LinkSampler's exclude='reverse_id' takes); None without a reverse relation."""
        if self.reverse is None:
            return None
        return {self.reverse: torch.arange(self.num_train_edges, dtype=torch.int64)}

    def summary(self) -> dict[str, Any]:
        """TypedDataset.summary plus the relation, its reverse and the edge counts."""
        return super().summary() | {
            "relation": list(self.relation),
            "reverse": None if self.reverse is None else list(self.reverse)} | self.edge_counts()

    def __repr__(self) -> str:
        return (f"TypedLinkDataset({self.name!r}, relation={self.relation}, "
                f"reverse={self.reverse}, {self.edge_counts_text()})")


def hold_out_relation(dataset: TypedDataset, relation: str | Relation,
                      reverse: str | Relation | None = "auto", num_queries: int | None = None,
                      num_negatives: int = NUM_NEGATIVES, seed: int = 0) -> TypedLinkDataset:
    """`dataset` as link prediction on `relation` (a name or (src, name, dst)); see the module
    docstring. `reverse` is the relation holding each edge's twin: "auto" finds the one whose
    edges mirror the relation's (None if none does), a name or tuple is checked to, None says
    there is none. `num_queries` val and as many test queries (default QUERY_SHARE of the
    edges, at least MIN_QUERIES), `num_negatives` each, drawn from `seed`."""
    if not isinstance(dataset, TypedDataset):
        raise TypeError(f"dataset must be a TypedDataset, got {type(dataset).__name__}")
    g = dataset.graph
    rel = g.relation(relation, "relation")
    rev = _reverse(g, rel, reverse)
    src, dst = _edge_list(g.relations[rel])
    n_src, n_dst = g.num_nodes[rel[0]], g.num_nodes[rel[2]]
    if num_queries is None:
        num_queries = max(MIN_QUERIES, round(QUERY_SHARE * src.size))
    check_int("num_queries", num_queries, 1)
    check_int("num_negatives", num_negatives, 1)
    check_int("seed", seed, 0)
    rng = np.random.default_rng([seed, _SPLIT_STREAM])
    val_pos, test_pos = hold_out_edges(rng, src, n_src, num_queries,
                                       f"{dataset.name} {rel}")
    val_neg, test_neg = fixed_negatives(rng, n_dst, num_queries, num_negatives)
    train = np.ones(src.size, dtype=bool)
    train[val_pos] = False
    train[test_pos] = False
    t = torch.from_numpy
    train_src, train_dst = t(src[train]), t(dst[train])
    relations = dict(g.relations)  # the graph's order (a model's relations) is kept
    relations[rel] = CSCGraph.from_edges(train_src, train_dst, n_dst, g.index_dtype,
                                         num_src_nodes=n_src, keep_edge_ids=True)
    if rev is not None:
        relations[rev] = CSCGraph.from_edges(train_dst, train_src, n_src, g.index_dtype,
                                             num_src_nodes=n_dst, keep_edge_ids=True)
    base = {f.name: getattr(dataset, f.name) for f in fields(TypedDataset)}
    params = dict(dataset.params) | {"relation": list(rel), "num_queries": num_queries,
                                     "num_negatives": num_negatives, "split_seed": seed}
    return TypedLinkDataset(
        **base | {"graph": TypedGraph(g.num_nodes, relations), "params": params},
        relation=rel, reverse=rev, train_src=train_src, train_dst=train_dst,
        val_src=t(src[val_pos]), val_dst=t(dst[val_pos]), val_neg=t(val_neg),
        test_src=t(src[test_pos]), test_dst=t(dst[test_pos]), test_neg=t(test_neg))


def reverse_relation(graph: TypedGraph, relation: Relation) -> Relation | None:
    """The relation of `graph` other than `relation` whose edges are `relation`'s reversed
    (as multisets), or None; ValueError where `relation` is its own reverse (a symmetric
    relation: a held-out edge's twin would stay in it)."""
    if _mirrors(graph, relation, relation):
        raise ValueError(f"relation {relation} is its own reverse (symmetric): holding out one "
                         "of its edges would leave the twin in it")
    return next((rel for rel in graph.relations
                 if rel != relation and _mirrors(graph, relation, rel)), None)


def _mirrors(graph: TypedGraph, relation: Relation, other: Relation) -> bool:
    """Whether `other`'s edges are `relation`'s reversed (as multisets)."""
    a, b = graph.relations[relation], graph.relations[other]
    if (other[0], other[2]) != (relation[2], relation[0]) or a.num_edges != b.num_edges:
        return False
    (src, dst), (b_src, b_dst) = _edge_list(a), _edge_list(b)
    n = graph.num_nodes[relation[0]]
    return np.array_equal(np.sort(dst * n + src), np.sort(b_src * n + b_dst))


def _reverse(graph: TypedGraph, rel: Relation, reverse: object) -> Relation | None:
    """The reverse relation `reverse` asks for (see hold_out_relation), checked."""
    if reverse is None:
        return None
    if reverse == "auto":
        return reverse_relation(graph, rel)
    rev = graph.relation(reverse, "reverse")
    if not _mirrors(graph, rel, rev):
        raise ValueError(f"reverse: the edges of {rev} are not those of {rel} reversed")
    if rev == rel:
        raise ValueError(f"reverse: {rel} is its own reverse (symmetric): holding out one of "
                         "its edges would leave the twin in it")
    return rev


def _edge_list(csc: CSCGraph) -> tuple[np.ndarray, np.ndarray]:
    """(src, dst) int64 of every edge of `csc`, in CSC order."""
    dst = np.repeat(np.arange(csc.num_nodes, dtype=np.int64), csc.in_degrees().numpy())
    return csc.indices.numpy().astype(np.int64), dst
