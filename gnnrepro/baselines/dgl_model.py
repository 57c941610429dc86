"""DGLGraphSAGE: the model of DGL's own node-classification example, for the "dgl-native"
pipeline (DGL's whole stack: its DataLoader feeding its model).

As DGL's examples/pytorch/graphsage/node_classification.py writes it: one
`dgl.nn.SAGEConv(aggregator_type="mean")` per layer, ReLU and `nn.Dropout` between layers (none
after the last), DGL's own weight initialisation. It runs on DGL blocks, as DGL's DataLoader
yields them; it also takes gnnrepro Blocks (those of the shared evaluation sampler) and wraps
each as a DGL block over the same CSC arrays, so both stacks are scored by one evaluator.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from gnnrepro.baselines.dgl_import import import_dgl
from gnnrepro.sampling.block import Block

__all__ = ["DGLGraphSAGE"]


def as_dgl_block(dgl: Any, block: Any) -> Any:
    """`block` itself if it is a DGL block; a gnnrepro Block as a DGL block over its CSC."""
    if not isinstance(block, Block):
        return block
    empty = torch.empty(0, dtype=block.indices.dtype, device=block.indices.device)
    return dgl.create_block(("csc", (block.indptr, block.indices, empty)),
                            num_src_nodes=block.num_src, num_dst_nodes=block.num_dst,
                            device=block.indices.device)


class DGLGraphSAGE(nn.Module):
    """`num_layers` DGL SAGEConv('mean') layers, ReLU + nn.Dropout(dropout) between them.

    `forward(blocks, x)`: blocks input layer first (DGL blocks or gnnrepro Blocks) and the
    input nodes' features x; returns logits for the last block's destinations.
    `forward_layer(i, block, h)`: layer i alone with what follows it, so the model is
    evaluated layer-wise (as DGL's example does in its `inference`).
    """

    def __init__(self, in_dim: int, hidden: int, out_dim: int, num_layers: int,
                 dropout: float):
        super().__init__()
        for name, value in (("in_dim", in_dim), ("hidden", hidden), ("out_dim", out_dim),
                            ("num_layers", num_layers)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an int, got {type(value).__name__}")
            if value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        import_dgl()
        from dgl.nn.pytorch import SAGEConv  # after import_dgl: needs its GraphBolt stand-in
        dims = [in_dim] + [hidden] * (num_layers - 1) + [out_dim]
        self.layers = nn.ModuleList(SAGEConv(a, b, "mean") for a, b in zip(dims[:-1], dims[1:]))
        self.dropout = nn.Dropout(dropout)

    @property
    def num_layers(self) -> int:
        return len(self.layers)

    def forward(self, blocks: Sequence[Any], x: torch.Tensor) -> torch.Tensor:
        if len(blocks) != self.num_layers:
            raise ValueError(f"blocks has {len(blocks)} blocks but the model has "
                             f"{self.num_layers} layers")
        h = x
        for i, block in enumerate(blocks):
            h = self.forward_layer(i, block, h)
        return h

    def forward_layer(self, index: int, block: Any, h: torch.Tensor) -> torch.Tensor:
        """Layer `index` on `block` (DGL or gnnrepro), then ReLU and dropout unless last."""
        h = self.layers[index](as_dgl_block(import_dgl(), block), h)
        if index < self.num_layers - 1:
            h = self.dropout(torch.relu(h))
        return h
