"""Dataset: the one in-memory form every loader returns (graph, features, labels, splits).

Also holds `symmetric_csc`, the edge-list -> undirected CSCGraph conversion every loader uses, so
all datasets share one graph convention: symmetric, deduplicated, neighbours sorted ascending,
int32 indices whenever the node count allows.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from gnnrepro.graph import CSCGraph

__all__ = ["ARRAYS", "Dataset", "symmetric_csc"]

# The arrays a dataset is made of, by name: what is cached, shared and mapped.
ARRAYS = ("indptr", "indices", "features", "labels", "train_idx", "val_idx", "test_idx")


@dataclass(repr=False)
class Dataset:
    """A node-classification dataset; `params` records what produced it (scale, seed, source)."""

    graph: CSCGraph
    features: torch.Tensor  # float32 [N, F]
    labels: torch.Tensor  # int64 [N], -1 where unlabeled
    train_idx: torch.Tensor  # int64
    val_idx: torch.Tensor  # int64
    test_idx: torch.Tensor  # int64
    num_classes: int
    name: str
    params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = self.graph.num_nodes
        if self.features.dtype != torch.float32 or self.features.dim() != 2:
            raise ValueError(f"features must be float32 [N, F], got {self.features.dtype} "
                             f"{tuple(self.features.shape)}")
        if self.features.shape[0] != n or self.labels.shape != (n,):
            raise ValueError(f"features {tuple(self.features.shape)} and labels "
                             f"{tuple(self.labels.shape)} do not match num_nodes={n}")
        if self.labels.dtype != torch.int64:
            raise ValueError(f"labels must be int64, got {self.labels.dtype}")
        for split in ("train_idx", "val_idx", "test_idx"):
            idx = getattr(self, split)
            if idx.dtype != torch.int64 or idx.dim() != 1:
                raise ValueError(f"{split} must be a 1-D int64 tensor, got {idx.dtype} "
                                 f"{tuple(idx.shape)}")

    @classmethod
    def from_arrays(cls, arrays: dict[str, torch.Tensor], *, num_classes: int, name: str,
                    params: dict[str, Any]) -> "Dataset":
        """The dataset of `arrays` (named as ARRAYS); the graph is validated, as on any load."""
        return cls(graph=CSCGraph(arrays["indptr"], arrays["indices"]),
                   features=arrays["features"], labels=arrays["labels"],
                   train_idx=arrays["train_idx"], val_idx=arrays["val_idx"],
                   test_idx=arrays["test_idx"], num_classes=num_classes, name=name,
                   params=params)

    def arrays(self) -> dict[str, torch.Tensor]:
        """Every array of the dataset by name, in ARRAYS order (the graph's two first)."""
        return {"indptr": self.graph.indptr, "indices": self.graph.indices,
                "features": self.features, "labels": self.labels, "train_idx": self.train_idx,
                "val_idx": self.val_idx, "test_idx": self.test_idx}

    @property
    def num_nodes(self) -> int:
        return self.graph.num_nodes

    @property
    def num_features(self) -> int:
        return self.features.shape[1]

    def nbytes(self) -> int:
        """Bytes of graph + features + labels: what a trainer must hold or stream."""
        return (self.graph.nbytes() + self.features.numel() * self.features.element_size()
                + self.labels.numel() * self.labels.element_size())

    def summary(self) -> dict[str, Any]:
        """What a result records about its dataset (JSON-ready): name, sizes, bytes, params."""
        return {"name": self.name, "num_nodes": self.graph.num_nodes,
                "num_edges": self.graph.num_edges, "num_train": self.train_idx.numel(),
                "num_features": self.num_features, "num_classes": self.num_classes,
                "bytes": self.nbytes(), "params": dict(self.params)}

    def __repr__(self) -> str:
        return (f"Dataset(name={self.name!r}, num_nodes={self.num_nodes}, "
                f"num_edges={self.graph.num_edges}, num_features={self.num_features}, "
                f"num_classes={self.num_classes}, train/val/test={self.train_idx.numel()}/"
                f"{self.val_idx.numel()}/{self.test_idx.numel()}, params={self.params})")


def symmetric_csc(src: np.ndarray, dst: np.ndarray, num_nodes: int) -> CSCGraph:
    """Undirected CSCGraph of an edge list: adds every reverse edge, drops duplicates.

    Works on one int64 key `dst * N + src` per directed edge, sorted in place, so the cost is one
    sort and the extra memory about 8 bytes per directed edge. A self loop is kept once.
    """
    n = int(num_nodes)
    if n >= 3_037_000_499:  # n * n must fit in int64
        raise ValueError(f"num_nodes={n} is too large for int64 edge keys")
    e = src.size
    if e and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n):
        raise ValueError(f"edge list holds node ids outside [0, num_nodes={n})")
    keys = np.empty(2 * e, dtype=np.int64)
    for part, (a, b) in ((keys[:e], (dst, src)), (keys[e:], (src, dst))):
        part[:] = a
        part *= n
        part += b
    keys.sort()
    if keys.size > 1:
        dup = keys[1:] == keys[:-1]
        if dup.any():
            keys = keys[np.concatenate(([True], ~dup))]
        del dup
    indptr = np.searchsorted(keys, np.arange(n + 1, dtype=np.int64) * n)
    if n:
        np.remainder(keys, n, out=keys)
    indices = keys.astype(np.int32 if n < 2**31 else np.int64)
    return CSCGraph(torch.from_numpy(indptr), torch.from_numpy(indices), validate=False)
