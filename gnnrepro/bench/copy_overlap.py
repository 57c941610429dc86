"""`bench copy-overlap`: the host-to-device copy of feature rows, pinned on side streams against
pageable and synchronous, and how much of it hides behind a stand-in model step.

The rows are real batches' input rows (the fused sampler's first batches of an epoch, gathered
once, before timing), so sizes and counts are a training run's. Two ways to move them:

* "pageable-sync": rows in pageable memory, `x.to(device)` on the compute stream: the host
  waits for every copy, and a copy waits for the step before it (what a loader without pinned
  staging does, DGL's default);
* "pinned-streams": rows in page-locked memory, copied with non_blocking on `streams` side
  streams, `prefetch` batches ahead of the step that uses them; the compute stream waits for
  each batch's copy event (what gnnrepro's hand-over does).

Each is timed three ways per round: copies alone, stand-in steps alone, both. The stand-in step
is a GPU kernel that spins for `step_ms` on the compute stream (torch.cuda._sleep, calibrated
here), not a model; by default it lasts as long as one pinned copy, so all of the copy could
hide. hidden_share = (copy + step - both) / copy: 1 when the copies cost nothing beside the
steps, 0 when they add their whole time. Without CUDA the same code runs on the CPU (a copy
into fresh memory, a busy-wait step) as a rehearsal; its numbers say nothing about a GPU.
"""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

from gnnrepro.bench.sampling_speed import seed_batches
from gnnrepro.bench.timing import round_orders
from gnnrepro.checks import check_int
from gnnrepro.config import SETTINGS, resolve_threads, validate
from gnnrepro.datasets import load_scaled
from gnnrepro.env import environment
from gnnrepro.progress import Progress
from gnnrepro.sampling import FusedSampler

__all__ = ["MODES", "format_table", "measure"]

MODES = ("pageable-sync", "pinned-streams")
VARIANTS = ("copy", "step", "both")


