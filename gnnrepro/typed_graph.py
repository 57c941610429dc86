"""TypedGraph: a heterogeneous graph, node types with their own id ranges and relations.

A relation is (source type, name, destination type), DGL's canonical edge type, stored as a
CSCGraph over its destination type whose `indices` are ids of its source type. Every relation
is validated as a CSCGraph is, so a TypedGraph is always safe to hand to the sampler op. The
homogeneous graph is the one-type, one-relation case (`TypedGraph.from_csc`), under DGL's
default names `_N` and `(_N, _E, _N)`.
"""
from __future__ import annotations

from collections.abc import Mapping

import torch

from gnnrepro.checks import check_device, check_int
from gnnrepro.graph import CSCGraph

__all__ = ["TypedGraph", "Relation"]

Relation = tuple[str, str, str]  # (source type, name, destination type)

DEFAULT_NODE_TYPE = "_N"
DEFAULT_RELATION: Relation = ("_N", "_E", "_N")


class TypedGraph:
    """Node types with `num_nodes[type]` nodes each, and per relation an in-neighbour CSC."""

    def __init__(self, num_nodes: Mapping[str, int], relations: Mapping[Relation, CSCGraph]):
        if not isinstance(num_nodes, Mapping) or not num_nodes:
            raise TypeError("num_nodes must be a non-empty dict {node type: count}")
        if not isinstance(relations, Mapping) or not relations:
            raise TypeError("relations must be a non-empty dict {(src, name, dst): CSCGraph}")
        self.num_nodes: dict[str, int] = {}
        for ntype, n in num_nodes.items():
            if not isinstance(ntype, str) or not ntype:
                raise TypeError(f"node type names must be non-empty str, got {ntype!r}")
            self.num_nodes[ntype] = check_int(f"num_nodes[{ntype!r}]", n, 0)
        self.relations: dict[Relation, CSCGraph] = {}
        names: dict[str, int] = {}
        dtypes, devices = set(), set()
        for rel, csc in relations.items():
            rel = _check_relation_key(rel)
            src, _, dst = rel
            for role, ntype in (("source", src), ("destination", dst)):
                if ntype not in self.num_nodes:
                    raise ValueError(f"relation {rel}: unknown {role} node type {ntype!r} (node "
                                     f"types: {sorted(self.num_nodes)})")
            if not isinstance(csc, CSCGraph):
                raise TypeError(f"relation {rel} must be a CSCGraph, got {type(csc).__name__}")
            if csc.num_nodes != self.num_nodes[dst] or csc.num_src_nodes != self.num_nodes[src]:
                raise ValueError(
                    f"relation {rel}: its CSC has {csc.num_nodes} destinations and "
                    f"{csc.num_src_nodes} sources, but node types {dst!r} and {src!r} have "
                    f"{self.num_nodes[dst]} and {self.num_nodes[src]} nodes")
            self.relations[rel] = csc
            names[rel[1]] = names.get(rel[1], 0) + 1
            dtypes.add(csc.indices.dtype)
            devices.add(csc.device)
        if len(dtypes) > 1:
            raise TypeError(f"every relation's indices must have one dtype, got {sorted(map(str, dtypes))}")
        if len(devices) > 1:
            raise ValueError(f"every relation must be on one device, got {sorted(map(str, devices))}")
        self._unique_names = {name for name, count in names.items() if count == 1}

    # ---- construction -------------------------------------------------------------------------
    @classmethod
    def from_edges(cls, num_nodes: Mapping[str, int],
                   edges: Mapping[Relation, tuple[torch.Tensor, torch.Tensor]],
                   index_dtype: torch.dtype = torch.int64,
                   keep_edge_ids: bool = False) -> "TypedGraph":
        """Build from per-relation COO edge lists {(src, name, dst): (src ids, dst ids)}; message
        flows src -> dst. Within one destination, neighbours keep the input order. With
        `keep_edge_ids` an edge's id (in sampled blocks) is its position in its relation's list,
        as DGL's and PyG's are; else its CSC position (no memory for the ids)."""
        if not isinstance(edges, Mapping):
            raise TypeError(f"edges must be a dict {{relation: (src, dst)}}, got "
                            f"{type(edges).__name__}")
        relations = {}
        for rel, pair in edges.items():
            rel = _check_relation_key(rel)
            if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
                raise TypeError(f"edges[{rel}] must be a (src, dst) pair of tensors")
            for ntype in (rel[0], rel[2]):
                if ntype not in num_nodes:
                    raise ValueError(f"relation {rel}: unknown node type {ntype!r} (node types: "
                                     f"{sorted(num_nodes)})")
            try:
                relations[rel] = CSCGraph.from_edges(pair[0], pair[1], num_nodes[rel[2]],
                                                     index_dtype, num_src_nodes=num_nodes[rel[0]],
                                                     keep_edge_ids=keep_edge_ids)
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"relation {rel}: {exc}") from exc
        return cls(num_nodes, relations)

    @classmethod
    def from_csc(cls, graph: CSCGraph) -> "TypedGraph":
        """The homogeneous graph as one type `_N` and one relation `(_N, _E, _N)` (its arrays)."""
        if not isinstance(graph, CSCGraph):
            raise TypeError(f"graph must be a CSCGraph, got {type(graph).__name__}")
        if graph.num_src_nodes != graph.num_nodes:
            raise ValueError("a homogeneous graph has as many sources as destinations")
        return cls({DEFAULT_NODE_TYPE: graph.num_nodes}, {DEFAULT_RELATION: graph})

    @classmethod
    def from_dgl(cls, g: object, index_dtype: torch.dtype = torch.int64) -> "TypedGraph":
        """From a DGL heterograph (its canonical edge types and node counts, on the CPU); edge ids
        are DGL's."""
        edges = {}
        for rel in g.canonical_etypes:
            src, dst = g.edges(etype=rel, order="eid")
            edges[tuple(rel)] = (src.cpu().to(torch.int64), dst.cpu().to(torch.int64))
        return cls.from_edges({t: int(g.num_nodes(t)) for t in g.ntypes}, edges, index_dtype,
                              keep_edge_ids=True)

    @classmethod
    def from_pyg(cls, data: object, index_dtype: torch.dtype = torch.int64) -> "TypedGraph":
        """From a PyG HeteroData: its node types' `num_nodes` and edge types' `edge_index`; edge
        ids are positions in edge_index, as PyG's `e_id` are."""
        num_nodes = {t: int(data[t].num_nodes) for t in data.node_types}
        edges = {tuple(rel): (data[rel].edge_index[0].cpu(), data[rel].edge_index[1].cpu())
                 for rel in data.edge_types}
        return cls.from_edges(num_nodes, edges, index_dtype, keep_edge_ids=True)

    # ---- what it holds ------------------------------------------------------------------------
    @property
    def node_types(self) -> list[str]:
        return list(self.num_nodes)

    @property
    def canonical_relations(self) -> list[Relation]:
        return list(self.relations)

    @property
    def is_homogeneous(self) -> bool:
        return len(self.num_nodes) == 1 and len(self.relations) == 1

    @property
    def num_edges(self) -> dict[Relation, int]:
        return {rel: csc.num_edges for rel, csc in self.relations.items()}

    @property
    def device(self) -> torch.device:
        return next(iter(self.relations.values())).device

    @property
    def index_dtype(self) -> torch.dtype:
        return next(iter(self.relations.values())).indices.dtype

    def relation(self, key: str | Relation, argument: str | None = None) -> Relation:
        """The canonical relation a name or (src, name, dst) tuple refers to, else ValueError
        (naming `argument`, the parameter `key` was given as, where given)."""
        at = "" if argument is None else f"{argument}: "
        if isinstance(key, str):
            if key in self._unique_names:
                return next(rel for rel in self.relations if rel[1] == key)
            matches = [rel for rel in self.relations if rel[1] == key]
            if matches:
                raise ValueError(f"{at}relation name {key!r} is ambiguous: {matches}; give the "
                                 "(src, name, dst) tuple")
            raise ValueError(f"{at}unknown relation {key!r} (relations: "
                             f"{self.canonical_relations})")
        if isinstance(key, (tuple, list)) and tuple(key) in self.relations:
            return tuple(key)
        raise ValueError(f"{at}unknown relation {key!r} (relations: {self.canonical_relations})")

    def node_type(self, key: object) -> str:
        if not isinstance(key, str) or key not in self.num_nodes:
            raise ValueError(f"unknown node type {key!r} (node types: {self.node_types})")
        return key

    def nbytes(self) -> int:
        return sum(csc.nbytes() for csc in self.relations.values())

    # ---- placement ----------------------------------------------------------------------------
    def to(self, device: torch.device | str, non_blocking: bool = False) -> "TypedGraph":
        device = check_device(device)
        if device == self.device:
            return self
        return TypedGraph(self.num_nodes, {rel: csc.to(device, non_blocking)
                                           for rel, csc in self.relations.items()})

    def share_memory_(self) -> "TypedGraph":
        for csc in self.relations.values():
            csc.share_memory_()
        return self

    def pin_memory_(self) -> "TypedGraph":
        for csc in self.relations.values():
            csc.pin_memory_()
        return self

    def __repr__(self) -> str:
        rels = ", ".join(f"{r}: {c.num_edges}" for r, c in self.relations.items())
        return f"TypedGraph(num_nodes={self.num_nodes}, num_edges={{{rels}}})"


def _check_relation_key(rel: object) -> Relation:
    if (not isinstance(rel, (tuple, list)) or len(rel) != 3
            or not all(isinstance(p, str) and p for p in rel)):
        raise TypeError(f"a relation must be a (src type, name, dst type) tuple of str, got {rel!r}")
    return tuple(rel)
