"""A typed MiniBatch in the layouts DGL's and PyG's heterogeneous models take.

PyG (`to_pyg_hetero`): what the heterogeneous NeighborLoader hands over, a HeteroData with per
node type `x`, `n_id` and `num_sampled_nodes`, per relation `edge_index` (and `e_id` where the
blocks carry edge ids) and `num_sampled_edges`, and the target type's `batch_size` and `y`. Per
type, our input layer's source ids are the union of the hops with the seeds first, then each
hop's new nodes in order of first appearance: PyG's `n_id` order. As in the homogeneous view
(gnnrepro.interop.pyg_view), a node's in-edges come from the block in which it is first a
destination: per destination type those are contiguous ranges of each relation's CSC, and the
sources are already numbered in the union (each layer's sources are a prefix of the input
layer's). Every relation is present, empty where nothing was sampled, so a model written for
NeighborLoader's batches (MLPerf's R-GAT: `model(batch.x_dict, batch.edge_index_dict)`) runs
on ours unchanged.

DGL (`to_dgl_hetero`): (input_nodes, output_nodes, blocks) with DGL heterogeneous blocks
(`dgl.create_block` per layer, every relation), the ids in srcdata/dstdata[dgl.NID], the
features in blocks[0].srcdata["feat"] and the labels in blocks[-1].dstdata["label"] of the
target type, as DGL's `HeteroGraphConv` examples read them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from importlib.util import find_spec
from typing import Any

import torch

from gnnrepro.baselines.dgl_import import import_dgl
from gnnrepro.sampling.block import MiniBatch, TypedBlock

__all__ = ["PyGHeteroBatch", "pyg_hetero_edges", "to_dgl_hetero", "to_pyg_hetero"]

Relation = tuple[str, str, str]


@dataclass
class PyGHeteroBatch:
    """NeighborLoader's heterogeneous batch attributes, where torch_geometric is absent."""

    x_dict: dict[str, torch.Tensor]
    edge_index_dict: dict[Relation, torch.Tensor]
    n_id_dict: dict[str, torch.Tensor]
    num_sampled_nodes_dict: dict[str, list[int]]
    num_sampled_edges_dict: dict[Relation, list[int]]
    e_id_dict: dict[Relation, torch.Tensor] = field(default_factory=dict)
    y: torch.Tensor | None = None
    batch_size: int = 0


def _check(mb: object) -> MiniBatch:
    if not isinstance(mb, MiniBatch) or not mb.is_typed:
        raise TypeError(f"mb must be a typed gnnrepro MiniBatch (a Loader's batch of a "
                        f"TypedDataset), got {type(mb).__name__}")
    if not mb.blocks:
        raise ValueError("mb has no blocks")
    return mb


def pyg_hetero_edges(blocks: list[TypedBlock]) -> tuple[dict[Relation, torch.Tensor],
                                                         dict[Relation, torch.Tensor | None],
                                                         dict[Relation, list[int]]]:
    """Per relation: [2, E] (source, target) edges in the union numbering, their edge ids (None
    where the blocks carry none) and the edges per hop, the seeds' hop first."""
    rels = list(blocks[0].blocks)
    parts: dict[Relation, list[torch.Tensor]] = {rel: [] for rel in rels}
    ids: dict[Relation, list[torch.Tensor]] = {rel: [] for rel in rels}
    per_hop: dict[Relation, list[int]] = {rel: [] for rel in rels}
    reached = {t: 0 for t in blocks[0].src_nodes}
    for tb in reversed(blocks):
        for rel, block in tb.blocks.items():
            lo, hi = reached[rel[2]], tb.num_dst[rel[2]]
            hi = max(lo, hi)
            start, end = int(block.indptr[lo]), int(block.indptr[hi])
            degrees = block.indptr[lo + 1:hi + 1] - block.indptr[lo:hi]
            targets = torch.repeat_interleave(torch.arange(lo, hi, device=block.indptr.device),
                                              degrees, output_size=end - start)
            parts[rel].append(torch.stack([block.indices[start:end], targets]))
            if block.edge_ids is not None:
                ids[rel].append(block.edge_ids[start:end])
            per_hop[rel].append(end - start)
        reached = {t: max(n, tb.num_dst[t]) for t, n in reached.items()}
    edge_index = {rel: torch.cat(p, dim=1) for rel, p in parts.items()}
    edge_ids = {rel: torch.cat(i) if i else None for rel, i in ids.items()}
    return edge_index, edge_ids, per_hop


