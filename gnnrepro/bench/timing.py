"""Side-by-side timing: warm-up, then repetitions interleaved across contenders, then medians.

Interleaving (every contender runs on batch i before any runs on batch i+1, in a rotating
order) spreads drift in machine state (other load, frequency, caches) evenly over contenders.
"""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any


def time_interleaved(contenders: dict[str, Callable[[Any], Any]], inputs: Sequence[Any],
                     warmup: int = 3, repeats: int = 1,
                     observe: Callable[[str, Any], None] | None = None) -> dict[str, list[float]]:
    """Seconds per call of each contender on each input, `repeats` times, interleaved.

    `observe(name, output)`, if given, sees every timed call's output outside the timed region.
    """
    if not contenders:
        raise ValueError("contenders must not be empty")
    if len(inputs) == 0:
        raise ValueError("inputs must not be empty")
    names = list(contenders)
    for x in list(inputs)[:warmup]:
        for name in names:
            contenders[name](x)
    seconds: dict[str, list[float]] = {name: [] for name in names}
    step = 0
    for _ in range(repeats):
        for x in inputs:
            for k in range(len(names)):
                name = names[(step + k) % len(names)]
                start = time.perf_counter()
                output = contenders[name](x)
                seconds[name].append(time.perf_counter() - start)
                if observe is not None:
                    observe(name, output)
                del output
            step += 1
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
