"""`bench typed-sampling` (`measure`): our fused sampler on a typed graph against DGL 2.1's
heterogeneous samplers, side by side.

All contenders sample the same seed batches of the target type (the first batches of a seeded
shuffle of the training ids) in one process with the same threads; timings are interleaved
(gnnrepro.bench.timing) and the median reported. DGL is timed on its native output (its
heterogeneous blocks), ours on our TypedBlocks. Contenders: "fused" (ours), "dgl-fused"
(DGL's NeighborSampler with per-relation fanouts: its fused CPU path) and "dgl-unfused" (per
layer sample_neighbors + to_block on the heterograph). A fanout given as one int applies to
every relation, as DGL and PyG take it.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import torch

from gnnrepro.bench.sampling_speed import seed_batches, speedup_lines
from gnnrepro.bench.timing import round_medians, summarize, time_interleaved
from gnnrepro.config import resolve_threads
from gnnrepro.datasets import load_scaled
from gnnrepro.datasets.typed_dataset import TypedDataset
from gnnrepro.env import environment
from gnnrepro.progress import Progress
from gnnrepro.sampling import FusedSampler, MiniBatch

SAMPLERS = ("dgl-unfused", "dgl-fused", "fused")


def make_typed_sampler(name: str, data: TypedDataset, fanouts: list[int],
                       seed: int) -> Callable[[torch.Tensor, int], Any]:
    """A callable (target seeds, batch_id) -> sample for the named contender."""
    if name == "fused":
        return FusedSampler(data.graph, fanouts, seed=seed, target=data.target).sample
    if name in ("dgl-fused", "dgl-unfused"):
        from gnnrepro.baselines import dgl_typed_samplers  # imports DGL only when measured
        cls = (dgl_typed_samplers.DGLTypedFusedSampler if name == "dgl-fused"
               else dgl_typed_samplers.DGLTypedUnfusedSampler)
        sampler = cls(data.graph, fanouts, seed=seed)
        return lambda seeds, batch_id: sampler.sample_native({data.target: seeds}, batch_id)
    raise ValueError(f"unknown sampler {name!r}; choose from {', '.join(SAMPLERS)}")


def output_counts(output: Any) -> tuple[int, int]:
    """(block edges, input nodes) of our typed MiniBatch or DGL's (inputs, seeds, blocks)."""
    if isinstance(output, MiniBatch):
        return (sum(sum(tb.num_edges.values()) for tb in output.blocks),
                sum(ids.numel() for ids in output.input_nodes.values()))
    input_nodes, _, blocks = output
    return (sum(int(b.num_edges(rel)) for b in blocks for rel in b.canonical_etypes),
            sum(int(ids.numel()) for ids in input_nodes.values()))


def measure(dataset: str = "mag-sim", scale: float = 0.1, root: str | None = None,
            fanouts: Sequence[int] = (25, 20), batch_size: int = 1024, batches: int = 30,
            threads: int | None = None, repeats: int = 4, samplers: Sequence[str] = SAMPLERS,
            seed: int = 0) -> dict:
    """Time each sampler on the same target-type batches; return the JSON-ready result."""
    threads = resolve_threads(threads)
    torch.set_num_threads(threads)
    data = load_scaled(dataset, root, scale)
    if not isinstance(data, TypedDataset):
        raise ValueError(f"dataset: {dataset} is homogeneous; typed-sampling measures typed "
                         "datasets (mag-sim, ogbn-mag); bench sampling measures the others")
    fanouts = [int(f) for f in fanouts]
    seed_sets = seed_batches(data.train_idx, batch_size, batches, seed)
    contenders = {name: make_typed_sampler(name, data, fanouts, seed) for name in samplers}
    if any(name.startswith("dgl") for name in samplers):
        from gnnrepro.baselines.dgl_import import set_dgl_threads
        set_dgl_threads(threads)
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    progress = Progress("bench typed-sampling", total=len(contenders) * repeats * len(seed_sets),
                        unit="batch")

    def observe(name: str, output: Any) -> None:
        edges, inputs = output_counts(output)
        totals[name][0] += edges
        totals[name][1] += inputs
        progress.update(note=name)

    indexed = list(enumerate(seed_sets))
    calls = {n: (lambda x, f=f: f(x[1], x[0])) for n, f in contenders.items()}
    with progress:
        seconds = time_interleaved(calls, indexed, warmup=3, repeats=repeats, observe=observe)
    result: dict = {
        "benchmark": "typed-sampling",
        "params": {"dataset": dataset, "scale": scale, "fanouts": fanouts,
                   "batch_size": batch_size, "batches": len(seed_sets), "threads": threads,
                   "repeats": repeats, "seed": seed, "target": data.target,
                   "num_nodes": data.graph.num_nodes,
                   "num_edges": {"/".join(r): n for r, n in data.graph.num_edges.items()},
                   "index_dtype": str(data.graph.index_dtype)},
        "samplers": {},
    }
    rounds = {name: round_medians(secs, repeats) for name, secs in seconds.items()}
    for name, secs in seconds.items():
        stats = summarize(secs)
        edges, inputs = (total / len(secs) for total in totals[name])
        result["samplers"][name] = {
            "ms_per_batch": stats["ms_median"], "ms_p10": stats["ms_p10"],
            "ms_p90": stats["ms_p90"], "timings": stats["n"],
            "edges_per_s": edges / (stats["ms_median"] / 1e3), "edges": edges,
            "input_nodes": inputs, "ms_round_medians": rounds[name]}
    ours = result["samplers"].get("fused", {}).get("ms_per_batch")
    for base in ("dgl-fused", "dgl-unfused"):
        other = result["samplers"].get(base, {}).get("ms_per_batch")
        key = f"speedup_vs_{base.replace('-', '_')}"
        result[key] = other / ours if ours and other else None
        if ours and other:
            result[f"{key}_rounds"] = [t / m for t, m in zip(rounds[base], rounds["fused"])]
    result["env"] = environment()
    return result


def format_table(result: dict) -> str:
    """A fixed-width table of the result for the terminal."""
    lines = [f"{'sampler':<12} {'ms/batch':>9} {'p10':>8} {'p90':>8} {'Medges/s':>9} "
             f"{'edges':>9} {'input nodes':>12}"]
    for name, r in result["samplers"].items():
        lines.append(f"{name:<12} {r['ms_per_batch']:9.2f} {r['ms_p10']:8.2f} "
                     f"{r['ms_p90']:8.2f} {r['edges_per_s'] / 1e6:9.2f} {r['edges']:9.0f} "
                     f"{r['input_nodes']:12.0f}")
    lines += speedup_lines(result, ("speedup_vs_dgl_fused", "speedup_vs_dgl_unfused"))
    return "\n".join(lines)
