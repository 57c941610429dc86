"""A MiniBatch as DGL's DataLoader hands one over: (input_nodes, output_nodes, blocks).

The blocks are DGL blocks over the same CSC arrays (no copy of the structure), with the node
ids DGL puts in `srcdata[dgl.NID]` / `dstdata[dgl.NID]`, the edge ids in `edata[dgl.EID]`
where the sampler gives them (FusedSampler(edge_ids=True), as the edge-prediction drop-in's
does), the input features in `blocks[0].srcdata["feat"]` and the labels in
`blocks[-1].dstdata["label"]`, where DGL's node-classification example reads them; `dgl.nn`
layers (SAGEConv, GATConv, GraphConv) run on them unchanged.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

from gnnrepro.baselines.dgl_import import import_dgl
from gnnrepro.baselines.dgl_model import as_dgl_block
from gnnrepro.interop.view import BatchView
from gnnrepro.sampling.block import Block, MiniBatch

__all__ = ["dgl_batches", "to_dgl"]


def to_dgl(mb: MiniBatch) -> tuple[torch.Tensor, torch.Tensor, list[Any]]:
    """(input_nodes, output_nodes, blocks) of `mb`, blocks input layer first, as DGL's
    DataLoader yields them (a batch of DGL's own blocks keeps them)."""
    if not isinstance(mb, MiniBatch):
        raise TypeError(f"mb must be a gnnrepro MiniBatch (what a Loader yields), got "
                        f"{type(mb).__name__}")
    dgl = import_dgl()
    blocks = [as_dgl_block(dgl, block) for block in mb.blocks]
    for dgl_block, block in zip(blocks, mb.blocks):
        if isinstance(block, Block):  # ours get the ids; DGL's own (its loader's) carry them
            dgl_block.srcdata[dgl.NID] = block.src_nodes
            dgl_block.dstdata[dgl.NID] = block.dst_nodes
            if block.edge_ids is not None:  # the block's edges are in CSC order, as its ids
                dgl_block.edata[dgl.EID] = block.edge_ids
    if mb.x is not None:
        blocks[0].srcdata["feat"] = mb.x
    if mb.y is not None:
        blocks[-1].dstdata["label"] = mb.y
    return mb.input_nodes, mb.seeds, blocks


def dgl_batches(loader: Iterable[MiniBatch]) -> "BatchView":
    """`loader` as DGL's DataLoader: each iteration an epoch of (input_nodes, output_nodes,
    blocks) triples, `len()` its batches."""
    return BatchView(loader, to_dgl)
