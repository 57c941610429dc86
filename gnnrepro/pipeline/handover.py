"""The hand-over: a sampled batch with its gathered rows becomes a MiniBatch on the device.

On the CPU the batch's `x` *is* its staging slot's rows (no copy): the slot is leased to the
batch and returns to the ring only when the last tensor using that memory (x or any view of it)
is freed, so `x` stays valid for as long as the caller keeps it. At most `prefetch` slots are
leased at a time; a batch handed over while that many are still held (a caller keeping
batches) gets a private copy of its rows instead, so holding batches never stalls the
pipeline. Why not always copy: the copy (a fresh allocation of the batch's rows, page faults
included) costs about as much as sampling and gathering the batch (benchmarks/NOTES.md).

With CUDA the batch is copied from pinned memory on one of `streams` side streams; its slot is
released once that copy has completed (`release_after(event)`), and the consumer's stream waits
for the copy's event before it uses the batch.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from gnnrepro.features.device_rows import DeviceRows
from gnnrepro.features.staging import StagingSlot
from gnnrepro.pipeline.spans import Span
from gnnrepro.sampling.block import MiniBatch

__all__ = ["DeviceHandover", "WorkLog"]


class WorkLog:
    """The current epoch's sample and extract seconds and its timeline spans."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Start a new epoch's log (the previous epoch's containers stay with their readers)."""
        self.work = {"sample": 0.0, "extract": 0.0}
        self.spans: list[Span] = []

    def record(self, b: int, stage: str, lane: str, start: float, end: float,
               counts: bool = True) -> None:
        """Span (b, stage, lane, start, end). Its seconds count as sample work for "sample"
        and as extract work otherwise (a copy is part of extraction), unless `counts` is
        False (drawn only, like a device's reads behind a gather)."""
        self.spans.append(Span(b, stage, lane, start, end))
        if counts:
            self.work["sample" if stage == "sample" else "extract"] += end - start


class _Leases:
    """Counts the staging slots leased to handed-over CPU batches (thread-safe: any thread may
    free the last reference to a batch's x)."""

    def __init__(self, limit: int):
        self.limit = limit
        self.held = 0
        self._lock = threading.Lock()

    def try_take(self) -> bool:
        with self._lock:
            if self.held >= self.limit:
                return False
            self.held += 1
            return True

    def give_back(self) -> None:
        with self._lock:
            self.held -= 1


class _Lease:
    """Exposes a slot's rows to numpy; releases the slot when the last array/tensor dies.

    `torch.from_numpy(np.asarray(lease))` makes a tensor whose storage keeps the numpy array,
    and so this object, alive; views of the tensor share that storage, so the slot is released
    exactly when nothing can read it any more.
    """

    def __init__(self, rows: torch.Tensor, slot: StagingSlot, leases: _Leases):
        self.__array_interface__ = rows.numpy().__array_interface__
        self._rows, self._slot, self._leases = rows, slot, leases

    def __del__(self) -> None:
        self._slot.release()
        self._leases.give_back()


def _pinned(t: torch.Tensor) -> torch.Tensor:
    """A CPU `t` in page-locked memory (torch's caching host allocator), so its H2D copy is
    async; a GPU tensor (a GPU sampler's block) as it is."""
    return t if t.is_cuda or t.is_pinned() else t.pin_memory()


class DeviceHandover:
    """Attaches rows and labels to sampled batches and moves them to `device` (see the module
    doc). `device_rows` gathers on the GPU instead of from staging slots (feature_source 'uva'
    or 'device'); `log` records the work and spans; `split_rows` turns a batch's gathered rows
    into what the model takes (FeatureStore.split_rows: per node type on a typed graph)."""

    def __init__(self, device: torch.device, labels: torch.Tensor, streams: int, prefetch: int,
                 device_rows: DeviceRows | None, log: WorkLog,
                 split_rows: Callable[[torch.Tensor, Any], Any]):
        self.device, self.labels, self.log = device, labels, log
        self.device_rows = device_rows
        self.split_rows = split_rows
        self._leases = _Leases(prefetch)
        self._streams = ([torch.cuda.Stream(device) for _ in range(streams)]
                         if device.type == "cuda" else [])

    def on_device(self, mb: MiniBatch,
                  b: int) -> tuple[MiniBatch, torch.cuda.Event | None]:
        """feature_source 'uva' / 'device': the GPU gathers the rows, on the current stream
        (so the consumer needs no event); blocks and labels move there too."""
        start = time.perf_counter()
        out = mb.to(self.device, non_blocking=True)
        out.x = self.device_rows.gather(out.input_nodes)
        out.y = self.labels[mb.seed_ids.cpu()].to(self.device, non_blocking=True)
        self.log.record(b, "extract", "loader", start, time.perf_counter())
        return out, None

    def transfer(self, mb: MiniBatch, x: torch.Tensor, slot: StagingSlot,
                 b: int) -> tuple[MiniBatch, torch.cuda.Event | None]:
        """Attach x (the slot's rows) and y, and start moving the batch to the device.

        Returns the batch and, with CUDA, the event that marks its copies complete. The slot
        is released after that event (CUDA), when x dies (CPU, leased) or now (CPU, copied).
        """
        start = time.perf_counter()
        y = self.labels[mb.seed_ids.cpu()]
        if self.device.type == "cpu":
            if self._leases.try_take():
                x = torch.from_numpy(np.asarray(_Lease(x, slot, self._leases)))
            else:  # `prefetch` slots are held by batches the caller keeps: copy instead
                x = x.clone()
                slot.release()
            mb.x, mb.y = self.split_rows(x, mb.input_nodes), y
            self.log.record(b, "extract", "loader", start, time.perf_counter())
            return mb, None
        mb.x, mb.y = x, y
        host = mb.apply(_pinned)  # input_nodes is blocks[0].src_nodes: pinned, moved once
        k = b % len(self._streams)
        with torch.cuda.stream(self._streams[k]):
            out = host.to(self.device, non_blocking=True)
            out.x = self.split_rows(out.x, mb.input_nodes)
            event = torch.cuda.Event()
            event.record(self._streams[k])
        slot.release_after(event)
        self.log.record(b, "copy", f"stream {k}", start, time.perf_counter())
        return out, event

    def handover(self, mb: MiniBatch, event: torch.cuda.Event | None) -> MiniBatch:
        """Make the consumer's current stream wait for the batch's copies, then give it out.

        record_stream tells the caching allocator that the current stream uses memory that was
        allocated on a copy stream, so it is not reused before the consumer is done with it.
        """
        if event is not None:
            stream = torch.cuda.current_stream(self.device)
            stream.wait_event(event)
            for t in mb.tensors():
                t.record_stream(stream)
        return mb
