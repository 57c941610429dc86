"""The ids a run evaluates when it evaluates a fixed subset (`eval_ids`): the same for every
pipeline, peer and machine count given the same ids and seed, as PyG's products example scores
a sampled subset; pure torch, so that a peer's process imports it without the extension."""
from __future__ import annotations

import torch

__all__ = ["eval_subset"]


def eval_subset(ids: torch.Tensor, limit: int | None, seed: int) -> torch.Tensor:
    """`ids` if `limit` is None or `ids` holds at most `limit`, else `limit` of them drawn
    with `seed`, sorted."""
    if limit is None or ids.numel() <= limit:
        return ids
    generator = torch.Generator().manual_seed(seed)
    return ids[torch.randperm(ids.numel(), generator=generator)[:limit]].sort().values
