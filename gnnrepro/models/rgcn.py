"""R-GCN on TypedBlocks, as DGL's and PyG's ogbn-mag examples build it.

Each layer gives every node type t the rows

    W_root,t h_t[:num_dst_t] + b_t + sum over relations r into t of W_r mean_{u in N_r(v)} h_r[u]

(h_r: the rows of r's source type): a mean over each relation's sampled in-neighbours with that
relation's own weight, summed over the relations into t, plus a self (root) weight and bias per
type. A relation (or a destination) with no sampled edge adds nothing. ReLU and dropout between
layers (one fused op on the CPU: gnnrepro.models.dropout); the last layer's rows of the target
type are the logits.

The means are `embedding_bag(mode="mean")` over each relation block's CSC (bags = a
destination's sampled neighbours, offsets = indptr), as GraphSAGE's: no [num_edges, d] message
tensor, bounds-checked indices, zeros for an empty bag, and on the CPU a backward without a sort
(gnnrepro.models.aggregate). Each
relation's product accumulates onto the root term in one addmm.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from torch import nn

from gnnrepro.models.aggregate import neighbour_mean
from gnnrepro.models.dropout import ReluDropout
from gnnrepro.models.embeddings import NodeEmbeddings
from gnnrepro.models.graphsage import _check_dims
from gnnrepro.models.typed_model import TypedModel, relation_key
from gnnrepro.sampling.block import TypedBlock
from gnnrepro.typed_graph import Relation

__all__ = ["RGCN", "RelGraphConv"]


class RelGraphConv(nn.Module):
    """One R-GCN layer: a weight per relation (`rel[relation_key]`, no bias) and a root weight
    with bias per node type (`root[type]`); `in_dims` are the node types' input widths."""

    def __init__(self, relations: Sequence[Relation], in_dims: Mapping[str, int], out_dim: int):
        super().__init__()
        self.relations = list(relations)
        self.rel = nn.ModuleDict({relation_key(r): nn.Linear(in_dims[r[0]], out_dim, bias=False)
                                  for r in self.relations})
        self.root = nn.ModuleDict({t: nn.Linear(d, out_dim) for t, d in in_dims.items()})

    def forward(self, block: TypedBlock, h: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """{type: [block.num_dst[type], out_dim]} from h {type: a row per source}."""
        out = {t: root(h[t][: block.num_dst[t]]) for t, root in self.root.items()}
        for rel, linear in zip(self.relations, self.rel.values()):
            b = block.blocks[rel]
            if b.num_edges == 0:  # no sampled neighbour: a zero mean, nothing to add
                continue
            mean = neighbour_mean(b, h[rel[0]])
            out[rel[2]] = torch.addmm(out[rel[2]], mean, linear.weight.t())
        return out


class RGCN(TypedModel):
    """`num_layers` RelGraphConv layers over `relations` (hidden width `hidden`, the last
    `out_dim`), ReLU and dropout between them; logits of the `target` type's seeds.

    `in_dims`: the featured node types' input widths; the others need `embeddings`
    (NodeEmbeddings, learnt with the model). Defaults: DGL's and PyG's ogbn-mag examples (2
    layers, hidden 64, dropout 0.5, 349 venues)."""

    def __init__(self, relations: Sequence[Relation], in_dims: Mapping[str, int],
                 hidden: int = 64, out_dim: int = 349, num_layers: int = 2,
                 dropout: float = 0.5, *, target: str = "paper",
                 embeddings: NodeEmbeddings | None = None):
        super().__init__(relations, in_dims, target, embeddings)
        _check_dims(hidden=hidden, out_dim=out_dim, num_layers=num_layers)
        dims = dict(self.input_dims)
        layers = []
        for i in range(num_layers):
            width = out_dim if i == num_layers - 1 else hidden
            layers.append(RelGraphConv(self.relations, dims, width))
            self.layer_dims.append(dims)
            dims = {t: width for t in dims}
        self.layers = nn.ModuleList(layers)
        self.relu_dropout = ReluDropout(dropout)

    def forward_layer(self, index: int, block: TypedBlock,
                      h: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Layer `index` on `block`: {type: a row per destination of that type} from h {type:
        a row per source}, ReLU and dropout after it but the last."""
        self.check_layer(index, block, h)
        out = self.layers[index](block, h)
        if index < self.num_layers - 1:
            out = {t: self.relu_dropout(rows) for t, rows in out.items()}
        return out
