"""`bench placements`: one mini-batch sampled per placement, side by side, and checked equal.

The paper's per-batch comparison on a GPU machine: the fused sampler with the graph in GPU
memory ("fused-cuda"), with the graph in pinned host memory read by the GPU over UVA
("fused-uva") and on the CPU with every core ("fused-cpu"), against the unfused two-step
sampler in plain torch on the GPU ("unfused-cuda": sample every layer to a global-id frontier,
then relabel it with torch.unique as a separate step, as DGL's GPU path does with its
sample_neighbors and to_block). Without CUDA the GPU contenders are left out and the unfused
sampler runs on the CPU ("unfused-cpu"), so the same benchmark rehearses anywhere.

All contenders sample the same seed batches (the first batches of a seeded shuffle of the
training ids), timed interleaved (gnnrepro.bench.timing) with every GPU call synchronized.
Afterwards, untimed, every fused placement's blocks are compared with the CPU op's for every
batch: the counter-based sampler promises bit-identical blocks on any device.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from gnnrepro.bench.sampling_speed import make_sampler, seed_batches
from gnnrepro.bench.timing import round_medians, summarize, time_interleaved
from gnnrepro.checks import check_int
from gnnrepro.config import SETTINGS, resolve_threads, validate
from gnnrepro.datasets import load_scaled
from gnnrepro.env import environment
from gnnrepro.progress import Progress
from gnnrepro.sampling import MiniBatch

__all__ = ["blocks_equal", "contenders_here", "format_table", "measure"]

#: (contender, sampler kind, placement); placements as gnnrepro.config's sampler_device.
CONTENDERS = (("fused-cuda", "fused", "cuda"), ("fused-uva", "fused", "uva"),
              ("fused-cpu", "fused", "cpu"), ("unfused-cuda", "reference", "cuda"),
              ("unfused-cpu", "reference", "cpu"))


def contenders_here(cuda: bool | None = None) -> list[str]:
    """The contenders this machine runs: with CUDA the three fused placements and the unfused
    GPU sampler; without, the fused and unfused samplers on the CPU."""
    cuda = torch.cuda.is_available() if cuda is None else cuda
    wanted = ("fused-cuda", "fused-uva", "fused-cpu", "unfused-cuda") if cuda else \
        ("fused-cpu", "unfused-cpu")
    return list(wanted)


def blocks_equal(a: MiniBatch, b: MiniBatch) -> bool:
    """Whether two batches hold the same blocks, bit for bit (compared on the CPU)."""
    if len(a.blocks) != len(b.blocks):
        return False
    return all(torch.equal(x.indptr.cpu(), y.indptr.cpu())
               and torch.equal(x.indices.cpu(), y.indices.cpu())
               and torch.equal(x.src_nodes.cpu(), y.src_nodes.cpu())
               for x, y in zip(a.blocks, b.blocks))


def measure(dataset: str = "products-sim", scale: float = 1.0, root: str | None = None,
            fanouts: Sequence[int] = tuple(SETTINGS["fanouts"].default),
            batch_size: int = SETTINGS["batch_size"].default, batches: int = 40,
            repeats: int = 3, threads: int | None = None, seed: int = SETTINGS["seed"].default,
            contenders: Sequence[str] | None = None) -> dict[str, Any]:
    """Time each contender (None: contenders_here()) on the same batches, check the fused
    placements' blocks against the CPU op's, and return the JSON-ready result."""
    fanouts = validate("fanouts", list(fanouts))
    batch_size = validate("batch_size", batch_size)
    check_int("batches", batches, 1)
    check_int("repeats", repeats, 1)
    names = contenders_here() if contenders is None else list(contenders)
    known = [n for n, _, _ in CONTENDERS]
    if not names or any(n not in known for n in names) or len(set(names)) != len(names):
        raise ValueError(f"contenders must be a non-empty subset of {', '.join(known)} "
                         f"without repeats, got {names}")
    gpu = [n for n in names if not n.endswith("-cpu")]
    if gpu and not torch.cuda.is_available():
        raise ValueError(f"contenders {gpu} need a CUDA device; this machine has none")
    threads = resolve_threads(threads)
    torch.set_num_threads(threads)
    data = load_scaled(validate("dataset", dataset), root, validate("scale", scale))
    host = data.graph
    # One copy of the graph in GPU memory for every GPU contender (make_sampler's graph.to is
    # a no-op on it); the UVA contender pins the host arrays in place, which the CPU
    # contenders then read as they are.
    on_gpu = host.to("cuda") if any(n.endswith("-cuda") for n in names) else None
    samplers = {n: make_sampler(kind, on_gpu if placement == "cuda" else host, fanouts, seed,
                                placement)
                for n, kind, placement in CONTENDERS if n in names}
    seed_sets = seed_batches(data.train_idx, batch_size, batches, seed)
    indexed = list(enumerate(seed_sets))
    totals = {n: [0, 0] for n in names}
    with Progress("bench placements", total=len(names) * repeats * len(indexed),
                  unit="batch") as progress:
        def observe(name: str, mb: MiniBatch) -> None:
            totals[name][0] += sum(b.num_edges for b in mb.blocks)
            totals[name][1] += mb.input_nodes.numel()
            progress.update(note=name)
        seconds = time_interleaved({n: (lambda x, f=f: f(x[1], x[0])) for n, f in
                                    samplers.items()}, indexed, warmup=3, repeats=repeats,
                                   observe=observe)
    reference = samplers.get("fused-cpu") or make_sampler("fused", host, fanouts, seed)
    equal = _check_equal(samplers, reference, indexed)
    result: dict[str, Any] = {
        "benchmark": "placements",
        "params": {"dataset": dataset, "scale": scale, "fanouts": fanouts,
                   "batch_size": batch_size, "batches": len(indexed), "repeats": repeats,
                   "threads": threads, "seed": seed, "contenders": names,
                   "num_nodes": host.num_nodes, "num_edges": host.num_edges,
                   "index_dtype": str(host.indices.dtype),
                   "unfused": "gnnrepro.sampling.ReferenceSampler: every layer sampled to a "
                              "global-id frontier, then relabelled with torch.unique (plain "
                              "torch, two steps, as DGL's sample_neighbors + to_block)"},
        "samplers": {},
        "blocks_equal_cpu": equal,
        "env": environment(),
    }
    for name in names:
        stats = summarize(seconds[name])
        calls = len(seconds[name])
        result["samplers"][name] = {
            "ms_per_batch": stats["ms_median"], "ms_p10": stats["ms_p10"],
            "ms_p90": stats["ms_p90"], "timings": stats["n"],
            "edges_per_batch": totals[name][0] / calls,
            "input_nodes": totals[name][1] / calls,
            "ms_round_medians": round_medians(seconds[name], repeats)}
    result["speedups"] = _speedups(result["samplers"])
    return result


def _check_equal(samplers: dict[str, Callable], reference: Callable,
                 indexed: list[tuple[int, torch.Tensor]]) -> dict[str, Any]:
    """{placement: {"equal": k, "batches": n}} for every fused GPU placement against the CPU
    op's blocks (`reference`)."""
    fused = [n for n in samplers if n.startswith("fused-") and n != "fused-cpu"]
    counts = {n: {"equal": 0, "batches": len(indexed)} for n in fused}
    for batch_id, seeds in indexed:
        want = reference(seeds, batch_id)
        for name in fused:
            counts[name]["equal"] += blocks_equal(samplers[name](seeds, batch_id), want)
    return counts


def _speedups(samplers: dict[str, dict[str, Any]]) -> dict[str, float]:
    """fused-X over each other contender Y, as 'fused-X_vs_Y': Y's ms / X's ms."""
    out = {}
    for mine, stats in samplers.items():
        if not mine.startswith("fused-"):
            continue
        for theirs, other in samplers.items():
            if theirs != mine:
                out[f"{mine}_vs_{theirs}"] = other["ms_per_batch"] / stats["ms_per_batch"]
    return out


def format_table(result: dict[str, Any]) -> str:
    """A fixed-width table for the terminal."""
    lines = [f"{'sampler':<14} {'ms/batch':>9} {'p10':>8} {'p90':>8} {'input nodes':>12}"]
    for name, r in result["samplers"].items():
        lines.append(f"{name:<14} {r['ms_per_batch']:9.2f} {r['ms_p10']:8.2f} "
                     f"{r['ms_p90']:8.2f} {r['input_nodes']:12.0f}")
    for key, value in result["speedups"].items():
        lines.append(f"{key}: {value:.2f}x")
    for name, c in result["blocks_equal_cpu"].items():
        lines.append(f"{name} blocks equal to the CPU op's: {c['equal']}/{c['batches']}")
    return "\n".join(lines)
