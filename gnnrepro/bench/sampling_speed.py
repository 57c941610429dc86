"""`bench sampling` (`measure`): DGL's samplers, the reference and the fused sampler side by side.

All contenders sample the same seed batches (the first batches of a seeded shuffle of the
training ids) in one process with the same number of threads; timings are interleaved and the
median is reported. DGL is timed on its native output (what a DGL user gets), ours on our Blocks.
The reference sampler allocates large temporaries per batch, which evict the caches and
memory of whoever runs after it, so it is timed in a phase of its own (same process,
batches and method) rather than interleaved with the samplers the speedups compare.

Peers (gnnrepro.peers: GraphBolt, PyG) sample the same seed batches of the same dataset cache
with the same threads, each in its own process and environment; their passes alternate with
ours, round by round (a peer's first pass is an untimed warm-up). A peer that is not set up is
listed under peers_not_run with the command that sets it up.
"""
from __future__ import annotations

import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from gnnrepro.bench.random_reads import read_ceiling, sampler_line_reads
from gnnrepro.bench.timing import round_medians, summarize, time_interleaved
from gnnrepro.config import SETTINGS, check_placement, resolve_threads, validate
from gnnrepro.datasets import SCALED_DATASETS, load_scaled
from gnnrepro.env import environment
from gnnrepro.graph import CSCGraph
from gnnrepro.peers import PEERS, PeerProcess, check_peers, open_peers
from gnnrepro.progress import Progress
from gnnrepro.sampling import FusedSampler, MiniBatch, ReferenceSampler

SAMPLERS = ("dgl-unfused", "dgl-fused", "reference", "fused")
ISOLATED = ("reference",)  # timed in a phase of their own; see the module docstring


def seed_batches(train_idx: torch.Tensor, batch_size: int, batches: int,
                 seed: int) -> list[torch.Tensor]:
    """The first `batches` full mini-batches of a seeded shuffle of the training ids."""
    shuffle = torch.randperm(train_idx.numel(), generator=torch.Generator().manual_seed(seed))
    order = train_idx[shuffle]
    available = order.numel() // batch_size
    if available == 0:
        raise ValueError(f"batch_size={batch_size} exceeds the {order.numel()} training ids")
    return [order[i * batch_size:(i + 1) * batch_size] for i in range(min(batches, available))]


def on_gpu(sample: Callable[[torch.Tensor, int], MiniBatch]) -> Callable[[torch.Tensor, int],
                                                                          MiniBatch]:
    """`sample` with its seeds moved to the GPU and the GPU synchronized after each call, so
    that its time is the GPU's too."""
    def run(seeds: torch.Tensor, batch_id: int) -> MiniBatch:
        out = sample(seeds.to("cuda"), batch_id)
        torch.cuda.synchronize()
        return out
    return run


def make_sampler(name: str, graph: CSCGraph, fanouts: list[int], seed: int,
                 sampler_device: str = "cpu") -> Callable:
    """A callable (seeds, batch_id) -> sample for the named contender (DGL's returns its
    native output). `sampler_device` places the fused sampler (gnnrepro.config) and the
    reference (cpu or cuda: the unfused two-step sampler in plain torch on the GPU); seeds are
    moved to its device, and it is synchronized so its time is the GPU's too."""
    if name in ("fused", "reference") and sampler_device != "cpu":
        if name == "reference" and sampler_device != "cuda":
            raise ValueError(f"sampler_device={sampler_device!r}: the reference sampler runs "
                             f"on 'cpu' or 'cuda' (it reads no pinned graph over UVA)")
        check_placement("cuda", sampler_device, "pinned")
        if sampler_device == "uva":
            graph.pin_memory_()
            sampler: Any = FusedSampler(graph, fanouts, seed=seed, device="cuda")
        else:
            cls = FusedSampler if name == "fused" else ReferenceSampler
            sampler = cls(graph.to("cuda"), fanouts, seed=seed)
        return on_gpu(sampler.sample)
    if sampler_device != "cpu":
        raise ValueError(f"sampler_device={sampler_device!r} places the fused and reference "
                         f"samplers only; {name!r} samples on the CPU (leave it out with "
                         f"--samplers fused)")
    if name == "fused":
        return FusedSampler(graph, fanouts, seed=seed).sample
    if name == "reference":
        return ReferenceSampler(graph, fanouts, seed=seed).sample
    if name in ("dgl-fused", "dgl-unfused"):
        from gnnrepro.baselines import dgl_samplers  # imports DGL only when it is measured
        cls = (dgl_samplers.DGLFusedSampler if name == "dgl-fused"
               else dgl_samplers.DGLUnfusedSampler)
        return cls(graph, fanouts, seed=seed).sample_native
    raise ValueError(f"unknown sampler {name!r}; choose from {', '.join(SAMPLERS)}")