def _spin_cycles_per_ms() -> float:
    """GPU clock cycles per millisecond of torch.cuda._sleep, measured with events."""
    cycles = 20_000_000
    torch.cuda._sleep(cycles // 10)  # warm-up
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(cycles)
    end.record()
    end.synchronize()
    return cycles / start.elapsed_time(end)


class _Device:
    """The copy target and the stand-in step: a GPU, or the CPU as a rehearsal."""

    def __init__(self, cuda: bool):
        self.cuda = cuda
        self.device = torch.device("cuda" if cuda else "cpu")
        self.cycles_per_ms = _spin_cycles_per_ms() if cuda else 0.0

    def step(self, ms: float) -> None:
        if self.cuda:
            torch.cuda._sleep(int(ms * self.cycles_per_ms))
        else:
            end = time.perf_counter() + ms / 1e3
            while time.perf_counter() < end:
                pass

    def synchronize(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()

    def pageable_copy(self, rows: torch.Tensor) -> torch.Tensor:
        return rows.to(self.device) if self.cuda else rows.clone()


def _pageable_epoch(dev: _Device, rows: list[torch.Tensor], step_ms: float, copy: bool,
                    step: bool) -> None:
    for x in rows:
        if copy:
            x = dev.pageable_copy(x)
        if step:
            dev.step(step_ms)
        del x


def _pinned_epoch(dev: _Device, rows: list[torch.Tensor], step_ms: float, copy: bool,
                  step: bool, streams: list[Any], prefetch: int) -> None:
    """Copies issued `prefetch` batches ahead on the side streams; each step waits for its
    batch's copy event only (the compute stream never waits for a later copy)."""
    if not dev.cuda:  # rehearsal: the same order of copies and steps, on the CPU
        _pageable_epoch(dev, rows, step_ms, copy, step)
        return
    compute = torch.cuda.current_stream()
    in_flight: list[tuple[torch.Tensor, torch.cuda.Event]] = []

    def issue(b: int) -> None:
        stream = streams[b % len(streams)]
        with torch.cuda.stream(stream):
            x = rows[b].to(dev.device, non_blocking=True)
            event = torch.cuda.Event()
            event.record(stream)
        in_flight.append((x, event))

    if copy:
        for b in range(min(prefetch, len(rows))):
            issue(b)
    for b in range(len(rows)):
        if copy:
            if b + prefetch < len(rows):
                issue(b + prefetch)
            x, event = in_flight.pop(0)
            compute.wait_event(event)
            x.record_stream(compute)
            del x
        if step:
            dev.step(step_ms)


def measure(dataset: str = "products-sim", scale: float = 1.0, root: str | None = None,
            fanouts: Sequence[int] = tuple(SETTINGS["fanouts"].default),
            batch_size: int = SETTINGS["batch_size"].default, batches: int = 16,
            rounds: int = 4, streams: int = SETTINGS["streams"].default, prefetch: int = 2,
            step_ms: float | None = None, threads: int | None = None,
            seed: int = SETTINGS["seed"].default) -> dict[str, Any]:
    """Time both modes' copies, steps and both (see the module doc); return the JSON-ready
    result. `step_ms` None: the median pinned copy time of one batch."""
    fanouts = validate("fanouts", list(fanouts))
    batch_size = validate("batch_size", batch_size)
    for name, value in (("batches", batches), ("rounds", rounds), ("streams", streams),
                        ("prefetch", prefetch)):
        check_int(name, value, 1)
    if step_ms is not None and (isinstance(step_ms, bool) or not isinstance(step_ms, (int, float))
                                or step_ms < 0):
        raise ValueError(f"step_ms must be a number >= 0 or None, got {step_ms!r}")
    threads = resolve_threads(threads)
    torch.set_num_threads(threads)
    data = load_scaled(validate("dataset", dataset), root, validate("scale", scale))
    sampler = FusedSampler(data.graph, fanouts, seed=seed)
    seed_sets = seed_batches(data.train_idx, batch_size, batches, seed)
    pageable = [data.features[sampler.sample(s, b).input_nodes] for b, s in enumerate(seed_sets)]
    dev = _Device(torch.cuda.is_available())
    pinned = [x.pin_memory() for x in pageable] if dev.cuda else pageable
    side = [torch.cuda.Stream() for _ in range(streams)] if dev.cuda else []
    epochs: dict[str, Callable[[float, bool, bool], None]] = {
        "pageable-sync": lambda ms, c, s: _pageable_epoch(dev, pageable, ms, c, s),
        "pinned-streams": lambda ms, c, s: _pinned_epoch(dev, pinned, ms, c, s, side, prefetch),
    }

    def timed(mode: str, ms: float, variant: str) -> float:
        dev.synchronize()
        start = time.perf_counter()
        epochs[mode](ms, variant != "step", variant != "copy")
        dev.synchronize()
        return time.perf_counter() - start

    for mode in MODES:  # warm-up: allocator, streams, first-touch of the pinned pages
        timed(mode, 0.0, "copy")
    if step_ms is None:
        step_ms = statistics.median(timed("pinned-streams", 0.0, "copy") for _ in range(3)) \
            * 1e3 / len(pinned)
    seconds: dict[str, dict[str, list[float]]] = {m: {v: [] for v in VARIANTS} for m in MODES}
    orders = round_orders([f"{m}/{v}" for m in MODES for v in VARIANTS], rounds)
    with Progress("bench copy-overlap", total=rounds * len(MODES) * len(VARIANTS),
                  unit="epoch") as progress:
        for order in orders:
            for key in order:
                mode, variant = key.split("/")
                seconds[mode][variant].append(timed(mode, step_ms, variant))
                progress.update(note=key)
    row_bytes = data.features.shape[1] * data.features.element_size()
    nbytes = sum(x.shape[0] for x in pageable) * row_bytes
    return {
        "benchmark": "copy-overlap",
        "params": {"dataset": dataset, "scale": scale, "fanouts": fanouts,
                   "batch_size": batch_size, "batches": len(pageable), "rounds": rounds,
                   "streams": streams, "prefetch": prefetch, "step_ms": step_ms,
                   "threads": threads, "seed": seed, "device": str(dev.device),
                   "round_orders": orders,
                   "step_note": "a GPU kernel spinning step_ms on the compute stream "
                                "(torch.cuda._sleep), standing in for a model step; "
                                "on the CPU a busy-wait (rehearsal only)"},
        "bytes_per_batch": nbytes / len(pageable),
        "modes": {mode: _summary(seconds[mode], nbytes) for mode in MODES},
        "env": environment(),
    }


def _summary(seconds: dict[str, list[float]], nbytes: int) -> dict[str, Any]:
    """Median seconds per variant, the copy's GB/s, and the share of it hidden by the steps."""
    copy, step, both = (statistics.median(seconds[v]) for v in VARIANTS)
    return {"copy_s": copy, "step_s": step, "both_s": both,
            "copy_gbps": nbytes / copy / 1e9,
            "hidden_share": max(0.0, min(1.0, (copy + step - both) / copy)),
            "epochs_s": seconds}


def format_table(result: dict[str, Any]) -> str:
    """A fixed-width table for the terminal."""
    lines = [f"{'mode':<16} {'copy s':>8} {'step s':>8} {'both s':>8} {'GB/s':>7} {'hidden':>7}"]
    for mode, r in result["modes"].items():
        lines.append(f"{mode:<16} {r['copy_s']:8.3f} {r['step_s']:8.3f} {r['both_s']:8.3f} "
                     f"{r['copy_gbps']:7.2f} {r['hidden_share']:7.0%}")
    return "\n".join(lines)
