"""`bench temporal-sampling` (`measure`): temporal neighbour sampling against uniform, side by
side in one process.

Every contender samples the same seed batches (the first batches of a seeded shuffle of the
training ids) with the same threads; timings are interleaved (gnnrepro.bench.timing) and the
median reported. The graph's edges get seeded uniform random times in [0, TIME_SPAN), and every
contender samples the one time-sorted copy of the graph. Contenders:
"uniform" (FusedSampler, no times), "disjoint" (no times, but each seed's subgraph on its own,
as a temporal sampler's: PyG's disjoint=True), "temporal-all" (every seed at TIME_SPAN, so every
edge is a candidate and each destination picks as many edges as disjoint sampling does: over
"disjoint", the cost of the binary searches alone), "temporal" (seed times uniform in
[0, TIME_SPAN): about half the edges are candidates), "temporal-last" (the same times, the
most recent edges) and "temporal-exclude" ("temporal" with one in-edge of each seed excluded,
as a link-prediction batch excludes its positives: the cost of exclusion, ids to positions
included) and "temporal-weighted" ("temporal" with weights, dmlc/dgl#7462's: uniform random,
half of them zero; picks by weight among the candidates, as cuGraph's biased temporal sampler
and GraphBolt's temporal sampler with probabilities pick). Disjoint sampling keeps one source per (seed, node), so its blocks have
more sources than uniform sampling's: reported per contender. The headlines are temporal-all's
cost over disjoint (the time filter) and over uniform (the whole of PyG's temporal semantics;
the issue's bound: 1.5x).

`sampler_device` places every contender as gnnrepro.config does: "cpu", "cuda" (the graph, its
time-sorted copy made there, and the times in GPU memory) or "uva" (the sorted copy pinned,
read by the GPU). On a GPU each call is synchronized, so its time is the GPU's, and the first
batches' blocks are compared with the CPU op's for the same contender (`blocks_equal_cpu`).
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import torch

from gnnrepro.bench.placements import blocks_equal
from gnnrepro.bench.sampling_speed import on_gpu, seed_batches
from gnnrepro.bench.timing import summarize, time_interleaved
from gnnrepro.config import check_placement, resolve_threads, validate
from gnnrepro.datasets import load_scaled
from gnnrepro.env import environment
from gnnrepro.progress import Progress
from gnnrepro.sampling import FusedSampler, MiniBatch
from gnnrepro.sampling.temporal import edge_times

TIME_SPAN = 1_000_000
SAMPLERS = ("uniform", "disjoint", "temporal-all", "temporal", "temporal-last",
            "temporal-exclude", "temporal-weighted")
PEERS_NOT_RUN = {
    "pyg": "PyG's temporal sampling (NeighborLoader time_attr) needs pyg-lib; no registry here "
           "serves pyg-lib for this torch, and torch-sparse's homogeneous sampler has no times",
    "dgl": "DGL 2.1's sample_neighbors has no edge times (GraphBolt's TemporalNeighborSampler "
           "is not in the dgl wheel served here)",
}


def _contender(name: str, graph: Any, fanouts: list[int], seed: int, times: torch.Tensor,
               node_time: torch.Tensor,
               device: torch.device | None = None) -> Callable[[torch.Tensor, int], MiniBatch]:
    """Contender `name` sampling `graph` on `device` (None: the graph's)."""
    args: dict[str, Any] = {"seed": seed, "device": device}
    if name == "temporal-weighted":
        gen = torch.Generator().manual_seed(seed + 1)
        weights = torch.rand(graph.num_edges, generator=gen)
        weights[torch.rand(graph.num_edges, generator=gen) < 0.5] = 0
        return FusedSampler(graph, fanouts, times=times, node_time=node_time,
                            weights=weights, **args).sample
    if name in ("uniform", "disjoint"):
        return FusedSampler(graph, fanouts, disjoint=name == "disjoint", **args).sample
    if name == "temporal-all":
        everything = torch.full_like(node_time, TIME_SPAN)
        return FusedSampler(graph, fanouts, times=times, node_time=everything, **args).sample
    strategy = "last" if name == "temporal-last" else "uniform"
    sampler = FusedSampler(graph, fanouts, times=times, node_time=node_time,
                           temporal_strategy=strategy, **args)
    if name != "temporal-exclude":
        return sampler.sample
    sampler.prepare_exclusion()
    return lambda seeds, batch_id: sampler.sample(seeds, batch_id,
                                                  exclude=_first_in_edges(graph, seeds))


def _first_in_edges(graph: Any, seeds: torch.Tensor) -> torch.Tensor:
    """The edge id of each seed's first in-edge (seeds without one have none), on the seeds'
    device."""
    at = seeds.to(graph.indptr.device)
    first, end = graph.indptr[at], graph.indptr[at + 1]
    positions = first[first < end]
    ids = positions if graph.edge_ids is None else graph.edge_ids[positions]
    return ids.to(seeds.device)


def _placed(graph: Any, times: torch.Tensor, node_time: torch.Tensor,
            sampler_device: str) -> tuple[Any, Any, torch.Tensor, torch.Tensor]:
    """(the time-sorted graph and the times where the contenders read them, the sorted graph
    on the CPU): sorted once, on the GPU for "cuda" (seconds there, tens of seconds on a few
    cores at products size), pinned for "uva"."""
    if sampler_device == "cuda":
        graph, times, node_time = graph.to("cuda"), times.to("cuda"), node_time.to("cuda")
        placed = edge_times(graph, times).graph
        return placed, placed.to("cpu"), times, node_time
    placed = edge_times(graph, times).graph
    if sampler_device == "uva":
        placed.pin_memory_()
    return placed, placed, times, node_time


def _same_blocks(a: MiniBatch, b: MiniBatch) -> bool:
    """blocks_equal, with each source's seed index where the batches carry one."""
    return blocks_equal(a, b) and all(
        (x.seed_index is None) == (y.seed_index is None)
        and (x.seed_index is None or torch.equal(x.seed_index.cpu(), y.seed_index.cpu()))
        for x, y in zip(a.blocks, b.blocks))


def measure(dataset: str = "products-sim", scale: float = 1.0, root: str | None = None,
            fanouts: Sequence[int] = (15, 10, 5), batch_size: int = 1024, batches: int = 20,
            threads: int | None = None, repeats: int = 4, samplers: Sequence[str] = SAMPLERS,
            seed: int = 0, sampler_device: str = "cpu", check_batches: int = 2) -> dict:
    """Time each contender on the same batches; ratios against uniform sampling. On a GPU
    (`sampler_device` cuda or uva) the first `check_batches` batches of each contender are
    compared with the CPU op's."""
    sampler_device = validate("sampler_device", sampler_device)
    if sampler_device != "cpu":
        check_placement("cuda", sampler_device, "pinned")
    threads = resolve_threads(threads)
    torch.set_num_threads(threads)
    data = load_scaled(dataset, root, scale)
    fanouts = [int(f) for f in fanouts]
    gen = torch.Generator().manual_seed(seed)
    times = torch.randint(0, TIME_SPAN, (data.graph.num_edges,), generator=gen)
    node_time = torch.randint(0, TIME_SPAN, (data.graph.num_nodes,), generator=gen)
    # sorted by time once, for every contender
    graph, cpu_graph, placed_times, placed_node_time = _placed(data.graph, times, node_time,
                                                                sampler_device)
    seed_sets = seed_batches(data.train_idx, batch_size, batches, seed)
    device = None if sampler_device == "cpu" else torch.device("cuda")
    contenders = {name: _contender(name, graph, fanouts, seed, placed_times, placed_node_time,
                                   device)
                  for name in samplers}
    if device is not None:
        contenders = {name: on_gpu(sample) for name, sample in contenders.items()}
    edges: dict[str, int] = defaultdict(int)
    sources: dict[str, int] = defaultdict(int)
    progress = Progress("bench temporal-sampling",
                        total=len(contenders) * repeats * len(seed_sets), unit="batch")

    def observe(name: str, output: MiniBatch) -> None:
        edges[name] += sum(b.num_edges for b in output.blocks)
        sources[name] += sum(b.num_src for b in output.blocks)
        progress.update(note=name)

    calls = {n: (lambda x, f=f: f(x[1], x[0])) for n, f in contenders.items()}
    with progress:
        seconds = time_interleaved(calls, list(enumerate(seed_sets)), warmup=3, repeats=repeats,
                                   observe=observe)
    result: dict = {
        "benchmark": "temporal-sampling",
        "params": {"dataset": dataset, "scale": scale, "fanouts": fanouts,
                   "batch_size": batch_size, "batches": len(seed_sets), "threads": threads,
                   "repeats": repeats, "seed": seed, "time_span": TIME_SPAN,
                   "num_nodes": graph.num_nodes, "num_edges": graph.num_edges,
                   "index_dtype": str(graph.indices.dtype), "sampler_device": sampler_device},
        "samplers": {}, "peers_not_run": dict(PEERS_NOT_RUN),
    }
    if device is not None:
        result["blocks_equal_cpu"] = _check_against_cpu(
            contenders, cpu_graph, fanouts, seed, times, node_time, seed_sets[:check_batches])
    for name, secs in seconds.items():
        stats = summarize(secs)
        result["samplers"][name] = {"ms_per_batch": stats["ms_median"], "ms_p10": stats["ms_p10"],
                                    "ms_p90": stats["ms_p90"], "timings": stats["n"],
                                    "edges": edges[name] / len(secs),
                                    "sources": sources[name] / len(secs)}
    ms = {name: r["ms_per_batch"] for name, r in result["samplers"].items()}
    result["ratios"] = {f"{name}_cost_vs_{base}": ms[name] / ms[base]
                        for base in ("uniform", "disjoint") if base in ms
                        for name in ms if name not in ("uniform", base)}
    for name in ("temporal-exclude", "temporal-weighted"):
        if {"temporal", name} <= set(ms):
            result["ratios"][f"{name}_cost_vs_temporal"] = ms[name] / ms["temporal"]
    result["env"] = environment()
    return result


def _check_against_cpu(contenders: dict[str, Callable], cpu_graph: Any, fanouts: list[int],
                       seed: int, times: torch.Tensor, node_time: torch.Tensor,
                       seed_sets: list[torch.Tensor]) -> dict[str, dict[str, int]]:
    """{contender: {"equal": k, "batches": n}}: its blocks against the CPU op's, built the
    same way on the sorted graph's CPU copy."""
    out = {}
    for name, sample in contenders.items():
        on_cpu = _contender(name, cpu_graph, fanouts, seed, times, node_time)
        equal = sum(_same_blocks(sample(seeds, batch_id), on_cpu(seeds, batch_id))
                    for batch_id, seeds in enumerate(seed_sets))
        out[name] = {"equal": int(equal), "batches": len(seed_sets)}
    return out


def format_table(result: dict) -> str:
    """A fixed-width table of the result for the terminal."""
    lines = [f"{'sampler':<16} {'ms/batch':>9} {'p10':>8} {'p90':>8} {'edges':>9} {'sources':>9}"]
    for name, r in result["samplers"].items():
        lines.append(f"{name:<16} {r['ms_per_batch']:9.2f} {r['ms_p10']:8.2f} "
                     f"{r['ms_p90']:8.2f} {r['edges']:9.0f} {r['sources']:9.0f}")
    lines.append(", ".join(f"{k} {v:.2f}x" for k, v in result["ratios"].items()))
    if "blocks_equal_cpu" in result:
        lines.append("blocks equal to the CPU op's: " + ", ".join(
            f"{k} {v['equal']}/{v['batches']}" for k, v in result["blocks_equal_cpu"].items()))
    return "\n".join(lines)
