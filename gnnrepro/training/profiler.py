"""StageTimer: the training loop's profiler, where a training step's time goes - sample, extract, forward, backward.

Two views per stage, because a prefetching pipeline hides work behind compute:

* work_s: seconds spent doing the stage, measured where it runs.
* exposed_s: seconds of that stage the training loop actually waited for.

forward (model + loss) and backward (backward pass + optimizer step) run in the training loop,
so their work and exposed times are the same; on CUDA they are timed with CUDA events recorded
on the current stream and resolved at the epoch's end (two syncs per epoch: the timeline anchor
before the first batch, the read-out after the last; none per step), on the CPU with
time.perf_counter.

sample and extract (feature gather + host-to-device copy) happen behind `next(iterator)`; their
work is measured by the Loader where it runs (`Loader.work_seconds()`, workers included):

* In-process loading (workers=0): both stages run inside `next()`, so they are fully exposed:
  exposed sample = its work, exposed extract = the rest of the time `next()` blocked.
  With CUDA the host-to-device copy is only issued there (asynchronously, on side streams);
  its device time is in no stage: if compute had to wait for it, the wait lies between the
  previous step's end and this forward's start (a gap on the "trainer (GPU)" timeline lane).
* Worker processes: the time `next()` blocked cannot be split between the two stages, so both
  exposed_s are None and the combined wait is `StageTimes.wait_s`; work_s is still measured.

Timeline: every stage of every batch is also kept as a `Span` (batch, stage, lane, start, end)
on the time.perf_counter clock (CLOCK_MONOTONIC on Linux, shared by all processes), so a plot
can show which work overlapped which. The loader records its spans; the timer records the
trainer's (waits, forward, backward). On CUDA, forward and backward spans are when the GPU ran
them: their events are placed on the host clock through an anchor event recorded, and waited
for (one synchronize per epoch), before the epoch's first batch is fetched.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch

#: Why a stage's waited time can exceed its work (in-process loading): the wait for next()
#: also covers the loader's own time around the stage, such as building the batch.
WAIT_ABOVE_WORK = ("the wait includes the loader's own time around the stage (building the "
                   "batch), so it can exceed the work")

from gnnrepro.pipeline.spans import STAGES, Span
from gnnrepro.sampling.block import MiniBatch

__all__ = ["StageTime", "StageTimes", "StageTimer", "reduce_stages"]

_COMPUTE = ("forward", "backward")


def reduce_stages(stage_dicts: list[dict[str, dict[str, float | None]]],
                  reduce: Callable[[list[float]], float]) -> dict[str, dict[str, float | None]]:
    """Combine several `StageTimes.to_dict()` results (epochs, ranks) stage by stage with
    `reduce` (statistics.median, statistics.fmean, ...); a value that is None in any of them
    (not measurable in that pipeline) stays None."""
    out: dict[str, dict[str, float | None]] = {}
    for stage in STAGES:
        out[stage] = {}
        for key in ("work_s", "exposed_s"):
            values = [d[stage][key] for d in stage_dicts]
            out[stage][key] = None if any(v is None for v in values) else reduce(values)
    return out


@dataclass
class StageTime:
    """One stage's seconds in one epoch; None where it cannot be measured (see module doc)."""

    work_s: float | None
    exposed_s: float | None


@dataclass
class StageTimes:
    """One epoch's stage times, `wait_s` (the total time `next(iterator)` blocked) and the
    trainer's spans (waits, forward, backward per batch)."""

    stages: dict[str, StageTime]
    wait_s: float
    spans: list[Span] = field(default_factory=list)

    def to_dict(self) -> dict[str, dict[str, float | None]]:
        """{stage: {"work_s": ..., "exposed_s": ...}} for the four stages, in order."""
        return {name: {"work_s": t.work_s, "exposed_s": t.exposed_s}
                for name, t in self.stages.items()}


class StageTimer:
    """Times the stages of the steps of one epoch at a time; `finish_epoch()` returns them.

    `in_process` says whether sampling and extraction run in this process (workers=0), i.e.
    inside `next()`, which is what lets the wait be split between them.
    """

    def __init__(self, device: torch.device, in_process: bool):
        self.cuda = device.type == "cuda"
        self.in_process = in_process
        self._reset()

    def _reset(self) -> None:
        self._wait_s = 0.0
        self._batch = -1  # index of the current batch within the epoch
        self._cpu_s = {name: 0.0 for name in _COMPUTE}
        self._spans: list[Span] = []
        self._anchor: tuple[torch.cuda.Event, float] | None = None
        self._events: list[tuple[int, str, torch.cuda.Event, torch.cuda.Event]] = []

    def next_batch(self, iterator: Iterator[MiniBatch]) -> MiniBatch:
        """`next(iterator)`, adding the time it blocked to the epoch's wait (StopIteration
        passes through)."""
        if self.cuda and self._anchor is None:
            anchor = torch.cuda.Event(enable_timing=True)
            anchor.record()
            anchor.synchronize()  # the stream is idle: the event's time is this host time
            self._anchor = (anchor, time.perf_counter())
        start = time.perf_counter()
        try:
            mb = next(iterator)
        finally:
            end = time.perf_counter()
            self._wait_s += end - start
        self._batch += 1
        self._spans.append(Span(self._batch, "wait", "trainer", start, end))
        return mb

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time the block as compute stage `name` ("forward" or "backward")."""
        if name not in _COMPUTE:
            raise ValueError(f"name must be one of {_COMPUTE}, got {name!r}")
        if self.cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            yield
            end.record()
            self._events.append((self._batch, name, start, end))
        else:
            t0 = time.perf_counter()
            yield
            t1 = time.perf_counter()
            self._cpu_s[name] += t1 - t0
            self._spans.append(Span(self._batch, name, "trainer", t0, t1))

    def finish_epoch(self, work: dict[str, float]) -> StageTimes:
        """The epoch's stage times, given the loader's sample/extract work seconds (on CUDA:
        one synchronize, then the events are read); the timer is then reset."""
        compute = dict(self._cpu_s)
        if self.cuda and self._anchor is not None:
            torch.cuda.synchronize()
            anchor, anchor_s = self._anchor
            for batch, name, start, end in self._events:
                begin_s = anchor_s + anchor.elapsed_time(start) / 1000.0
                run_s = start.elapsed_time(end) / 1000.0
                compute[name] += run_s
                self._spans.append(Span(batch, name, "trainer (GPU)", begin_s, begin_s + run_s))
        if self.in_process:
            sample = StageTime(work["sample"], work["sample"])
            extract = StageTime(work["extract"], max(self._wait_s - work["sample"], 0.0))
        else:
            sample, extract = StageTime(work["sample"], None), StageTime(work["extract"], None)
        stages = {"sample": sample, "extract": extract,
                  **{name: StageTime(s, s) for name, s in compute.items()}}
        result = StageTimes(stages, self._wait_s, list(self._spans))
        self._reset()
        return result
