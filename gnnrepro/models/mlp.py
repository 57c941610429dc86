"""MLP: the graph-free baseline, to show what neighbour aggregation adds over node features."""
from __future__ import annotations

import torch
from torch import nn

from gnnrepro.models.dropout import ReluDropout
from gnnrepro.models.graphsage import _check_dims

__all__ = ["MLP"]


class MLP(nn.Module):
    """`num_layers` Linear layers with ReLU and dropout between them; forward(x_seeds) -> logits."""

    def __init__(self, in_dim: int, hidden: int = 256, out_dim: int = 47, num_layers: int = 3,
                 dropout: float = 0.5):
        super().__init__()
        _check_dims(in_dim=in_dim, hidden=hidden, out_dim=out_dim, num_layers=num_layers)
        dims = [in_dim] + [hidden] * (num_layers - 1) + [out_dim]
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.relu_dropout = ReluDropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x
        for i, layer in enumerate(self.layers):
            h = layer(h)
            if i < len(self.layers) - 1:
                h = self.relu_dropout(h)
        return h
