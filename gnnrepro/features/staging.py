"""StagingRing: reusable (pinned) host buffers that gathered features pass through to the GPU.

Why: allocating a pinned buffer per mini-batch costs a cudaHostAlloc (milliseconds, and it
serialises with the GPU), and a pageable one makes the host-to-device copy synchronous and slow.
A ring of a few fixed buffers, each handed out only when its previous batch no longer needs it,
costs neither. A slot is busy from `acquire()` until `release()`, or until the event given to
`release_after(event)` (e.g. a CUDA event recorded after the copy out of the slot) completes.

A ring in shared memory (worker processes write into it) is one [slots, max_rows, dim] tensor
sized for the largest possible batch. Any other ring may start its slots smaller
(`initial_rows`) and grows a slot, once, when a batch needs more rows (`StagingSlot.reserve`):
on a typed graph the bound can be tens of GB a slot while batches use a tenth of it.
"""
from __future__ import annotations

import math
import threading
import time
from typing import Protocol

import torch

from gnnrepro.checks import check_bool, check_int
from gnnrepro.pinning import pin_in_place

__all__ = ["StagingRing", "StagingSlot"]

# How often a waiting acquire() re-checks the events of slots released with release_after().
_POLL_S = 0.0005


def _shared_empty(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    """An uninitialised tensor in shared memory whose pages are committed only when written
    (until pinned: page-locking commits them all): slots are sized for the largest possible
    batch, and `empty().share_memory_()` would copy (so commit) all of it in every rank."""
    storage = torch.UntypedStorage._new_shared(math.prod(shape) * dtype.itemsize)
    return torch.empty(0, dtype=dtype).set_(storage, 0, shape)


class Event(Protocol):
    """Anything with a non-blocking completion check, such as torch.cuda.Event."""

    def query(self) -> bool: ...


class StagingSlot:
    """One buffer of a StagingRing: `buffer` is [rows, dim]; `reserve(rows)` first, then write
    the first rows you need."""

    def __init__(self, ring: "StagingRing", index: int, buffer: torch.Tensor):
        self.ring = ring
        self.index = index
        self.buffer = buffer

    def reserve(self, rows: int) -> torch.Tensor:
        """The slot's buffer with room for `rows` rows: grown (re-allocated, while the slot is
        held, so nothing reads the old one) where it is smaller and the ring may grow;
        ValueError where a batch needs more rows than the ring's bound allows."""
        return self.ring._reserve(self, rows)

    def release(self) -> None:
        """Return the slot to the ring now; it may be handed out again at once."""
        self.ring._release(self, None)

    def release_after(self, event: Event) -> None:
        """Return the slot once `event.query()` is True (e.g. its device copy has finished)."""
        if not callable(getattr(event, "query", None)):
            raise TypeError(f"event must have a query() method, got {type(event).__name__}")
        self.ring._release(self, event)

    def __repr__(self) -> str:
        return f"StagingSlot(index={self.index}, shape={tuple(self.buffer.shape)})"


class StagingRing:
    """`slots` buffers of [max_rows, dim] `dtype`, allocated once; acquire() hands out the
    lowest-numbered free one, so a ring used one batch at a time writes (and so commits the
    pages of) only the slots it needs at once, and reuses the ones most recently in cache.

    `pin=True` page-locks them when CUDA is available (silently pageable otherwise).
    `share=True` puts them in shared memory (pinned in place), so worker processes can gather
    straight into them; the ring's bookkeeping itself stays in the process that created it.
    `acquire()` is thread-safe.
    """

    def __init__(self, slots: int, max_rows: int, dim: int, dtype: torch.dtype = torch.float32,
                 pin: bool = True, *, share: bool = False, initial_rows: int | None = None):
        for name, value in (("slots", slots), ("max_rows", max_rows), ("dim", dim)):
            check_int(name, value, 1)
        if initial_rows is not None:
            check_int("initial_rows", initial_rows, 1)
        if not isinstance(dtype, torch.dtype):
            raise TypeError(f"dtype must be a torch.dtype, got {type(dtype).__name__}")
        check_bool("pin", pin)
        check_bool("share", share)
        cuda = pin and torch.cuda.is_available()
        self.max_rows, self.dim, self.dtype = max_rows, dim, dtype
        self.buffers: torch.Tensor | None = None  # the shared ring's one tensor
        if share:
            self.buffers = _shared_empty((slots, max_rows, dim), dtype)
            self.pinned = cuda and pin_in_place(self.buffers)
            self.slots = [StagingSlot(self, i, self.buffers[i]) for i in range(slots)]
        else:
            self.pinned = cuda
            rows = max_rows if initial_rows is None else min(initial_rows, max_rows)
            self.slots = [StagingSlot(self, i, self._empty(rows)) for i in range(slots)]
        self._events: list[Event | None] = [None] * slots  # pending release of a busy slot
        self._busy = [False] * slots
        self._cond = threading.Condition()

    @property
    def num_busy(self) -> int:
        """Slots not available to acquire() right now."""
        with self._cond:
            return sum(self._busy[i] and not self._completed(i) for i in range(len(self.slots)))

    def acquire(self, timeout: float | None = 30.0) -> StagingSlot:
        """The lowest-numbered free slot, marked busy; waits up to `timeout` s (None: forever).

        Raises TimeoutError if every slot stays busy that long, which usually means slots are
        acquired but never released, or more batches are in flight than the ring has slots.
        """
        if timeout is not None and (isinstance(timeout, bool) or
                                    not isinstance(timeout, (int, float)) or timeout < 0):
            raise ValueError(f"timeout must be None or a number >= 0, got {timeout!r}")
        deadline = None if timeout is None else time.monotonic() + timeout
        n = len(self.slots)
        with self._cond:
            while True:
                for i in range(n):
                    if not self._busy[i] or self._completed(i):
                        self._busy[i], self._events[i] = True, None
                        return self.slots[i]
                wait = None if deadline is None else deadline - time.monotonic()
                if wait is not None and wait <= 0:
                    raise TimeoutError(
                        f"all {n} staging slots are still busy after {timeout} s: release each "
                        "acquired slot (release() or release_after(event)) once its batch has "
                        "been copied out, or use a ring with more slots")
                if any(e is not None for e in self._events):  # events do not notify: poll
                    wait = _POLL_S if wait is None else min(wait, _POLL_S)
                self._cond.wait(wait)

    def _empty(self, rows: int) -> torch.Tensor:
        return torch.empty((rows, self.dim), dtype=self.dtype, pin_memory=self.pinned)

    def _reserve(self, slot: StagingSlot, rows: int) -> torch.Tensor:
        have = slot.buffer.shape[0]
        if rows <= have:
            return slot.buffer
        if rows > self.max_rows or self.buffers is not None:
            raise ValueError(f"a batch needs {rows} staging rows but a slot holds at most "
                             f"{have if self.buffers is not None else self.max_rows} (the "
                             "bound on a batch's input nodes is wrong for this sampler)")
        slot.buffer = self._empty(min(self.max_rows, max(rows, have + have // 2)))
        return slot.buffer

    def _completed(self, i: int) -> bool:
        """Whether busy slot i's release event has completed (False if it has none yet)."""
        event = self._events[i]
        return event is not None and bool(event.query())

    def _release(self, slot: StagingSlot, event: Event | None) -> None:
        with self._cond:
            if not self._busy[slot.index] or self._events[slot.index] is not None:
                raise RuntimeError(f"staging slot {slot.index} is not held: released twice?")
            if event is None:
                self._busy[slot.index] = False
            else:
                self._events[slot.index] = event
            self._cond.notify()

    def __repr__(self) -> str:
        return (f"StagingRing(slots={len(self.slots)}, max_rows={self.max_rows}, dim={self.dim}, "
                f"dtype={self.dtype}, shared={self.buffers is not None}, pinned={self.pinned}, "
                f"busy={self.num_busy})")