def _sampled_nodes(blocks: list[TypedBlock]) -> dict[str, list[int]]:
    """Per type the nodes each hop adds, the seeds first (NeighborLoader's num_sampled_nodes)."""
    last = blocks[-1]
    out = {t: [last.num_dst[t]] for t in last.src_nodes}
    for tb in reversed(blocks):
        for t, ids in tb.src_nodes.items():
            out[t].append(ids.numel() - tb.num_dst[t])
    return out


def to_pyg_hetero(mb: MiniBatch) -> Any:
    """`mb` as the heterogeneous NeighborLoader's batch: a torch_geometric HeteroData where
    torch_geometric is installed, else a PyGHeteroBatch with the same attributes."""
    mb = _check(mb)
    edge_index, edge_ids, per_hop = pyg_hetero_edges(mb.blocks)
    n_id = mb.blocks[0].src_nodes
    x = mb.x if isinstance(mb.x, dict) else {}
    sampled = _sampled_nodes(mb.blocks)
    target = next(iter(mb.seeds))
    if find_spec("torch_geometric") is None:
        return PyGHeteroBatch(x, edge_index, dict(n_id), sampled, per_hop,
                              {r: i for r, i in edge_ids.items() if i is not None}, mb.y,
                              mb.seeds[target].numel())
    from torch_geometric.data import HeteroData
    data = HeteroData()
    for t, ids in n_id.items():
        data[t].n_id = ids
        data[t].num_nodes = ids.numel()
        data[t].num_sampled_nodes = sampled[t]
        if t in x:
            data[t].x = x[t]
    for rel, edges in edge_index.items():
        data[rel].edge_index = edges
        data[rel].num_sampled_edges = per_hop[rel]
        if edge_ids[rel] is not None:
            data[rel].e_id = edge_ids[rel]
    if mb.blocks[0].seed_index is not None:  # each seed sampled on its own: PyG's `batch`
        for t, index in mb.blocks[0].seed_index.items():
            data[t].batch = index
    data[target].batch_size = mb.seeds[target].numel()
    if mb.y is not None:
        data[target].y = mb.y
    return data


def to_dgl_hetero(mb: MiniBatch) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor],
                                          list[Any]]:
    """(input_nodes, output_nodes, blocks) of a typed `mb`, blocks input layer first, as DGL's
    DataLoader yields them for a heterograph."""
    mb = _check(mb)
    dgl = import_dgl()
    blocks = []
    for tb in mb.blocks:
        data = {rel: (b.indices, b.edge_dst()) for rel, b in tb.blocks.items()}
        block = dgl.create_block(data, num_src_nodes=tb.num_src, num_dst_nodes=dict(tb.num_dst))
        for t, ids in tb.src_nodes.items():
            block.srcnodes[t].data[dgl.NID] = ids
            block.dstnodes[t].data[dgl.NID] = ids[: tb.num_dst[t]]
        for rel, b in tb.blocks.items():
            if b.edge_ids is not None:
                block.edges[rel].data[dgl.EID] = b.edge_ids
        blocks.append(block)
    if isinstance(mb.x, dict):
        for t, x in mb.x.items():
            blocks[0].srcnodes[t].data["feat"] = x
    target = next(iter(mb.seeds))
    if mb.y is not None:
        blocks[-1].dstnodes[target].data["label"] = mb.y
    return mb.input_nodes, mb.seeds, blocks
