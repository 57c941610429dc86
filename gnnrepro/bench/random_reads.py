"""The sampler's random memory reads against this machine's random-read ceiling.

A neighbour sampler on a graph far larger than the caches is bound by random reads: per
destination, its `indptr` entries, the lines of its `indices` row the picks land on, and the
relabel map's entry of every sampled node. Three pieces put its speed in those terms:

* `probe_ceiling`: independent random 64-byte line reads per second over an array, from the
  sampler's threads, with or without software prefetch `prefetch_ahead` reads ahead
  (csrc/bench/random_reads.cpp): the best a loop doing nothing but such reads reaches.
* `batch_line_reads`: the distinct lines one sampled batch reads, counted from the batch and
  the graph: exact for `indptr`, the relabel map and rows whose every entry is read, and for a
  row of which the sampler picks k of d entries (uniform k-subsets: Floyd's algorithm) the
  expected number of its lines the k picks touch. Lines shared between rows of a layer are
  counted once per row, and the map's reset after the batch (lines just written) not at all.
* `sampler_line_reads`: the sampler's batches timed alone, back to back (as the probe runs;
  `bench sampling` times it interleaved with DGL's samplers, which evict its cache lines),
  then their lines counted.
* `read_ceiling`: the probe over each array the sampler reads (`indices`, `indptr`, and an
  int32 array of the relabel map's size), since the rate depends on the array's size (a
  random read of a larger array also misses the TLB more: measured in benchmarks/NOTES.md),
  each without prefetch and with the sampler's own distance for that array
  (csrc/sampling/prefetch_distances.h), run by run in turn, the faster median its ceiling;
  the time the batch's lines would take at those rates, as a share of the sampler's time.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from gnnrepro.checks import check_int
from gnnrepro.graph import CSCGraph
from gnnrepro.sampling import FusedSampler, MiniBatch

__all__ = ["LINE_BYTES", "batch_line_reads", "probe_ceiling", "read_ceiling",
           "sampler_line_reads"]

LINE_BYTES = 64
#: The relabel map's entries (int32: csrc/sampling, node_map) per line.
_MAP_ENTRIES_PER_LINE = LINE_BYTES // 4


def probe_ceiling(array: torch.Tensor, threads: int, reads_per_thread: int = 1 << 24,
                  repeats: int = 5, seed: int = 0, prefetch_ahead: int = 0) -> dict[str, Any]:
    """Independent random line reads per second over `array` from `threads` threads, each
    prefetching `prefetch_ahead` reads ahead (0: none): the median of `repeats` timed runs
    (after one untimed), with their spread."""
    from gnnrepro import _C
    if not isinstance(array, torch.Tensor):
        raise TypeError(f"array must be a torch.Tensor, got {type(array).__name__}")
    if array.device.type != "cpu" or not array.is_contiguous():
        raise ValueError("array must be a contiguous CPU tensor")
    threads = check_int("threads", threads, 1)
    reads_per_thread = check_int("reads_per_thread", reads_per_thread, 1)
    repeats = check_int("repeats", repeats, 1)
    prefetch_ahead = check_int("prefetch_ahead", prefetch_ahead, 0)
    nbytes = array.numel() * array.element_size()
    if nbytes < LINE_BYTES:
        raise ValueError(f"array must hold at least {LINE_BYTES} bytes, got {nbytes}")
    _C.random_line_reads(array, min(reads_per_thread, 1 << 20), threads, seed,
                         prefetch_ahead)  # warm-up
    rates = []
    for r in range(repeats):
        start = time.perf_counter()
        _C.random_line_reads(array, reads_per_thread, threads, seed + 1 + r, prefetch_ahead)
        rates.append(reads_per_thread * threads / (time.perf_counter() - start))
    return {"lines_per_s": float(np.median(rates)), "lines_per_s_rounds": rates,
            "array_bytes": nbytes, "threads": threads, "reads_per_thread": reads_per_thread,
            "prefetch_ahead": prefetch_ahead,
            "transparent_hugepages": _transparent_hugepages()}


def _transparent_hugepages() -> str | None:
    """The kernel's THP mode (the bracketed word of its setting; None: not Linux)."""
    try:
        text = open("/sys/kernel/mm/transparent_hugepage/enabled").read()
    except OSError:
        return None
    return text[text.find("[") + 1:text.find("]")] if "[" in text else text.strip()


