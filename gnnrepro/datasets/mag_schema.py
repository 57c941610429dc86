"""ogbn-mag's schema, shared by mag-sim and the ogbn-mag loader: node types, relations, reverses.

ogbn-mag stores four directed relations. A message-passing model of papers needs messages from
every type to reach papers, so, as DGL's and PyG's mag examples do, each relation gets its
reverse: `rev_writes`, `rev_has_topic`, `rev_affiliated_with`, and `cited_by` for `cites`
(paper -> paper; a separate relation, not merged into a symmetric `cites` as PyG's ToUndirected
does, so that each relation and its reverse are exact mirrors and a model may weigh citing and
cited papers apart). Every relation is stored as a CSC over its destination type with int32
source ids, neighbours ascending per destination; multi-edges are kept (mag-sim has none).
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch

from gnnrepro.graph import CSCGraph
from gnnrepro.typed_graph import Relation, TypedGraph

__all__ = ["AFFILIATED_WITH", "CITES", "HAS_TOPIC", "NODE_TYPES", "RELATIONS", "REVERSES",
           "csc_from_edges",
           "TARGET", "WRITES", "mag_graph", "reverse"]

NODE_TYPES = ("paper", "author", "institution", "field_of_study")
TARGET = "paper"
WRITES: Relation = ("author", "writes", "paper")
CITES: Relation = ("paper", "cites", "paper")
HAS_TOPIC: Relation = ("paper", "has_topic", "field_of_study")
AFFILIATED_WITH: Relation = ("author", "affiliated_with", "institution")
RELATIONS: tuple[Relation, ...] = (WRITES, CITES, HAS_TOPIC, AFFILIATED_WITH)
#: The name of each stored relation's reverse.
REVERSES = {"writes": "rev_writes", "cites": "cited_by", "has_topic": "rev_has_topic",
            "affiliated_with": "rev_affiliated_with"}


def reverse(rel: Relation) -> Relation:
    """The reverse of one of RELATIONS: (dst, its reverse name, src)."""
    return rel[2], REVERSES[rel[1]], rel[0]


def mag_graph(num_nodes: Mapping[str, int],
              edges: Mapping[Relation, tuple[np.ndarray, np.ndarray]]) -> TypedGraph:
    """The TypedGraph of RELATIONS' edge lists {rel: (src ids, dst ids)} and their reverses,
    in the order RELATIONS then their reverses; ValueError naming the relation on ids out of
    range."""
    missing = [rel for rel in RELATIONS if rel not in edges]
    if missing or set(num_nodes) != set(NODE_TYPES):
        raise ValueError(f"mag_graph needs node types {NODE_TYPES} and relations {RELATIONS}; "
                         f"got {sorted(num_nodes)} and {sorted(edges)}")
    forward, backward = {}, {}
    for rel in RELATIONS:
        src, dst = (np.asarray(a, dtype=np.int64).reshape(-1) for a in edges[rel])
        n_src, n_dst = num_nodes[rel[0]], num_nodes[rel[2]]
        if src.size != dst.size:
            raise ValueError(f"relation {rel}: {src.size} source ids but {dst.size} "
                             "destination ids")
        for role, ids, n in (("source", src, n_src), ("destination", dst, n_dst)):
            if ids.size and (ids.min() < 0 or ids.max() >= n):
                raise ValueError(f"relation {rel}: {role} ids must lie in [0, {n}), found "
                                 f"values in [{ids.min()}, {ids.max()}]")
        forward[rel] = csc_from_edges(src, dst, n_src, n_dst)
        backward[reverse(rel)] = csc_from_edges(dst, src, n_dst, n_src)
    return TypedGraph(num_nodes, {**forward, **backward})


def csc_from_edges(src: np.ndarray, dst: np.ndarray, n_src: int, n_dst: int) -> CSCGraph:
    """The CSC over `n_dst` destinations of edges src -> dst: one sort of int64 keys
    dst * n_src + src (so neighbours come out ascending), int32 source ids."""
    keys = dst * n_src
    keys += src
    keys.sort()
    indptr = np.zeros(n_dst + 1, dtype=np.int64)
    np.cumsum(np.bincount(dst, minlength=n_dst), out=indptr[1:])
    np.remainder(keys, n_src, out=keys)
    return CSCGraph(torch.from_numpy(indptr), torch.from_numpy(keys.astype(np.int32)),
                    num_src_nodes=n_src)
