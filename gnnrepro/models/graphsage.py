"""GraphSAGE with the mean aggregator on sampled Blocks, in plain torch ops (CPU or CUDA).

Each layer maps a block's source features h [num_src, d] to destination features
`W_self h[:num_dst] + W_neigh mean_{u in N(v)} h[u]` (the bias lives in W_self, as in DGL's
SAGEConv); a destination with no sampled neighbours gets a zero neighbour mean.

The neighbour mean is one `embedding_bag(mode="mean")` over the block's CSC (bags = the
destinations' sampled neighbours, offsets = indptr): no [num_edges, d] message tensor is ever
made, indices are bounds-checked, a multi-edge counts once per copy and an empty bag gives
zeros. It is several times faster than a message gather + index_add_ and than torch's CSR
SpMM (which also needs sorted, distinct columns per row, which sampled blocks do not have),
with results identical to the gather's (measured: benchmarks/NOTES.md, "the neighbour
mean without [E, d] messages"). When the mean is taken before the projection, the
destination rows and the mean share one gradient buffer (gnnrepro.models.aggregate) and the
W_neigh product accumulates onto the self term in one addmm, which saves a pass over the
activations in each backward (measured: benchmarks/NOTES.md, "the model's gradient buffers").
"""
from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from gnnrepro.models.aggregate import dst_rows_and_neighbour_mean, neighbour_mean
from gnnrepro.models.dropout import ReluDropout
from gnnrepro.sampling.block import Block

__all__ = ["GraphSAGE", "SAGEConv"]


def _check_dims(**dims: int) -> None:
    for name, value in dims.items():
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        if value < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")


class SAGEConv(nn.Module):
    """One mean-aggregator GraphSAGE layer on a Block."""

    def __init__(self, in_dim: int, out_dim: int):
        super().__init__()
        _check_dims(in_dim=in_dim, out_dim=out_dim)
        self.fc_self = nn.Linear(in_dim, out_dim)
        self.fc_neigh = nn.Linear(in_dim, out_dim, bias=False)

    @property
    def projects_first(self) -> bool:
        """The mean is linear, so W_neigh is applied before it when that shrinks what is
        aggregated (out_dim < in_dim), else after it."""
        return self.fc_neigh.out_features < self.fc_neigh.in_features

    def combine(self, h_dst: torch.Tensor, neigh_mean: torch.Tensor) -> torch.Tensor:
        """The layer's output from the destinations' own rows and their neighbour mean (of
        rows already projected by fc_neigh when `projects_first`)."""
        if self.projects_first:
            return self.fc_self(h_dst) + neigh_mean
        # W_neigh's product accumulates onto the self term in the matmul (no extra
        # [num_dst, out_dim] sum pass; measured: benchmarks/NOTES.md).
        return torch.addmm(self.fc_self(h_dst), neigh_mean, self.fc_neigh.weight.t())

    def forward(self, block: Block, h: torch.Tensor) -> torch.Tensor:
        """[block.num_src, in_dim] source features -> [block.num_dst, out_dim]."""
        if self.projects_first:
            return self.combine(h[: block.num_dst], neighbour_mean(block, self.fc_neigh(h)))
        return self.combine(*dst_rows_and_neighbour_mean(block, h))


class GraphSAGE(nn.Module):
    """`num_layers` SAGEConv layers with ReLU and dropout between them (none after the last;
    one fused op on the CPU: gnnrepro.models.dropout).

    `forward(blocks, x)` takes the mini-batch's blocks, input layer first, and the input nodes'
    features x [blocks[0].num_src, in_dim]; it returns logits [blocks[-1].num_dst, out_dim].
    """

    def __init__(self, in_dim: int, hidden: int = 256, out_dim: int = 47, num_layers: int = 3,
                 dropout: float = 0.5):
        super().__init__()
        _check_dims(in_dim=in_dim, hidden=hidden, out_dim=out_dim, num_layers=num_layers)
        dims = [in_dim] + [hidden] * (num_layers - 1) + [out_dim]
        self.layers = nn.ModuleList(SAGEConv(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.relu_dropout = ReluDropout(dropout)

    @property
    def num_layers(self) -> int:
        return len(self.layers)

    def forward(self, blocks: Sequence[Block], x: torch.Tensor) -> torch.Tensor:
        if len(blocks) != self.num_layers:
            raise ValueError(f"blocks has {len(blocks)} blocks but the model has "
                             f"{self.num_layers} layers")
        if x.dim() != 2 or x.shape[0] != blocks[0].num_src:
            raise ValueError(f"x must have one row per input node of blocks[0] "
                             f"({blocks[0].num_src}), got shape {tuple(x.shape)}")
        h = x
        for i, (layer, block) in enumerate(zip(self.layers, blocks)):
            h = layer(block, h)
            if i < self.num_layers - 1:
                h = self.relu_dropout(h)
        return h
