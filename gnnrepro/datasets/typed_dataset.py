"""TypedDataset: a heterogeneous node-classification dataset (ogbn-mag's, IGBH's shape).

A TypedGraph, features per node type (types without features get learnable embeddings in the
model: gnnrepro.models), and labels and splits of one target type (the classified one, e.g.
"paper"). The homogeneous Dataset is its one-type case (`TypedDataset.from_dataset`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from gnnrepro.datasets.dataset import Dataset
from gnnrepro.typed_graph import DEFAULT_NODE_TYPE, TypedGraph

__all__ = ["TypedDataset"]

FEATURE_DTYPES = (torch.float32, torch.float16)


@dataclass(repr=False)
class TypedDataset:
    """Node classification of `target` nodes on a typed graph."""

    graph: TypedGraph
    features: dict[str, torch.Tensor]  # per featured node type: float32 or float16 [N_t, F]
    labels: torch.Tensor  # int64 [N_target], -1 where unlabeled
    target: str
    train_idx: torch.Tensor  # int64 ids of the target type
    val_idx: torch.Tensor
    test_idx: torch.Tensor
    num_classes: int
    name: str
    params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        g = self.graph
        if not isinstance(g, TypedGraph):
            raise TypeError(f"graph must be a TypedGraph, got {type(g).__name__}")
        g.node_type(self.target)
        for ntype, x in self.features.items():
            g.node_type(ntype)
            if x.dtype not in FEATURE_DTYPES or x.dim() != 2 or x.shape[0] != g.num_nodes[ntype]:
                raise ValueError(f"features[{ntype!r}] must be float32 or float16 "
                                 f"[{g.num_nodes[ntype]}, F], got {x.dtype} {tuple(x.shape)}")
        n = g.num_nodes[self.target]
        if self.labels.dtype != torch.int64 or self.labels.shape != (n,):
            raise ValueError(f"labels must be int64 [{n}] (the {self.target!r} nodes), got "
                             f"{self.labels.dtype} {tuple(self.labels.shape)}")
        for split in ("train_idx", "val_idx", "test_idx"):
            idx = getattr(self, split)
            if idx.dtype != torch.int64 or idx.dim() != 1:
                raise ValueError(f"{split} must be a 1-D int64 tensor, got {idx.dtype} "
                                 f"{tuple(idx.shape)}")
            if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= n):
                raise ValueError(f"{split} must hold {self.target!r} ids in [0, {n})")

    @classmethod
    def from_dataset(cls, dataset: Dataset) -> "TypedDataset":
        """A homogeneous Dataset as its one-type case (the same tensors)."""
        t = DEFAULT_NODE_TYPE
        return cls(TypedGraph.from_csc(dataset.graph), {t: dataset.features}, dataset.labels, t,
                   dataset.train_idx, dataset.val_idx, dataset.test_idx, dataset.num_classes,
                   dataset.name, dict(dataset.params))

    @property
    def featureless_types(self) -> list[str]:
        """Node types without features: a model learns an embedding for each of their nodes."""
        return [t for t in self.graph.node_types if t not in self.features]

    @property
    def num_features(self) -> dict[str, int]:
        return {t: x.shape[1] for t, x in self.features.items()}

    def summary(self) -> dict[str, Any]:
        """What a result records about its dataset (JSON-ready): name, sizes, bytes, params."""
        return {"name": self.name, "target": self.target, "num_nodes": dict(self.graph.num_nodes),
                "num_edges": {"/".join(r): n for r, n in self.graph.num_edges.items()},
                "num_train": self.train_idx.numel(), "num_features": self.num_features,
                "num_classes": self.num_classes, "bytes": self.nbytes(),
                "params": dict(self.params)}

    def nbytes(self) -> int:
        """Bytes of graph + features + labels: what a trainer must hold or stream."""
        return (self.graph.nbytes() + self.labels.numel() * 8
                + sum(x.numel() * x.element_size() for x in self.features.values()))

    def __repr__(self) -> str:
        return (f"TypedDataset({self.name!r}, target={self.target!r}, "
                f"num_nodes={self.graph.num_nodes}, features={self.num_features}, "
                f"num_classes={self.num_classes})")
