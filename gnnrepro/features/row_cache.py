"""ClockCache: a fixed-capacity cache of feature rows with CLOCK (second-chance) eviction.

Why CLOCK: a hit only sets a bit (no list to reorder, so lookups of a whole batch are a few
vectorised tensor ops), and it keeps rows that are reused within a sweep of the hand, which is
what neighbourhoods of high-degree nodes are. Batches insert many rows at once; the hand
sweeps as it would for one row at a time: rows with the bit set get a second chance (the bit
is cleared), the first rows without it are replaced, new rows start with the bit set.
Invariant, checked by the tests: slot_of[node] == s >= 0 exactly when owner[s] == node, so a
lookup never returns a row stored for another node.
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
        self.hand = 0

    def nbytes(self) -> int:
        return (self.data.numel() * self.data.element_size() + self.owner.numel() * 8
                + self.ref.numel() + self.slot_of.numel() * 4)

    def lookup(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(hit positions in `ids`, their cache slots); marks the hits as recently used."""
        if self.capacity == 0 or ids.numel() == 0:
            empty = torch.empty(0, dtype=torch.int64)
            return empty, empty
        slots = self.slot_of[ids]
        hit = torch.nonzero(slots >= 0).squeeze(1)
        slots = slots[hit].long()
        self.ref[slots] = True
        return hit, slots

    def read(self, slots: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
        """Rows of `slots` into out[:len(slots)]."""
        _ops.ops.gather_rows(self.data, slots, out)
        return out[: slots.numel()]

    def insert(self, ids: torch.Tensor, rows: torch.Tensor) -> None:
        """Store rows[i] for ids[i] (distinct ids; those already cached are skipped); beyond
        capacity, the first `capacity` are kept."""
        if self.capacity == 0 or ids.numel() == 0:
            return
        fresh = self.slot_of[ids] < 0
        if not bool(fresh.all()):
            ids, rows = ids[fresh], rows[fresh]
        k = min(ids.numel(), self.capacity)
        if k == 0:
            return
        ids, rows = ids[:k], rows[:k]
        victims = self._victims(k)
        old = self.owner[victims]
        old = old[old >= 0]
        self.slot_of[old] = -1
        self.owner[victims] = ids
        self.slot_of[ids] = victims.to(torch.int32)
        self.data[victims] = rows
        self.ref[victims] = True

    def _victims(self, k: int) -> torch.Tensor:
        """The next k slots the hand evicts, clearing the bits of the slots it passes."""
        c = self.capacity
        taken: list[torch.Tensor] = []
        need = k
        while need:
            order = (torch.arange(c) + self.hand) % c
            free = order[~self.ref[order]]
            if free.numel() >= need:
                pick = free[:need]
                last = int(pick[-1])
                passed = order[: (last - self.hand) % c + 1]
                self.ref[passed] = False
                self.hand = (last + 1) % c
                taken.append(pick)
                break
            self.ref[:] = False  # a whole sweep: every bit cleared, the hand back where it was
            taken.append(free)
            self.ref[free] = True  # taken this call: not to be taken again by the next sweep
            need -= free.numel()
        return torch.cat(taken)
