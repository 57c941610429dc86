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

from gnnrepro.bench.sampling_speed import seed_batches
from gnnrepro.bench.timing import round_medians, summarize, time_interleaved
from gnnrepro.checks import check_int
from gnnrepro.config import SETTINGS, resolve_threads, validate
from gnnrepro.datasets import load_scaled
from gnnrepro.env import environment
from gnnrepro.graph import CSCGraph
from gnnrepro.progress import Progress
from gnnrepro.sampling import FusedSampler, MiniBatch, ReferenceSampler

__all__ = ["blocks_equal", "contenders_here", "format_table", "measure"]

#: (contender, sampler kind, placement); placements as gnnrepro.config's sampler_device.
CONTENDERS = (("fused-cuda", "fused", "cuda"), ("fused-uva", "fused", "uva"),
              ("fused-cpu", "fused", "cpu"), ("unfused-cuda", "unfused", "cuda"),
              ("unfused-cpu", "unfused", "cpu"))
#: What the fused GPU sampler is compared with: the paper's 1.52x is against DGL's GPU path.
BASELINE = {True: "unfused-cuda", False: "unfused-cpu"}


def contenders_here(cuda: bool | None = None) -> list[str]:
    """The contenders this machine runs: with CUDA the three fused placements and the unfused
    GPU sampler; without, the fused and unfused samplers on the CPU."""
    cuda = torch.cuda.is_available() if cuda is None else cuda
    wanted = ("fused-cuda", "fused-uva", "fused-cpu", "unfused-cuda") if cuda else \
        ("fused-cpu", "unfused-cpu")
    return list(wanted)


def _sampler(name: str, host: CSCGraph, on_gpu: CSCGraph | None, fanouts: list[int],
             seed: int) -> Callable[[torch.Tensor, int], MiniBatch]:
    """(seeds, batch_id) -> MiniBatch for contender `name`, synchronized when on the GPU."""
    kind, placement = next((k, p) for n, k, p in CONTENDERS if n == name)
    if placement == "cpu":
        cls = FusedSampler if kind == "fused" else ReferenceSampler
        return cls(host, fanouts, seed=seed).sample
    if kind == "unfused":
        sampler: Any = ReferenceSampler(on_gpu, fanouts, seed=seed)
    elif placement == "uva":
        sampler = FusedSampler(host, fanouts, seed=seed, device="cuda")
    else:
        sampler = FusedSampler(on_gpu, fanouts, seed=seed)

    def sample(seeds: torch.Tensor, batch_id: int) -> MiniBatch:
        mb = sampler.sample(seeds.to("cuda"), batch_id)
        torch.cuda.synchronize()
        return mb
    return sample


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
    if any(n.endswith("-uva") for n in names):
        host.pin_memory_()  # in place; the CPU contenders read the same (pinned) arrays
    on_gpu = host.to("cuda") if any(n.endswith("-cuda") for n in names) else None
    samplers = {n: _sampler(n, host, on_gpu, fanouts, seed) for n in names}
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
    reference = samplers.get("fused-cpu") or _sampler("fused-cpu", host, None, fanouts, seed)
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
