"""Ranking metrics of link prediction as OGB's link Evaluator computes them (ogbl-citation2's
MRR, Hits@K): each query's positive score is ranked among its negatives' scores, ties counted
half (the mean of the optimistic and pessimistic ranks)."""
from __future__ import annotations

import torch

__all__ = ["ranks", "mrr_and_hits"]


def ranks(pos: torch.Tensor, neg: torch.Tensor) -> torch.Tensor:
    """float [Q]: the rank of pos[q] among neg[q, :] (1 = best), ties counted half."""
    if pos.dim() != 1 or neg.dim() != 2 or neg.shape[0] != pos.shape[0]:
        raise ValueError(f"pos must be [Q] and neg [Q, K], got {tuple(pos.shape)} and "
                         f"{tuple(neg.shape)}")
    above = (neg > pos[:, None]).sum(1)
    at_least = (neg >= pos[:, None]).sum(1)
    return 0.5 * (above + at_least).double() + 1.0


def mrr_and_hits(pos: torch.Tensor, neg: torch.Tensor,
                 hits_at: tuple[int, ...] = (1, 3, 10)) -> dict[str, float]:
    """{"mrr": mean reciprocal rank, "hits@K": share of queries ranked within K}."""
    r = ranks(pos, neg)
    out = {"mrr": float((1.0 / r).mean())}
    for k in hits_at:
        out[f"hits@{k}"] = float((r <= k).double().mean())
    return out
