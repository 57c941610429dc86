"""DGL's CPU samplers on a heterograph, behind the typed sampler API: the baselines of the
heterogeneous benchmarks (DGL 2.1's `NeighborSampler` with per-relation fanouts, and per layer
`dgl.sampling.sample_neighbors` + `dgl.to_block`, each on a CSC-only heterograph with int32
ids when they fit). What DGL_SAMPLERS' docstring says of threads, seeding and the relabel
map (gnnrepro.baselines.dgl_samplers) holds here per node type.
"""
from __future__ import annotations

import torch

from gnnrepro.baselines.dgl_import import import_dgl
from gnnrepro.baselines.dgl_samplers import install_fused_mapping
from gnnrepro.sampling.args import check_seed, stream_seed
from gnnrepro.sampling.block import TypedBlock, relation_block
from gnnrepro.sampling.typed import check_typed_fanouts, typed_seed_tensors
from gnnrepro.typed_graph import TypedGraph

__all__ = ["DGLTypedFusedSampler", "DGLTypedUnfusedSampler", "dgl_heterograph",
           "from_dgl_typed_block"]

_INT32_LIMIT = 2**31


def dgl_heterograph(dgl, graph: TypedGraph, edge_ids: bool = False):
    """`graph` as a CSC-only DGL heterograph (int32 ids when every type and relation fits);
    returns (g, idtype). Edge ids are CSC positions (no edge-id arrays). With `edge_ids` they
    are the relations' own where they keep them (CSCGraph.edge_ids), and the graph is built
    from edge lists in id order, as a DGL user builds one, with CSC (sampling) and COO (DGL's
    edge-prediction sampler looks its seed edges up in it)."""
    fits32 = (max(graph.num_nodes.values()) < _INT32_LIMIT
              and max(graph.num_edges.values()) < _INT32_LIMIT)
    idtype = torch.int32 if fits32 else torch.int64
    if edge_ids:
        data = {rel: _edges_by_id(csc, idtype) for rel, csc in graph.relations.items()}
        g = dgl.heterograph(data, num_nodes_dict=dict(graph.num_nodes), idtype=idtype)
        return g.formats(["csc", "coo"]), idtype
    data = {rel: ("csc", (csc.indptr.to(idtype), csc.indices.to(idtype),
                          torch.empty(0, dtype=idtype)))
            for rel, csc in graph.relations.items()}
    g = dgl.heterograph(data, num_nodes_dict=dict(graph.num_nodes), idtype=idtype)
    return g.formats("csc"), idtype


def _edges_by_id(csc, idtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """(sources, destinations) of `csc`'s edges in edge id order (CSC order without ids)."""
    dst = torch.repeat_interleave(torch.arange(csc.num_nodes), csc.in_degrees(),
                                  output_size=csc.num_edges)
    src = csc.indices.long()
    if csc.edge_ids is not None:
        order = torch.empty_like(csc.edge_ids)
        order[csc.edge_ids] = torch.arange(csc.num_edges)
        src, dst = src[order], dst[order]
    return src.to(idtype), dst.to(idtype)


def from_dgl_typed_block(dgl_block, nid: str, relations: list,
                         eid: str | None = None) -> TypedBlock:
    """One DGL heterogeneous block as our TypedBlock over `relations` (the graph's order);
    DGL's per-relation CSC already holds local source ids, destinations first per type. With
    `eid` (dgl.EID) each relation's Block carries the graph's ids of its edges, in CSC order."""
    src = {t: dgl_block.srcnodes[t].data[nid].long() for t in dgl_block.srctypes}
    num_dst = {t: dgl_block.num_dst_nodes(t) for t in dgl_block.dsttypes}
    blocks = {}
    for rel in relations:
        indptr, indices, local = dgl_block.adj_tensors("csc", etype=rel)
        ids = (dgl_block.edges[rel].data[eid][local.long()].long() if eid is not None
               else None)
        blocks[rel] = relation_block(indptr.long(), indices.long(), ids, rel, src, num_dst)
    return TypedBlock(blocks, src, num_dst)


class _DGLTypedSampler:
    """Shared construction, checks and seeding of the heterogeneous DGL baselines."""

    name = ""
    thread_use = None  # dgl.seed is process-wide: not from Loader worker threads

    def __init__(self, graph: TypedGraph, fanouts: list, seed: int = 0):
        if not isinstance(graph, TypedGraph):
            raise TypeError(f"graph must be a TypedGraph, got {type(graph).__name__}")
        if graph.device.type != "cpu":
            raise ValueError(f"graph must be on the CPU for DGL's CPU samplers, is on "
                             f"{graph.device}")
        self.graph = graph
        self.fanouts = check_typed_fanouts(fanouts, graph)
        self.seed = check_seed(seed)
        self._dgl = import_dgl()
        self._g, self._idtype = dgl_heterograph(self._dgl, graph)
        rels = graph.canonical_relations
        # DGL's per-layer fanout dicts, keyed by canonical relation.
        self._layer_fanouts = [dict(zip(rels, layer)) for layer in self.fanouts]

    def sample_native(self, seeds: dict[str, torch.Tensor], batch_id: int = 0):
        """DGL's own output `(input_nodes, output_nodes, blocks)`, blocks input layer first."""
        seed_list = typed_seed_tensors(seeds, self.graph, torch.device("cpu"))
        seeds = {t: s.to(self._idtype) for t, s in zip(self.graph.node_types, seed_list)
                 if t in seeds}
        self._dgl.utils.set_num_threads(torch.get_num_threads())
        self._dgl.seed(stream_seed(self.seed, check_seed(batch_id, "batch_id")))
        return self._sample_blocks(seeds)

    def _sample_blocks(self, seeds: dict[str, torch.Tensor]):
        raise NotImplementedError


class DGLTypedUnfusedSampler(_DGLTypedSampler):
    """Per layer `dgl.sampling.sample_neighbors` + `dgl.to_block` on the heterograph."""

    name = "dgl-unfused"

    def _sample_blocks(self, seeds: dict[str, torch.Tensor]):
        dgl = self._dgl
        nodes, blocks = seeds, []
        for fanout in reversed(self._layer_fanouts):
            frontier = dgl.sampling.sample_neighbors(self._g, nodes, fanout)
            block = dgl.to_block(frontier, nodes)
            nodes = block.srcdata[dgl.NID]
            blocks.insert(0, block)
        return nodes, seeds, blocks


class DGLTypedFusedSampler(_DGLTypedSampler):
    """`dgl.dataloading.NeighborSampler` with per-relation fanouts (its fused CPU path)."""

    name = "dgl-fused"

    def __init__(self, graph: TypedGraph, fanouts: list, seed: int = 0):
        super().__init__(graph, fanouts, seed)
        self._sampler = self._dgl.dataloading.NeighborSampler(self._layer_fanouts)

    def _sample_blocks(self, seeds: dict[str, torch.Tensor]):
        install_fused_mapping(self._sampler, self._g, self._idtype)
        return self._sampler.sample_blocks(self._g, seeds)
