"""TypedModel: what R-GCN and R-GAT share, a model whose layers read TypedBlocks.

A typed model is built for a list of relations (source type, name, destination type), the input
width of every node type those relations touch (`in_dims` for types with features), and
optionally learnable embeddings for the types without (gnnrepro.models.embeddings). Its
`forward(blocks, x)` takes a mini-batch's TypedBlocks, input layer first, and x {type: rows of
that type's sources in blocks[0]}; it returns the logits of the `target` type's seeds.
`type_outputs(blocks, x)` returns every type's (link prediction scores a relation's source
type's outputs against its destination type's).

Layer i alone is `forward_layer(i, block, h)` (h: {type: a row per source of that type in
block}; it returns {type: a row per destination}): what forward does for layer i, the
activation after it included, so that layer-wise evaluation can run the model one layer at a
time over full-neighbour blocks. Its layer-0 rows come from `layer_inputs(input_nodes, x)`
(the features, and the embeddings looked up by the input nodes' ids).

Per-relation modules are keyed as PyG's HeteroConv keys its convs ("<src___name___dst>"), so a
layer's state_dict lines up with a HeteroConv of the same layers.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import nn

from gnnrepro.models.embeddings import NodeEmbeddings
from gnnrepro.models.graphsage import _check_dims
from gnnrepro.sampling.block import TypedBlock
from gnnrepro.typed_graph import Relation

__all__ = ["TypedModel", "relation_key"]


def relation_key(rel: Relation) -> str:
    """The module key of relation `rel`: PyG HeteroConv's ("<src___name___dst>")."""
    return f"<{'___'.join(rel)}>"


def _check_relations(relations: object) -> list[Relation]:
    """`relations` as a non-empty list of distinct (src, name, dst) tuples of str, else a
    TypeError/ValueError naming the bad one."""
    if isinstance(relations, (str, bytes)) or not isinstance(relations, Sequence) or not relations:
        raise TypeError("relations must be a non-empty list of (src type, name, dst type) tuples")
    out: list[Relation] = []
    for rel in relations:
        if (not isinstance(rel, (tuple, list)) or len(rel) != 3
                or not all(isinstance(p, str) and p for p in rel)):
            raise TypeError(f"relations must hold (src type, name, dst type) tuples of str, got "
                            f"{rel!r}")
        if any("." in p for p in rel):  # a module key may not hold "."
            raise ValueError(f"relation {tuple(rel)}: names may not contain '.'")
        if tuple(rel) in out:
            raise ValueError(f"relation {tuple(rel)} is given twice")
        out.append(tuple(rel))
    return out