def _alternating_probes(array: torch.Tensor, threads: int, distances: Sequence[int],
                        seed: int, repeats: int = 5) -> dict[str, Any]:
    """The probe at each prefetch distance, the distances alternating run by run (so drift
    on the machine meets both alike); the ceiling is the faster one's median."""
    rates: dict[int, list[float]] = {d: [] for d in distances}
    for r in range(repeats):
        for d in distances:
            rates[d] += probe_ceiling(array, threads, seed=seed + r, prefetch_ahead=d,
                                      repeats=1)["lines_per_s_rounds"]
    medians = {d: float(np.median(v)) for d, v in rates.items()}
    best = max(medians, key=medians.get)
    return {"lines_per_s": medians[best], "prefetch_ahead": best,
            "lines_per_s_by_prefetch_ahead": {str(d): medians[d] for d in distances},
            "lines_per_s_rounds": {str(d): rates[d] for d in distances},
            "array_bytes": array.numel() * array.element_size(), "threads": threads,
            "transparent_hugepages": _transparent_hugepages()}


def read_ceiling(graph: CSCGraph, lines: dict[str, float], ms_per_batch: float,
                 threads: int, seed: int = 0) -> dict[str, Any]:
    """The sampler's `lines` per batch at `ms_per_batch` (sampler_line_reads: the sampler
    alone, as the probe runs) against the probe over each array they fall in: the time they would take at the probe's rates
    (`ceiling_ms_per_batch`), its share of the sampler's time (`share_of_ceiling`), and, as
    a single number, the lines per second over the probe's rate on the graph's `indices`."""
    if ms_per_batch <= 0:
        raise ValueError(f"ms_per_batch must be > 0, got {ms_per_batch}")
    from gnnrepro import _C
    node_map = torch.full((graph.num_nodes,), -1, dtype=torch.int32)  # the map's size, touched
    arrays = {"indices": graph.indices, "indptr": graph.indptr, "node_map": node_map}
    ahead = _C.sampler_prefetch_ahead()
    ceilings = {name: _alternating_probes(array, threads, (0, ahead[name]), seed)
                for name, array in arrays.items()}
    ceiling_ms = 1e3 * sum(lines[name] / ceilings[name]["lines_per_s"] for name in arrays)
    per_s = lines["total"] / (ms_per_batch / 1e3)
    return {"threads": threads, "ceilings": ceilings, "lines_per_batch": lines,
            "lines_per_s": per_s, "ceiling_ms_per_batch": ceiling_ms,
            "share_of_ceiling": ceiling_ms / ms_per_batch,
            "lines_per_s_vs_indices_probe": per_s / ceilings["indices"]["lines_per_s"]}