def output_counts(output) -> tuple[int, int]:
    """(block edges, input nodes) of a MiniBatch or of DGL's (input_nodes, seeds, blocks)."""
    if isinstance(output, MiniBatch):
        return sum(b.num_edges for b in output.blocks), output.input_nodes.numel()
    input_nodes, _, blocks = output
    return sum(int(b.num_edges()) for b in blocks), int(input_nodes.numel())


def measure(dataset: str = SETTINGS["dataset"].default, scale: float = 0.25,
            root: str | None = None, fanouts: Sequence[int] = tuple(SETTINGS["fanouts"].default),
            batch_size: int = SETTINGS["batch_size"].default, batches: int = 50,
            threads: int | None = None, repeats: int = 4, samplers: Sequence[str] = SAMPLERS,
            seed: int = SETTINGS["seed"].default,
            sampler_device: str = SETTINGS["sampler_device"].default,
            peers: Sequence[str] = (), ceiling: bool = False) -> dict:
    """Time each sampler, and each of `peers`, on the same batches (`threads` torch threads;
    None: the machine's cores); return the JSON-ready result. `ceiling`: also probe this
    machine's random-read ceiling over the graph and count the fused sampler's line reads,
    its batches timed again alone (gnnrepro.bench.random_reads), under "random_reads"."""
    check_peers(peers)
    if ceiling and ("fused" not in samplers or sampler_device != "cpu"):
        raise ValueError("ceiling: the random-read probe compares the fused sampler on the "
                         "CPU (samplers must include 'fused', sampler_device 'cpu')")
    batch_size = validate("batch_size", batch_size)
    fanouts = validate("fanouts", list(fanouts))
    threads = resolve_threads(threads)
    torch.set_num_threads(threads)
    data = load_scaled(dataset, root, scale)
    seed_sets = seed_batches(data.train_idx, batch_size, batches, seed)
    contenders = {}
    for name in samplers:
        contenders[name] = make_sampler(name, data.graph, fanouts, seed, sampler_device)
    if any(name.startswith("dgl") for name in samplers):
        from gnnrepro.baselines.dgl_import import set_dgl_threads
        set_dgl_threads(threads)
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])

    progress = Progress("bench sampling",
                        total=(len(contenders) + len(peers)) * repeats * len(seed_sets),
                        unit="batch")

    def observe(name: str, output) -> None:
        edges, inputs = output_counts(output)
        totals[name][0] += edges
        totals[name][1] += inputs
        progress.update(note=name)

    setup = {"dataset": dataset, "root": root, "scale": scale, "fanouts": fanouts,
             "batch_size": batch_size, "threads": threads, "seed": seed}
    with progress, tempfile.TemporaryDirectory() as scratch, \
            open_peers(list(peers), setup) as (running, peers_not_run):
        seconds = _time_passes(contenders, seed_sets, repeats, running, scratch, observe,
                               totals, progress)
        peer_info = {name: peer.opened for name, peer in running.items()}
    result: dict = {
        "benchmark": "sampling",
        "params": {"dataset": dataset, "scale": scale if dataset in SCALED_DATASETS else None,
                   "fanouts": fanouts, "batch_size": batch_size, "batches": len(seed_sets),
                   "threads": threads, "repeats": repeats, "seed": seed,
                   "sampler_device": sampler_device,
                   "timed_in_own_phase": [n for n in samplers if n in ISOLATED],
                   "num_nodes": data.graph.num_nodes, "num_edges": data.graph.num_edges,
                   "index_dtype": str(data.graph.indices.dtype), "peers": list(peers)},
        "samplers": {},
        "peers": {name: {"label": PEERS[name].label, **opened}
                  for name, opened in peer_info.items()},
        "peers_not_run": peers_not_run,
    }
    rounds = {name: round_medians(secs, repeats) for name, secs in seconds.items()}
    for name, secs in seconds.items():
        result["samplers"][name] = _sampler_summary(secs, totals[name], rounds[name])
    result.update(_speedups(result["samplers"], rounds, peer_info))
    if ceiling:
        lines, alone_ms = sampler_line_reads(data.graph, fanouts, seed_sets, seed)
        result["random_reads"] = read_ceiling(data.graph, lines, float(np.median(alone_ms)),
                                              threads, seed)
        result["random_reads"]["ms_per_batch_alone"] = summarize(
            [ms / 1e3 for ms in alone_ms])
    result["env"] = environment()
    return result