class TypedModel(nn.Module):
    """Base of models on TypedBlocks (see the module doc). A subclass builds its layers, appends
    each layer's input widths {type: dim} to `self.layer_dims`, and defines `forward_layer`."""

    def __init__(self, relations: Sequence[Relation], in_dims: Mapping[str, int], target: str,
                 embeddings: NodeEmbeddings | None = None):
        super().__init__()
        self.relations = _check_relations(relations)
        types = list(dict.fromkeys(t for rel in self.relations for t in (rel[0], rel[2])))
        if not isinstance(in_dims, Mapping):
            raise TypeError(f"in_dims must be a dict {{node type: feature width}}, got "
                            f"{type(in_dims).__name__}")
        if embeddings is not None and not isinstance(embeddings, NodeEmbeddings):
            raise TypeError(f"embeddings must be a gnnrepro NodeEmbeddings, got "
                            f"{type(embeddings).__name__}")
        embedded = embeddings.node_types if embeddings is not None else []
        for name, given in (("in_dims", list(in_dims)), ("embeddings", embedded)):
            unknown = [t for t in given if t not in types]
            if unknown:
                raise ValueError(f"{name} names node type {unknown[0]!r}, which no relation "
                                 f"has (node types: {types})")
        both = [t for t in in_dims if t in embedded]
        if both:
            raise ValueError(f"node type {both[0]!r} has both features (in_dims) and "
                             f"embeddings: give it one")
        missing = [t for t in types if t not in in_dims and t not in embedded]
        if missing:
            raise ValueError(f"node type {missing[0]!r} has neither features (in_dims) nor "
                             f"embeddings")
        _check_dims(**{f"in_dims[{t!r}]": d for t, d in in_dims.items()})
        if target not in types:
            raise ValueError(f"target must be a node type of the relations ({types}), got "
                             f"{target!r}")
        self.node_types = types
        self.target = target
        self.feature_dims = dict(in_dims)
        self.embeddings = embeddings
        self.input_dims = {t: in_dims[t] if t in in_dims else embeddings.dim for t in types}
        self.layer_dims: list[dict[str, int]] = []

    @classmethod
    def for_dataset(cls, dataset: Any, embed_dim: int = 128, **kwargs: Any) -> "TypedModel":
        """The model for a TypedDataset (its graph's relations, `num_features`, `num_classes`
        and `target`), with `embed_dim`-wide NodeEmbeddings for its featureless types;
        `kwargs` go to the model (hidden, num_layers, dropout, ...; `out_dim` and `target`
        replace the dataset's: an encoder's embedding width)."""
        graph = dataset.graph
        used = {t for rel in graph.canonical_relations for t in (rel[0], rel[2])}
        featureless = {t: graph.num_nodes[t] for t in dataset.featureless_types if t in used}
        kwargs = {"out_dim": dataset.num_classes, "target": dataset.target} | kwargs
        return cls(graph.canonical_relations,
                   {t: d for t, d in dataset.num_features.items() if t in used},
                   embeddings=NodeEmbeddings(featureless, embed_dim) if featureless else None,
                   **kwargs)

    @property
    def num_layers(self) -> int:
        return len(self.layer_dims)

    def layer_inputs(self, input_nodes: Mapping[str, torch.Tensor],
                     x: Mapping[str, torch.Tensor] | None) -> dict[str, torch.Tensor]:
        """Layer 0's rows per node type: x's for the featured types, and for the others their
        embeddings of `input_nodes[type]` (the batch's input node ids of that type)."""
        x = {} if x is None else x
        if not isinstance(x, Mapping):
            raise TypeError(f"x must be a dict {{node type: features}} on a typed model, got "
                            f"{type(x).__name__}")
        if not isinstance(input_nodes, Mapping):
            raise TypeError(f"input_nodes must be a dict {{node type: ids}}, got "
                            f"{type(input_nodes).__name__}")
        for t in x:
            if t not in self.feature_dims:
                why = ("has learnable embeddings" if t in self.input_dims else
                       "is not a node type of the model's relations")
                raise ValueError(f"x[{t!r}]: node type {t!r} {why}; x holds the featured types "
                                 f"{list(self.feature_dims)}")
        h = {}
        for t, dim in self.feature_dims.items():
            if t not in x:
                raise ValueError(f"x has no features for node type {t!r} (featured types: "
                                 f"{list(self.feature_dims)})")
            rows = x[t]
            n = input_nodes[t].numel() if t in input_nodes else None
            if (not isinstance(rows, torch.Tensor) or rows.dim() != 2 or rows.shape[1] != dim
                    or (n is not None and rows.shape[0] != n)):
                shape = (tuple(rows.shape) if isinstance(rows, torch.Tensor)
                         else type(rows).__name__)
                raise ValueError(f"x[{t!r}] must be [{'N' if n is None else n}, {dim}] (a row "
                                 f"per input node of type {t!r}), got {shape}")
            # FP16 rows (IGBH's) travel as stored and are cast here, once, on the device.
            dtype = next(self.parameters()).dtype
            h[t] = rows if rows.dtype == dtype else rows.to(dtype)
        if self.embeddings is not None:
            h.update(self.embeddings(input_nodes))
        return h

    def forward(self, blocks: Sequence[TypedBlock],
                x: Mapping[str, torch.Tensor] | None) -> torch.Tensor:
        """Logits [seeds of the target type, out_dim] of a mini-batch's TypedBlocks (input
        layer first) and x {type: rows of blocks[0]'s sources of that type}."""
        return self.type_outputs(blocks, x)[self.target]

    def type_outputs(self, blocks: Sequence[TypedBlock],
                     x: Mapping[str, torch.Tensor] | None) -> dict[str, torch.Tensor]:
        """{type: [its seeds, out_dim]}: the last layer's rows of every type it outputs, from
        the blocks and x as `forward` takes them."""
        if isinstance(blocks, TypedBlock) or not isinstance(blocks, Sequence):
            raise TypeError(f"blocks must be a list of TypedBlocks, got {type(blocks).__name__}")
        if len(blocks) != self.num_layers:
            raise ValueError(f"blocks has {len(blocks)} blocks but the model has "
                             f"{self.num_layers} layers")
        if not isinstance(blocks[0], TypedBlock):
            raise TypeError(f"blocks[0] must be a TypedBlock, got {type(blocks[0]).__name__}")
        h = self.layer_inputs(blocks[0].src_nodes, x)
        for i, block in enumerate(blocks):
            h = self.forward_layer(i, block, h)
        return h

    def forward_layer(self, index: int, block: TypedBlock,
                      h: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        raise NotImplementedError

    def check_layer(self, index: int, block: TypedBlock, h: Mapping[str, torch.Tensor]) -> None:
        """A ValueError/TypeError naming what does not fit layer `index`: the index, a block
        without a relation the model was built for (or with one it was not), or h without a
        type the layer reads or with rows that are not one per source of that type."""
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(f"index must be an int, got {type(index).__name__}")
        if not 0 <= index < self.num_layers:
            raise ValueError(f"index must be a layer in [0, {self.num_layers}), got {index}")
        if not isinstance(block, TypedBlock):
            raise TypeError(f"layer {index}'s block must be a TypedBlock, got "
                            f"{type(block).__name__}")
        for rel in self.relations:
            if rel not in block.blocks:
                raise ValueError(f"layer {index}'s block has no relation {rel}, which the model "
                                 f"was built for")
        for rel in block.blocks:
            if rel not in self.relations:
                raise ValueError(f"layer {index}'s block has relation {rel}, which the model "
                                 f"was not built for (its relations: {self.relations})")
        if not isinstance(h, Mapping):
            raise TypeError(f"h must be a dict {{node type: rows}}, got {type(h).__name__}")
        for t, dim in self.layer_dims[index].items():
            if t not in block.src_nodes:
                raise ValueError(f"layer {index}'s block has no node type {t!r}")
            if t not in h:
                raise ValueError(f"h has no rows for node type {t!r}, which layer {index} reads")
            rows, n = h[t], block.src_nodes[t].numel()
            if not isinstance(rows, torch.Tensor) or rows.shape != (n, dim):
                shape = (tuple(rows.shape) if isinstance(rows, torch.Tensor)
                         else type(rows).__name__)
                raise ValueError(f"h[{t!r}] must be [{n}, {dim}] (layer {index}: a row per "
                                 f"source of type {t!r} in its block), got {shape}")
