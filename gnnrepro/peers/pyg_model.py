"""PyG's example GraphSAGE, as the PyG peer trains it and as a PyG user brings it to our loader.

SAGEConv (mean) layers on the whole sampled subgraph, ReLU and dropout between them; it takes
(x, edge_index) or (x, adj_t) and returns a row per node, the seeds' first. torch_geometric is
imported when the model is made, so this module imports anywhere.
"""
from __future__ import annotations

from typing import Any

import torch
from torch import nn

__all__ = ["PyGSAGE"]


class PyGSAGE(nn.Module):
    """`num_layers` torch_geometric SAGEConv layers from in_dim to out_dim through hidden."""

    def __init__(self, in_dim: int, hidden: int, out_dim: int, num_layers: int,
                 dropout: float):
        super().__init__()
        from torch_geometric.nn import SAGEConv
        dims = [in_dim] + [hidden] * (num_layers - 1) + [out_dim]
        self.layers = nn.ModuleList(SAGEConv(a, b) for a, b in zip(dims, dims[1:]))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, edges: Any) -> torch.Tensor:
        h = x
        for i, layer in enumerate(self.layers):
            h = layer(h, edges)
            if i < len(self.layers) - 1:
                h = self.dropout(torch.relu(h))
        return h