def _row_lines_read(start: np.ndarray, degree: np.ndarray, fanout: int, base: int,
                    itemsize: int) -> np.ndarray:
    """Expected distinct lines of each row [start, start + degree) of an array at address
    `base` that sampling `fanout` entries (uniform without replacement; -1 or
    degree <= fanout: all) reads."""
    per_line = LINE_BYTES // itemsize
    first_byte = base + start * itemsize
    first_line = first_byte // LINE_BYTES
    last_line = (first_byte + (np.maximum(degree, 1) - 1) * itemsize) // LINE_BYTES
    spanned = np.where(degree > 0, last_line - first_line + 1, 0).astype(np.float64)
    if fanout < 0:
        return spanned
    partial = degree > fanout
    d = degree[partial].astype(np.float64)
    in_first = np.minimum(degree[partial], per_line - (first_byte[partial] % LINE_BYTES)
                          // itemsize)
    lines = spanned[partial]
    in_last = np.where(lines > 1, (degree[partial] - in_first - 1) % per_line + 1, 0)

    def untouched(n: np.ndarray) -> np.ndarray:
        """P(no pick lands in a line of n entries): C(d - n, k) / C(d, k)."""
        p = np.ones_like(d)
        for i in range(fanout):
            p *= np.clip(d - n - i, 0, None) / (d - i)
        return p

    middle = np.maximum(lines - 2, 0)
    expected = ((1 - untouched(in_first.astype(np.float64)))
                + np.where(lines > 1, 1 - untouched(in_last.astype(np.float64)), 0)
                + middle * (1 - untouched(np.full_like(d, per_line))))
    out = spanned.copy()
    out[partial] = expected
    return out


def batch_line_reads(graph: CSCGraph, batch: MiniBatch,
                     fanouts: Sequence[int]) -> dict[str, float]:
    """Distinct 64-byte lines of `graph` (indptr, indices) and of the relabel map that
    sampling `batch` with `fanouts` (input layer first, as the sampler's) reads; see the
    module doc."""
    if len(fanouts) != len(batch.blocks):
        raise ValueError(f"fanouts has {len(fanouts)} entries, the batch "
                         f"{len(batch.blocks)} blocks")
    indptr = graph.indptr.numpy()
    ptr_base, ptr_item = graph.indptr.data_ptr(), graph.indptr.element_size()
    idx_base, idx_item = graph.indices.data_ptr(), graph.indices.element_size()
    counts = {"indptr": 0.0, "indices": 0.0, "node_map": 0.0}
    for block, fanout in zip(batch.blocks, fanouts):
        dst = block.dst_nodes.numpy()
        entry_lines = (ptr_base + np.concatenate([dst, dst + 1]) * ptr_item) // LINE_BYTES
        counts["indptr"] += np.unique(entry_lines).size
        start = indptr[dst]
        counts["indices"] += float(_row_lines_read(start, indptr[dst + 1] - start, fanout,
                                                   idx_base, idx_item).sum())
        counts["node_map"] += np.unique(block.src_nodes.numpy()
                                        // _MAP_ENTRIES_PER_LINE).size
    counts["total"] = counts["indptr"] + counts["indices"] + counts["node_map"]
    return counts


def sampler_line_reads(graph: CSCGraph, fanouts: Sequence[int],
                       seed_sets: Sequence[torch.Tensor],
                       seed: int) -> tuple[dict[str, float], list[float]]:
    """The fused sampler's batches of `seed_sets` (batch ids 0, 1, ...: the batches `bench
    sampling` times): their mean lines per batch (batch_line_reads) and each batch's sampling
    time in ms with the sampler alone, back to back after a warm-up batch (as the probe runs
    alone; the lines are counted in a second, untimed pass: the same batches, since a batch
    is a function of (seed, batch id). The timed pass keeps no batch, as a training loop
    keeps none: a kept batch's memory cannot go back to the sampler's output pool, and fresh
    memory costs page faults that a batch in a training loop does not pay)."""
    sampler = FusedSampler(graph, list(fanouts), seed=seed)
    sampler.sample(seed_sets[0], 0)  # warm-up: the sampler's buffers
    ms = []
    for batch_id, seeds in enumerate(seed_sets):
        start = time.perf_counter()
        sampler.sample(seeds, batch_id)
        ms.append((time.perf_counter() - start) * 1e3)
    totals: dict[str, float] = {}
    for batch_id, seeds in enumerate(seed_sets):
        for key, value in batch_line_reads(graph, sampler.sample(seeds, batch_id),
                                           fanouts).items():
            totals[key] = totals.get(key, 0.0) + value
    return {key: value / len(seed_sets) for key, value in totals.items()}, ms
