"""ClockCache: a fixed-capacity cache of feature rows with CLOCK (second-chance) eviction.

Why CLOCK: a hit only sets a bit (no list to reorder), and it keeps rows that are reused within
a sweep of the hand, which is what neighbourhoods of high-degree nodes are. Batches insert many
rows at once; the hand sweeps as it would for one row at a time: rows with the bit set get a
second chance (the bit is cleared), the first rows without it are replaced, new rows start with
the bit set. The work is done in C++ (csrc/features/clock_cache.h), on the tensors held here,
so that DiskFeatureStore's per-batch call can use the cache without returning to Python.
Invariant, checked by the tests: slot_of[node] == s >= 0 exactly when owner[s] == node, so a
lookup never returns a row stored for another node (the C++ also checks owner on every hit).
"""
from __future__ import annotations

import torch

from gnnrepro import _ops

__all__ = ["ClockCache"]


class ClockCache:
    """Up to `capacity` rows of a [num_nodes, dim] `dtype` table, looked up by node id."""

    def __init__(self, capacity: int, num_nodes: int, dim: int, dtype: torch.dtype):
        if capacity < 0:
            raise ValueError(f"capacity must be >= 0, got {capacity}")
        self.capacity = capacity
        self.data = torch.empty((capacity, dim), dtype=dtype)
        self.owner = torch.full((capacity,), -1, dtype=torch.int64)
        self.ref = torch.zeros(capacity, dtype=torch.bool)
        # Only allocated when the cache can hold something: 4 bytes per node otherwise wasted.
        self.slot_of = torch.full((num_nodes if capacity else 0,), -1, dtype=torch.int32)
        self.state = _ops._C.ClockCache(self.data.view(torch.uint8), self.owner, self.ref,
                                        self.slot_of)

    @property
    def hand(self) -> int:
        """The next slot the hand looks at."""
        return self.state.hand

    def nbytes(self) -> int:
        return (self.data.numel() * self.data.element_size() + self.owner.numel() * 8
                + self.ref.numel() + self.slot_of.numel() * 4)

    def lookup(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(hit positions in `ids`, their cache slots); marks the hits as recently used."""
        return self.state.lookup(ids)

    def insert(self, ids: torch.Tensor, rows: torch.Tensor) -> None:
        """Store rows[i] for ids[i] (distinct ids; those already cached are skipped); beyond
        capacity, the first `capacity` are kept."""
        if rows.dtype != self.data.dtype:
            raise TypeError(f"rows must be {self.data.dtype}, got {rows.dtype}")
        if self.capacity == 0 or ids.numel() == 0:
            return
        self.state.insert(ids, rows.contiguous().view(torch.uint8))