def _time_passes(contenders: dict[str, Callable], seed_sets: list[torch.Tensor], repeats: int,
                 running: dict[str, PeerProcess], scratch: str, observe: Callable,
                 totals: dict[str, list[int]], progress: Progress) -> dict[str, list[float]]:
    """Seconds per batch of every contender and peer: each round ours interleaved (after a
    warm-up in the first), then each peer's pass; then the ISOLATED samplers in a phase of
    their own. The peers read the seed batches from a file in `scratch`."""
    indexed = list(enumerate(seed_sets))
    calls = {n: (lambda x, f=f: f(x[1], x[0])) for n, f in contenders.items()}
    seconds: dict[str, list[float]] = defaultdict(list)
    seeds_file = str(Path(scratch) / "seeds.npy")
    np.save(seeds_file, torch.stack(seed_sets).numpy())
    shared = [n for n in calls if n not in ISOLATED]
    for r in range(repeats):  # ours interleaved, then each peer: alternating passes
        if shared:
            for name, secs in time_interleaved(
                    {n: calls[n] for n in shared}, indexed, warmup=3 if r == 0 else 0,
                    repeats=1, observe=observe).items():
                seconds[name] += secs
        for name, peer in running.items():
            _peer_pass(name, peer, seeds_file, r == 0, seconds, totals, progress)
    isolated = [n for n in calls if n in ISOLATED]
    if isolated:
        seconds |= time_interleaved({n: calls[n] for n in isolated}, indexed, warmup=3,
                                    repeats=repeats, observe=observe)
    return seconds


def _sampler_summary(secs: list[float], totals: list[int],
                     round_ms: list[float]) -> dict[str, Any]:
    """One contender's result: median and spread of its batch times, edges per second and
    input nodes per batch, and its median per round."""
    stats = summarize(secs)
    edges, input_nodes = (total / len(secs) for total in totals)
    return {"ms_per_batch": stats["ms_median"], "ms_p10": stats["ms_p10"],
            "ms_p90": stats["ms_p90"], "timings": stats["n"],
            "edges_per_s": edges / (stats["ms_median"] / 1e3),
            "input_nodes": input_nodes, "ms_round_medians": round_ms}


def _speedups(samplers: dict[str, dict], rounds: dict[str, list[float]],
              peers: Iterable[str]) -> dict[str, Any]:
    """speedup_vs_<base>: the fused sampler's over DGL's and each peer's (None where either
    did not run), and the same ratio per round, whose spread shows how stable it is."""
    out: dict[str, Any] = {}
    ours = samplers.get("fused", {}).get("ms_per_batch")
    for base in ("dgl_fused", "dgl_unfused", *(p.replace("-", "_") for p in peers)):
        other = samplers.get(base.replace("_", "-"), {}).get("ms_per_batch")
        out[f"speedup_vs_{base}"] = other / ours if ours and other else None
        if ours and other:
            out[f"speedup_vs_{base}_rounds"] = [
                theirs / mine for theirs, mine in zip(rounds[base.replace("_", "-")],
                                                      rounds["fused"])]
    return out


def _peer_pass(name: str, peer: PeerProcess, seeds_file: str, warm_up: bool,
               seconds: dict[str, list[float]], totals: dict[str, list[int]],
               progress: Progress) -> None:
    """One timed pass of a peer over the seed batches (after an untimed one when `warm_up`)."""
    if warm_up:
        peer.request("sample", seeds_file=seeds_file)
    reply = peer.request("sample", seeds_file=seeds_file)
    seconds[name] += reply["seconds"]
    totals[name][0] += sum(reply["edges"])
    totals[name][1] += sum(reply["input_nodes"])
    progress.update(len(reply["seconds"]), note=name)


def format_table(result: dict) -> str:
    """A fixed-width table of the result for the terminal."""
    lines = [f"{'sampler':<12} {'ms/batch':>9} {'p10':>8} {'p90':>8} {'Medges/s':>9} "
             f"{'input nodes':>12}"]
    for name, r in result["samplers"].items():
        lines.append(f"{name:<12} {r['ms_per_batch']:9.2f} {r['ms_p10']:8.2f} {r['ms_p90']:8.2f} "
                     f"{r['edges_per_s'] / 1e6:9.2f} {r['input_nodes']:12.0f}")
    for name, why in result.get("peers_not_run", {}).items():
        lines.append(f"{name:<12} not run: {why}")
    reads = result.get("random_reads")
    if reads:
        lines.append(f"fused alone: {reads['ms_per_batch_alone']['ms_median']:.2f} ms/batch, "
                     f"{reads['lines_per_batch']['total']:.0f} random lines/batch, "
                     f"{reads['lines_per_s'] / 1e6:.1f} M lines/s; at the probe's rate over "
                     f"each array they would take {reads['ceiling_ms_per_batch']:.2f} ms: "
                     f"{reads['share_of_ceiling']:.0%} of the ceiling "
                     f"({reads['threads']} threads)")
    lines += speedup_lines(result, ("speedup_vs_dgl_fused", "speedup_vs_dgl_unfused",
                                    *(f"speedup_vs_{p.replace('-', '_')}"
                                      for p in result.get("peers", {}))))
    return "\n".join(lines)


def speedup_lines(result: dict, keys: Iterable[str]) -> list[str]:
    """"fused speedup vs X: a.bcx (rounds: lo-hi)" for each of `keys` the result holds."""
    lines = []
    for key in keys:
        if result.get(key):
            per_round = result.get(f"{key}_rounds") or []
            spread = (f" (rounds: {min(per_round):.2f}x-{max(per_round):.2f}x)"
                      if per_round else "")
            lines.append(f"fused {key.replace('_', ' ')}: {result[key]:.2f}x{spread}")
    return lines
