"""The four stages of a training step and `Span`, one piece of work on the timeline.

Loaders record the sample and extract spans of their batches where that work runs; the training
loop's profiler (gnnrepro.training.profiler) records the trainer's, so a plot can show which
work overlapped which.
"""
from __future__ import annotations

from typing import NamedTuple

__all__ = ["STAGES", "Span"]

STAGES = ("sample", "extract", "forward", "backward")


class Span(NamedTuple):
    """One piece of work on the timeline: batch `batch` (index within its epoch) spent
    [start, end] (time.perf_counter seconds: CLOCK_MONOTONIC on Linux, shared by all
    processes) in `stage` on `lane` (who did it: "trainer", "loader", "worker 0", "stream 1",
    ...)."""

    batch: int
    stage: str
    lane: str
    start: float
    end: float
