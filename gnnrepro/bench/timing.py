"""Side-by-side timing: warm-up, then short runs interleaved across contenders, then medians.

Inputs are cut into segments of a few consecutive calls. Each contender runs a segment back to
back (near its steady state, as in a training loop), then the next contender runs the same
segment, in an order from a Williams design, in which every contender follows every other
equally often. Short segments make slow drift of the machine (other tenants, frequency) hit all
contenders alike, and the balanced orders make one contender's aftermath (evicted caches, the
allocator state its frees left) burden all alike, which a plain rotation does not do.
"""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any


def williams_orders(n: int) -> list[list[int]]:
    """Orders of 0..n-1, one per round, in which each item follows each other equally often.

    n rounds for even n, 2n for odd n (the rows plus their reverses).
    """
    first, low, high = [0], 1, n - 1
    while len(first) < n:
        first.append(low)
        low += 1
        if len(first) < n:
            first.append(high)
            high -= 1
    rows = [[(x + r) % n for x in first] for r in range(n)]
    return rows if n % 2 == 0 else rows + [row[::-1] for row in rows]


def round_orders(names: Sequence[str], rounds: int) -> list[list[str]]:
    """`rounds` orders of `names`, round r in row r of the Williams design (repeating it)."""
    design = williams_orders(len(names))
    return [[names[i] for i in design[r % len(design)]] for r in range(rounds)]


def check_pipelines(pipelines: Sequence[str], known: Sequence[str]) -> list[str]:
    """`pipelines` as a list: a non-empty subset of `known` without repeats, else ValueError."""
    pipelines = list(pipelines)
    if not pipelines or any(p not in known for p in pipelines) or \
            len(set(pipelines)) != len(pipelines):
        raise ValueError(f"pipelines must be a non-empty subset of {', '.join(known)} without "
                         f"repeats, got {pipelines}")
    return pipelines


def speedups(epoch_s: dict[str, float], base: str = "dgl") -> dict[str, float]:
    """{name: epoch_s[base] / epoch_s[name]}; empty when `base` was not measured."""
    if base not in epoch_s:
        return {}
    return {name: epoch_s[base] / s for name, s in epoch_s.items()}


def time_interleaved(contenders: dict[str, Callable[[Any], Any]], inputs: Sequence[Any],
                     warmup: int = 3, repeats: int = 4, segment: int = 8,
                     observe: Callable[[str, Any], None] | None = None) -> dict[str, list[float]]:
    """Seconds per call of each contender on each input, `repeats` times over, interleaved.

    Every contender first makes `warmup` untimed calls; then, per round and per segment of
    `segment` inputs, each contender times its calls on the segment. `observe(name, output)`,
    if given, sees every timed call's output outside the timed region.
    """
    if not contenders:
        raise ValueError("contenders must not be empty")
    if len(inputs) == 0:
        raise ValueError("inputs must not be empty")
    if repeats < 1 or warmup < 0 or segment < 1:
        raise ValueError(f"repeats and segment must be >= 1 and warmup >= 0, got {repeats}, "
                         f"{segment} and {warmup}")
    names = list(contenders)
    orders = williams_orders(len(names))
    inputs = list(inputs)
    segments = [inputs[i:i + segment] for i in range(0, len(inputs), segment)]
    for name in names:
        for x in inputs[:warmup]:
            contenders[name](x)
    seconds: dict[str, list[float]] = {name: [] for name in names}
    step = 0
    for _ in range(repeats):
        for part in segments:
            for k in orders[step % len(orders)]:
                name, run = names[k], contenders[names[k]]
                for x in part:
                    start = time.perf_counter()
                    output = run(x)
                    seconds[name].append(time.perf_counter() - start)
                    if observe is not None:
                        observe(name, output)
                    del output
            step += 1
    return seconds


def round_medians(seconds: Sequence[float], repeats: int) -> list[float]:
    """Median milliseconds of each round of `time_interleaved`'s timings of one contender (its
    list holds `repeats` rounds of equal length, in order)."""
    if repeats < 1 or len(seconds) % repeats:
        raise ValueError(f"seconds must hold `repeats` rounds of equal length; got "
                         f"{len(seconds)} timings for repeats={repeats}")
    n = len(seconds) // repeats
    return [statistics.median(seconds[r * n:(r + 1) * n]) * 1e3 for r in range(repeats)]


def summarize(seconds: list[float]) -> dict[str, float]:
    """Median and spread in milliseconds."""
    ms = sorted(s * 1e3 for s in seconds)
    return {
        "ms_median": statistics.median(ms),
        "ms_p10": ms[int(0.1 * (len(ms) - 1))],
        "ms_p90": ms[int(0.9 * (len(ms) - 1))],
        "n": len(ms),
    }
