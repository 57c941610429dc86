"""`bench weighted-sampling` (`measure`): weighted neighbour sampling against uniform, ours and
DGL 2.1's, side by side.

Every contender samples the same seed batches (the first batches of a seeded shuffle of the
training ids) in one process with the same threads; timings are interleaved
(gnnrepro.bench.timing) and the median reported. Per weight distribution (`WEIGHTS`) and for
uniform sampling: ours ("fused", FusedSampler(weights=...)), DGL's NeighborSampler(prob=...)
("dgl-fused") and sample_neighbors(prob=...) + to_block ("dgl-unfused"). The headline is our
weighted sampling's cost over our uniform sampling (the issue's bound: 1.5x; GraphBolt's, in
dgl#7462: 14x), and its speed against DGL's weighted samplers. PyG's weighted sampling
(`weight_attr`) needs pyg-lib, which no registry serves for this torch: listed as not run.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import torch

from gnnrepro.bench.sampling_speed import make_sampler, seed_batches
from gnnrepro.bench.timing import summarize, time_interleaved
from gnnrepro.config import resolve_threads
from gnnrepro.datasets import load_scaled
from gnnrepro.env import environment
from gnnrepro.progress import Progress
from gnnrepro.sampling import FusedSampler, MiniBatch

#: dgl#7462's distribution (uniform random weights, half of them zero) and a heavy tail
#: (Pareto with shape 1.5: finite mean, infinite variance).
WEIGHTS = ("half-zero", "pareto")
SAMPLERS = ("fused", "dgl-fused", "dgl-unfused")
PYG_NOT_RUN = ("PyG's weighted sampling (NeighborLoader weight_attr) needs pyg-lib; no registry "
               "here serves pyg-lib for this torch, and torch-sparse's sampler has no weights")


def edge_weights(kind: str, num_edges: int, seed: int) -> torch.Tensor:
    """One seeded weight per edge from the named distribution."""
    gen = torch.Generator().manual_seed(seed)
    if kind == "half-zero":
        keep = torch.rand(num_edges, generator=gen) < 0.5
        return torch.rand(num_edges, generator=gen) * keep
    if kind == "pareto":
        return (1.0 - torch.rand(num_edges, generator=gen)) ** (-1.0 / 1.5)
    raise ValueError(f"weights: unknown distribution {kind!r}; choose from {', '.join(WEIGHTS)}")


def _contender(name: str, graph: Any, fanouts: list[int], seed: int,
               weights: torch.Tensor | None) -> Callable[[torch.Tensor, int], Any]:
    if weights is None:
        return make_sampler(name, graph, fanouts, seed)
    if name == "fused":
        return FusedSampler(graph, fanouts, seed=seed, weights=weights).sample
    from gnnrepro.baselines import dgl_samplers  # imports DGL only when measured
    cls = dgl_samplers.DGLFusedSampler if name == "dgl-fused" else dgl_samplers.DGLUnfusedSampler
    return cls(graph, fanouts, seed=seed, prob=weights).sample_native


def _edges(output: Any) -> int:
    if isinstance(output, MiniBatch):
        return sum(b.num_edges for b in output.blocks)
    return sum(int(b.num_edges()) for b in output[2])


def measure(dataset: str = "products-sim", scale: float = 1.0, root: str | None = None,
            fanouts: Sequence[int] = (15, 10, 5), batch_size: int = 1024, batches: int = 20,
            threads: int | None = None, repeats: int = 4, samplers: Sequence[str] = SAMPLERS,
            weights: Sequence[str] = WEIGHTS, seed: int = 0) -> dict:
    """Time each sampler on the same batches, uniform and under each weight distribution."""
    threads = resolve_threads(threads)
    torch.set_num_threads(threads)
    data = load_scaled(dataset, root, scale)
    graph, fanouts = data.graph, [int(f) for f in fanouts]
    seed_sets = seed_batches(data.train_idx, batch_size, batches, seed)
    if any(name.startswith("dgl") for name in samplers):
        from gnnrepro.baselines.dgl_import import set_dgl_threads
        set_dgl_threads(threads)
    contenders: dict[str, Callable] = {}
    for kind in ("uniform", *weights):
        w = None if kind == "uniform" else edge_weights(kind, graph.num_edges, seed)
        for name in samplers:
            contenders[f"{name}/{kind}"] = _contender(name, graph, fanouts, seed, w)
    edges: dict[str, int] = defaultdict(int)
    progress = Progress("bench weighted-sampling",
                        total=len(contenders) * repeats * len(seed_sets), unit="batch")

    def observe(name: str, output: Any) -> None:
        edges[name] += _edges(output)
        progress.update(note=name)

    calls = {n: (lambda x, f=f: f(x[1], x[0])) for n, f in contenders.items()}
    with progress:
        seconds = time_interleaved(calls, list(enumerate(seed_sets)), warmup=3, repeats=repeats,
                                   observe=observe)
    result: dict = {
        "benchmark": "weighted-sampling",
        "params": {"dataset": dataset, "scale": scale, "fanouts": fanouts,
                   "batch_size": batch_size, "batches": len(seed_sets), "threads": threads,
                   "repeats": repeats, "seed": seed, "weights": list(weights),
                   "num_nodes": graph.num_nodes, "num_edges": graph.num_edges,
                   "index_dtype": str(graph.indices.dtype)},
        "samplers": {}, "peers_not_run": {"pyg": PYG_NOT_RUN},
    }
    for name, secs in seconds.items():
        stats = summarize(secs)
        result["samplers"][name] = {"ms_per_batch": stats["ms_median"], "ms_p10": stats["ms_p10"],
                                    "ms_p90": stats["ms_p90"], "timings": stats["n"],
                                    "edges": edges[name] / len(secs)}
    ms = {name: r["ms_per_batch"] for name, r in result["samplers"].items()}
    result["ratios"] = {}
    for kind in weights:
        ratios: dict[str, float | None] = {}
        if "fused/uniform" in ms and f"fused/{kind}" in ms:
            ratios["cost_vs_our_uniform"] = ms[f"fused/{kind}"] / ms["fused/uniform"]
        for base in ("dgl-fused", "dgl-unfused"):
            if f"fused/{kind}" in ms and f"{base}/{kind}" in ms:
                ratios[f"speedup_vs_{base.replace('-', '_')}"] = (ms[f"{base}/{kind}"]
                                                                   / ms[f"fused/{kind}"])
            if f"{base}/uniform" in ms and f"{base}/{kind}" in ms:
                ratios[f"{base.replace('-', '_')}_cost_vs_its_uniform"] = (
                    ms[f"{base}/{kind}"] / ms[f"{base}/uniform"])
        result["ratios"][kind] = ratios
    result["env"] = environment()
    return result


def format_table(result: dict) -> str:
    """A fixed-width table of the result for the terminal."""
    lines = [f"{'sampler/weights':<24} {'ms/batch':>9} {'p10':>8} {'p90':>8} {'edges':>9}"]
    for name, r in result["samplers"].items():
        lines.append(f"{name:<24} {r['ms_per_batch']:9.2f} {r['ms_p10']:8.2f} "
                     f"{r['ms_p90']:8.2f} {r['edges']:9.0f}")
    for kind, ratios in result["ratios"].items():
        lines.append(f"{kind}: " + ", ".join(f"{k} {v:.2f}x" for k, v in ratios.items()))
    return "\n".join(lines)
