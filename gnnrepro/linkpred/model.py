"""The link scorer of OGB's ogbl-citation2 baselines: an MLP on the element-wise product of
the two endpoints' embeddings (the encoder is any node model, e.g. GraphSAGE with
out_dim = the embedding size)."""
from __future__ import annotations

import torch
from torch import nn

__all__ = ["LinkPredictor"]


class LinkPredictor(nn.Module):
    """score(h_src, h_dst) = MLP(h_src * h_dst): `num_layers` Linear layers, ReLU and dropout
    between them, one logit per pair (broadcasting over leading dimensions)."""

    def __init__(self, dim: int, hidden: int = 256, num_layers: int = 3, dropout: float = 0.0):
        super().__init__()
        if num_layers < 1:
            raise ValueError(f"num_layers must be >= 1, got {num_layers}")
        dims = [dim] + [hidden] * (num_layers - 1) + [1]
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.dropout = nn.Dropout(dropout)

    def forward(self, h_src: torch.Tensor, h_dst: torch.Tensor) -> torch.Tensor:
        h = h_src * h_dst
        for i, layer in enumerate(self.layers):
            h = layer(h)
            if i < len(self.layers) - 1:
                h = self.dropout(torch.relu(h))
        return h.squeeze(-1)
