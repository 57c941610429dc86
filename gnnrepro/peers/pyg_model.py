"""PyG's example GraphSAGE, as the PyG peer trains it and as a PyG user brings it to our loader,
and its heterogeneous form, as the PyG peer trains it on a typed graph.

SAGEConv (mean) layers on the whole sampled subgraph, ReLU and dropout between them; it takes
(x, edge_index) or (x, adj_t) and returns a row per node, the seeds' first. The heterogeneous
one has a SAGEConv per relation, summed into each destination type (HeteroConv, as
`to_hetero(..., aggr="sum")` builds it in PyG's ogbn-mag example). torch_geometric is imported
when a model is made, so this module imports anywhere.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import nn

from gnnrepro.peers.embedding_optimizer import embedding_tables, layer_widths

__all__ = ["PyGHeteroSAGE", "PyGSAGE"]


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


class PyGHeteroSAGE(nn.Module):
    """`num_layers` HeteroConv layers of a SAGEConv per relation (aggr "sum" over the relations
    into a type), from each type's input width (its features', `in_dims`, or its learnt
    embedding's, sparse gradients, for the types without features) through
    `hidden` to `out_dim`; forward(batch) gives the `target` seeds' rows of a NeighborLoader
    batch of a HeteroData whose relations are `adj_t`."""

    def __init__(self, relations: Sequence[tuple[str, str, str]], num_nodes: Mapping[str, int],
                 in_dims: Mapping[str, int], hidden: int, out_dim: int, num_layers: int,
                 dropout: float, target: str):
        super().__init__()
        from torch_geometric.nn import HeteroConv, SAGEConv
        self.embeddings = embedding_tables(num_nodes, in_dims)
        self.layers = nn.ModuleList(
            HeteroConv({rel: SAGEConv((dims[rel[0]], dims[rel[2]]), width) for rel in relations},
                       aggr="sum")
            for dims, width in layer_widths(num_nodes, in_dims, hidden, out_dim, num_layers))
        self.dropout = nn.Dropout(dropout)
        self.target = target

    def forward(self, batch: Any) -> torch.Tensor:
        h = {t: batch[t].x for t in batch.node_types if "x" in batch[t]}
        h |= {t: table(batch[t].n_id) for t, table in self.embeddings.items()}
        for i, layer in enumerate(self.layers):
            h = layer(h, batch.adj_t_dict)
            if i < len(self.layers) - 1:
                h = {t: self.dropout(torch.relu(rows)) for t, rows in h.items()}
        return h[self.target][:batch[self.target].batch_size]
