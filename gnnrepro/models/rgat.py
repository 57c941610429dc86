"""R-GAT on TypedBlocks: MLPerf's GNN reference model, and its training settings as a preset.

MLPerf's R-GAT (Training v4.0-v5.x, on IGBH) is PyG's `HeteroConv(aggr="sum")` over one
`GATConv(in, hidden // heads, heads, add_self_loops=False)` per relation, layer after layer,
with leaky_relu and dropout between layers and a final `Linear(hidden, num_classes)` on the
target type. RelGATConv is that GATConv on one relation's Block, in plain torch:

    x_src = lin_src(h_src)                                 (lin_src = lin_dst = lin when the
    a_e   = leaky_relu(att_src . x_src[u] + att_dst . lin_dst(h_dst)[v], 0.2)   widths match)
    alpha = softmax of a over each destination v's sampled in-edges e = (u, v), per head
    out_v = concat over heads of sum_e alpha_e x_src[u]  +  bias

A destination without in-edges gets the bias alone, as in PyG. The softmax is taken with segment
ops over the block's CSC (indptr: a destination's edges are contiguous; the max is subtracted
first, and 1e-16 added to the sum, as PyG's softmax does). The weighted sum is one
`embedding_bag(mode="sum", per_sample_weights=alpha)` over the heads' bags: no
[num_edges, heads, C] message tensor. att_dst . lin_dst(h) is computed as h @ (lin_dst^T
att_dst), which needs no projection of the destinations. A relation whose source type is no
relation's destination has no rows after layer 0, and acts in layer 0 only (MLPerf's reference
drops it from later layers too). Parameters and module keys are PyG's (convs.{layer}.convs.
<src___name___dst>.{lin,lin_src,lin_dst,att_src,att_dst,bias}, lin): the state_dict of
MLPerf's reference model loads into RGAT and back (on IGBH exactly; the reference also holds
unused later-layer weights of a relation that acts in layer 0 only).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from gnnrepro.models.dropout import check_dropout
from gnnrepro.models.embeddings import NodeEmbeddings
from gnnrepro.models.graphsage import _check_dims
from gnnrepro.models.typed_model import TypedModel, relation_key
from gnnrepro.sampling.block import Block, TypedBlock
from gnnrepro.typed_graph import Relation

__all__ = ["RGAT", "RGAT_MLPERF", "RGATPreset", "RelGATConv", "edge_softmax"]


def edge_softmax(logits: torch.Tensor, indptr: torch.Tensor,
                 edge_dst: torch.Tensor) -> torch.Tensor:
    """Softmax of `logits` [num_edges, heads] over each destination's in-edges, which are
    contiguous as the CSC `indptr` gives them (`edge_dst`: each edge's destination)."""
    top = torch.segment_reduce(logits.detach(), "max", offsets=indptr, unsafe=True)
    exp = (logits - top[edge_dst]).exp()
    total = torch.segment_reduce(exp, "sum", offsets=indptr, unsafe=True)
    return exp / (total[edge_dst] + 1e-16)


def _weighted_sum(x: torch.Tensor, indices: torch.Tensor, indptr: torch.Tensor,
                  alpha: torch.Tensor) -> torch.Tensor:
    """[num_dst, heads * C]: per head h, sum over each destination's edges e of
    alpha[e, h] x[indices[e], h]. One embedding_bag over head-major bags (bag h * num_dst + v
    holds head h's rows of v's sources), x [num_src, heads * C] read as [heads * num_src, C]."""
    num_src, heads = x.shape[0], alpha.shape[1]
    num_edges, num_dst = indices.numel(), indptr.numel() - 1
    channels = x.shape[1] // heads
    table = x.view(num_src, heads, channels).transpose(0, 1).reshape(heads * num_src, channels)
    head = torch.arange(heads, device=indices.device).unsqueeze(1)
    bag_indices = (indices.unsqueeze(0) + head * num_src).reshape(-1)
    offsets = torch.cat([(indptr[:-1].unsqueeze(0) + head * num_edges).reshape(-1),
                         indptr.new_full((1,), heads * num_edges)])
    out = nn.functional.embedding_bag(bag_indices, table, offsets, mode="sum",
                                      per_sample_weights=alpha.t().reshape(-1),
                                      include_last_offset=True)
    return out.view(heads, num_dst, channels).transpose(0, 1).reshape(num_dst, heads * channels)


class RelGATConv(nn.Module):
    """PyG's GATConv((in_src, in_dst), out_channels, heads, add_self_loops=False) on one
    relation's Block (see the module doc); one shared `lin` when in_src == in_dst, as GATConv
    with an int in_channels has."""

    def __init__(self, in_src: int, in_dst: int, out_channels: int, heads: int,
                 negative_slope: float = 0.2):
        super().__init__()
        _check_dims(in_src=in_src, in_dst=in_dst, out_channels=out_channels, heads=heads)
        self.heads, self.out_channels, self.negative_slope = heads, out_channels, negative_slope
        width = heads * out_channels
        if in_src == in_dst:
            self.lin = nn.Linear(in_src, width, bias=False)
            self.lin_src = self.lin_dst = None
        else:
            self.lin = None
            self.lin_src = nn.Linear(in_src, width, bias=False)
            self.lin_dst = nn.Linear(in_dst, width, bias=False)
        self.att_src = nn.Parameter(torch.empty(1, heads, out_channels))
        self.att_dst = nn.Parameter(torch.empty(1, heads, out_channels))
        self.bias = nn.Parameter(torch.empty(width))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """GATConv's initialisation: glorot weights and attention vectors, zero bias."""
        for lin in (self.lin, self.lin_src, self.lin_dst):
            if lin is not None:
                nn.init.xavier_uniform_(lin.weight)
        bound = math.sqrt(6.0 / (self.heads + self.out_channels))  # PyG's glorot on [H, C]
        nn.init.uniform_(self.att_src, -bound, bound)
        nn.init.uniform_(self.att_dst, -bound, bound)
        nn.init.zeros_(self.bias)

    def forward(self, block: Block, h_src: torch.Tensor, h_dst: torch.Tensor) -> torch.Tensor:
        """[block.num_dst, heads * out_channels] from a row per source (h_src) and per
        destination type source (h_dst; its first num_dst rows are the destinations)."""
        n = block.num_dst
        if block.num_edges == 0:  # no in-edge anywhere: the bias alone
            return self.bias.expand(n, -1)
        heads, channels = self.heads, self.out_channels
        lin_src = self.lin if self.lin is not None else self.lin_src
        lin_dst = self.lin if self.lin is not None else self.lin_dst
        x_src = lin_src(h_src)
        a_src = (x_src.view(-1, heads, channels) * self.att_src).sum(-1)
        att_dst = torch.einsum("hci,hc->ih", lin_dst.weight.view(heads, channels, -1),
                               self.att_dst[0])
        a_dst = h_dst[:n] @ att_dst
        edge_dst = block.edge_dst()
        logits = nn.functional.leaky_relu(a_src[block.indices] + a_dst[edge_dst],
                                          self.negative_slope)
        alpha = edge_softmax(logits, block.indptr, edge_dst)
        return _weighted_sum(x_src, block.indices, block.indptr, alpha) + self.bias


class HeteroGATLayer(nn.Module):
    """One R-GAT layer, PyG's HeteroConv(aggr="sum"): a RelGATConv per relation
    (`convs[relation_key]`), summed into each destination type."""

    def __init__(self, relations: Sequence[Relation], in_dims: Mapping[str, int],
                 out_channels: int, heads: int):
        super().__init__()
        self.relations = list(relations)
        self.convs = nn.ModuleDict({
            relation_key(r): RelGATConv(in_dims[r[0]], in_dims[r[2]], out_channels, heads)
            for r in self.relations})

    def forward(self, block: TypedBlock, h: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        out: dict[str, torch.Tensor] = {}
        for rel, conv in zip(self.relations, self.convs.values()):
            rows = conv(block.blocks[rel], h[rel[0]], h[rel[2]])
            out[rel[2]] = rows if rel[2] not in out else out[rel[2]] + rows
        return out


class RGAT(TypedModel):
    """MLPerf's R-GAT (see the module doc): `num_layers` HeteroGATLayers of `heads` heads
    (hidden = heads x per-head width), leaky_relu and dropout between them, then
    `lin` (Linear(hidden, out_dim)) on the `target` type.

    `in_dims`: the featured node types' input widths; the others need `embeddings`
    (NodeEmbeddings). RGAT_MLPERF.build makes the reference configuration."""

    def __init__(self, relations: Sequence[Relation], in_dims: Mapping[str, int],
                 hidden: int = 512, out_dim: int = 2983, num_layers: int = 3,
                 dropout: float = 0.2, *, heads: int = 4, target: str = "paper",
                 embeddings: NodeEmbeddings | None = None):
        super().__init__(relations, in_dims, target, embeddings)
        _check_dims(hidden=hidden, out_dim=out_dim, num_layers=num_layers, heads=heads)
        if hidden % heads:
            raise ValueError(f"hidden ({hidden}) must be a multiple of heads ({heads})")
        self.dropout = check_dropout(dropout)
        dims = dict(self.input_dims)
        convs = []
        for _ in range(num_layers):
            active = [r for r in self.relations if r[0] in dims and r[2] in dims]
            self.layer_dims.append({t: dims[t] for r in active for t in (r[0], r[2])})
            convs.append(HeteroGATLayer(active, dims, hidden // heads, heads))
            dims = {r[2]: hidden for r in active}
        if target not in dims:
            raise ValueError(f"target {target!r} gets no rows from the last layer: it is no "
                             f"destination of a relation active there")
        self.convs = nn.ModuleList(convs)
        self.lin = nn.Linear(hidden, out_dim)

    def forward_layer(self, index: int, block: TypedBlock,
                      h: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Layer `index` on `block`: {destination type: a row per destination} from h {type: a
        row per source}; leaky_relu and dropout after it, or `lin` after the last."""
        self.check_layer(index, block, h)
        out = self.convs[index](block, h)
        if index == self.num_layers - 1:
            return {t: self.lin(rows) for t, rows in out.items()}
        return {t: nn.functional.dropout(nn.functional.leaky_relu(rows), self.dropout,
                                         self.training)
                for t, rows in out.items()}


@dataclass(frozen=True)
class RGATPreset:
    """A named R-GAT configuration with its training settings; `fanouts` input layer first
    (this project's order: PyG's num_neighbors reversed)."""

    hidden: int
    heads: int
    num_layers: int
    fanouts: tuple[int, ...]
    batch_size: int
    lr: float
    dropout: float

    def build(self, relations: Sequence[Relation], in_dims: Mapping[str, int],
              num_classes: int, *, target: str = "paper",
              embeddings: NodeEmbeddings | None = None) -> RGAT:
        """The preset's RGAT over `relations`, for `num_classes` classes of `target`."""
        return RGAT(relations, in_dims, self.hidden, num_classes, self.num_layers, self.dropout,
                    heads=self.heads, target=target, embeddings=embeddings)


#: MLPerf's R-GAT reference (Training v4.0-v5.x, IGBH): hidden 512 in 4 heads, 3 layers,
#: num_neighbors [15, 10, 5] from the seeds, 1024 seeds per rank, Adam lr 1e-3, dropout 0.2.
RGAT_MLPERF = RGATPreset(hidden=512, heads=4, num_layers=3, fanouts=(5, 10, 15),
                         batch_size=1024, lr=1e-3, dropout=0.2)
