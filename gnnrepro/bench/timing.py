"""Side-by-side timing: warm-up, then passes interleaved across contenders, then medians.

Each contender runs a whole pass over the inputs back to back (its steady state, as in a
training loop), passes alternate between contenders, and the order rotates every round, so
drift in machine state (other load, frequency) spreads evenly over contenders while one
contender's memory traffic does not pollute another's individual calls.
"""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any


def time_interleaved(contenders: dict[str, Callable[[Any], Any]], inputs: Sequence[Any],
                     warmup: int = 3, repeats: int = 3,
                     observe: Callable[[str, Any], None] | None = None) -> dict[str, list[float]]:
    """Seconds per call of each contender on each input over `repeats` interleaved rounds.

    Before each pass the contender runs `warmup` untimed calls. `observe(name, output)`, if
    given, sees every timed call's output outside the timed region.
    """
    if not contenders:
        raise ValueError("contenders must not be empty")
    if len(inputs) == 0:
        raise ValueError("inputs must not be empty")
    if repeats < 1 or warmup < 0:
        raise ValueError(f"repeats must be >= 1 and warmup >= 0, got {repeats} and {warmup}")
    names = list(contenders)
    seconds: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(repeats):
        for k in range(len(names)):
            name = names[(round_ + k) % len(names)]
            run = contenders[name]
            for x in list(inputs)[:warmup]:
                run(x)
            for x in inputs:
                start = time.perf_counter()
                output = run(x)
                seconds[name].append(time.perf_counter() - start)
                if observe is not None:
                    observe(name, output)
                del output
    return seconds


def summarize(seconds: list[float]) -> dict[str, float]:
    """Median and spread in milliseconds."""
    ms = sorted(s * 1e3 for s in seconds)
    return {
        "ms_median": statistics.median(ms),
        "ms_p10": ms[int(0.1 * (len(ms) - 1))],
        "ms_p90": ms[int(0.9 * (len(ms) - 1))],
        "n": len(ms),
    }
