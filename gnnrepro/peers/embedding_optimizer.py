"""What the typed peers' models share: a learnt embedding table per featureless node type (as
wide as our R-GCN's: TypedModel.for_dataset), each layer's input widths, and the optimizer a
user of `nn.Embedding(sparse=True)` writes, Adam for the dense weights and torch's SparseAdam
for the tables, stepped as one."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

__all__ = ["EMBED_DIM", "DenseAndSparseAdam", "embedding_tables", "layer_widths"]

#: The width of the featureless types' embedding tables.
EMBED_DIM = 128


def embedding_tables(num_nodes: Mapping[str, int], in_dims: Mapping[str, int]) -> nn.ModuleDict:
    """A sparse-gradient EMBED_DIM-wide table per node type without features."""
    return nn.ModuleDict({t: nn.Embedding(n, EMBED_DIM, sparse=True)
                          for t, n in num_nodes.items() if t not in in_dims})


def layer_widths(num_nodes: Mapping[str, int], in_dims: Mapping[str, int], hidden: int,
                 out_dim: int, num_layers: int) -> list[tuple[dict[str, int], int]]:
    """Per layer: each node type's input width (features' or EMBED_DIM, then the layer
    before's) and the layer's output width (hidden, the last out_dim)."""
    dims, layers = {t: in_dims.get(t, EMBED_DIM) for t in num_nodes}, []
    for i in range(num_layers):
        width = out_dim if i == num_layers - 1 else hidden
        layers.append((dims, width))
        dims = dict.fromkeys(dims, width)
    return layers


class DenseAndSparseAdam(torch.optim.Optimizer):
    """Adam over a model's dense parameters and SparseAdam over its sparse embeddings, stepped
    as one (what a PyG or DGL user writes for `nn.Embedding(sparse=True)` tables)."""

    def __init__(self, model: nn.Module, lr: float):
        sparse = [m.weight for m in model.modules()
                  if isinstance(m, nn.Embedding) and m.sparse]
        ids = {id(p) for p in sparse}
        dense = [p for p in model.parameters() if id(p) not in ids]
        self.parts = [torch.optim.Adam(dense, lr=lr)] + (
            [torch.optim.SparseAdam(sparse, lr=lr)] if sparse else [])
        super().__init__([p for part in self.parts for group in part.param_groups
                          for p in group["params"]], {"lr": lr})

    def zero_grad(self, set_to_none: bool = True) -> None:
        for part in self.parts:
            part.zero_grad(set_to_none=set_to_none)

    def step(self, closure: Any = None) -> None:
        for part in self.parts:
            part.step()
