"""StageTimer: where a training step's time goes - sample, extract, forward, backward.

Two views per stage, because a prefetching pipeline hides work behind compute:

* work_s: seconds spent doing the stage, measured where it runs.
* exposed_s: seconds of that stage the training loop actually waited for.

forward (model + loss) and backward (backward pass + optimizer step) run in the training loop,
so their work and exposed times are the same; on CUDA they are timed with CUDA events recorded
on the current stream and resolved once per epoch (one sync per epoch, none per step), on the
CPU with time.perf_counter.

sample and extract (feature gather + host-to-device copy) happen behind `next(iterator)`; their
work is measured by the Loader where it runs (`Loader.work_seconds()`, workers included):

* In-process loading (workers=0): both stages run inside `next()`, so they are fully exposed:
  exposed sample = its work, exposed extract = the rest of the time `next()` blocked.
  With CUDA the host-to-device copy is only issued there (asynchronously, on side streams);
  its device time is not in extract, and shows up in forward if compute had to wait for it.
* Worker processes: the time `next()` blocked cannot be split between the two stages, so both
  exposed_s are None and the combined wait is `StageTimes.wait_s`; work_s is still measured.
"""
from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch

from gnnrepro.sampling.block import MiniBatch

__all__ = ["STAGES", "StageTime", "StageTimes", "StageTimer"]

STAGES = ("sample", "extract", "forward", "backward")
_COMPUTE = ("forward", "backward")


@dataclass
class StageTime:
    """One stage's seconds in one epoch; None where it cannot be measured (see module doc)."""

    work_s: float | None
    exposed_s: float | None


@dataclass
class StageTimes:
    """One epoch's stage times, and `wait_s`: the total time `next(iterator)` blocked."""

    stages: dict[str, StageTime]
    wait_s: float

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
        self._cpu_s = {name: 0.0 for name in _COMPUTE}
        self._events: dict[str, list[tuple[torch.cuda.Event, torch.cuda.Event]]] = {
            name: [] for name in _COMPUTE}

    def next_batch(self, iterator: Iterator[MiniBatch]) -> MiniBatch:
        """`next(iterator)`, adding the time it blocked to the epoch's wait (StopIteration
        passes through)."""
        start = time.perf_counter()
        try:
            return next(iterator)
        finally:
            self._wait_s += time.perf_counter() - start

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
            self._events[name].append((start, end))
        else:
            t0 = time.perf_counter()
            yield
            self._cpu_s[name] += time.perf_counter() - t0

    def finish_epoch(self, work: dict[str, float]) -> StageTimes:
        """The epoch's stage times, given the loader's sample/extract work seconds (on CUDA:
        one synchronize, then the events are read); the timer is then reset."""
        compute = dict(self._cpu_s)
        if self.cuda:
            torch.cuda.synchronize()
            for name, pairs in self._events.items():
                compute[name] = sum(s.elapsed_time(e) for s, e in pairs) / 1000.0
        if self.in_process:
            sample = StageTime(work["sample"], work["sample"])
            extract = StageTime(work["extract"], max(self._wait_s - work["sample"], 0.0))
        else:
            sample, extract = StageTime(work["sample"], None), StageTime(work["extract"], None)
        stages = {"sample": sample, "extract": extract,
                  **{name: StageTime(s, s) for name, s in compute.items()}}
        result = StageTimes(stages, self._wait_s)
        self._reset()
        return result
