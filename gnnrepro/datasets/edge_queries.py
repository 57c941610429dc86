"""EdgeQueries: what a link-prediction dataset holds beside its graph, homogeneous
(LinkDataset) or one relation of a typed graph (TypedLinkDataset): the training edges and the
val/test queries with their fixed negatives, checked once here for both."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

__all__ = ["EDGE_ARRAYS", "EdgeQueries"]

#: The fields, in the order the caches write them.
EDGE_ARRAYS = ("train_src", "train_dst", "val_src", "val_dst", "val_neg", "test_src",
               "test_dst", "test_neg")


@dataclass(repr=False, kw_only=True)
class EdgeQueries:
    """The training edges (int64 [E_t] `train_src` -> `train_dst`) and the val/test queries
    (int64 [Q] `*_src`, `*_dst`; int64 [Q, K] `*_neg`: the negative destinations each query's
    true one is ranked against)."""

    train_src: torch.Tensor
    train_dst: torch.Tensor
    val_src: torch.Tensor
    val_dst: torch.Tensor
    val_neg: torch.Tensor
    test_src: torch.Tensor
    test_dst: torch.Tensor
    test_neg: torch.Tensor

    @property
    def num_train_edges(self) -> int:
        return self.train_src.numel()

    def check_edge_queries(self) -> None:
        """ValueError naming the first array that is not int64 of matching shapes."""
        for split in ("train", "val", "test"):
            src, dst = getattr(self, f"{split}_src"), getattr(self, f"{split}_dst")
            for key, t in ((f"{split}_src", src), (f"{split}_dst", dst)):
                if t.dtype != torch.int64 or t.dim() != 1:
                    raise ValueError(f"{key} must be a 1-D int64 tensor, got {t.dtype} "
                                     f"{tuple(t.shape)}")
            if src.shape != dst.shape:
                raise ValueError(f"{split}_src and {split}_dst differ in length: "
                                 f"{src.numel()} vs {dst.numel()}")
            if split != "train":
                neg = getattr(self, f"{split}_neg")
                if neg.dtype != torch.int64 or neg.dim() != 2 or neg.shape[0] != src.numel():
                    raise ValueError(f"{split}_neg must be int64 [{src.numel()}, K], got "
                                     f"{neg.dtype} {tuple(neg.shape)}")

    def edge_counts(self) -> dict[str, Any]:
        """The summary's edge and query counts and negatives per query."""
        return {"num_train_edges": self.num_train_edges, "num_val_edges": self.val_src.numel(),
                "num_test_edges": self.test_src.numel(), "num_negatives": self.val_neg.shape[1]}

    def edge_counts_text(self) -> str:
        """The counts as the reprs show them."""
        return (f"train/val/test edges={self.num_train_edges}/{self.val_src.numel()}/"
                f"{self.test_src.numel()}, negatives={self.val_neg.shape[1]}")
