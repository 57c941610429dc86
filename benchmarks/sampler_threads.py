"""The fused CPU sampler at 1, 2, 4, ... threads on one machine (issue 49 item 6), with each
relabel (the ordered pass beside the sampling, and the parallel passes) and the machine's
random-read rate at the same thread counts, and the typed op on the CPU and the GPU (mag-sim):
milliseconds per batch, medians of interleaved passes, JSON out.

    python benchmarks/sampler_threads.py --out DIR [--scale 1.0] [--threads 1,2,4,8,16]

`homogeneous` holds the default setting's times (the relabel csrc/sampling/relabel_mode.h picks
at each thread count); `relabel` both relabels' at every count, measured in turn batch by batch;
`random_reads` the probe's lines per second over the graph's `indices` (prefetching as the
sampler's gather does), so that the sampler's speed-up from 1 thread reads beside the memory's.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gnnrepro.bench.random_reads import probe_ceiling  # noqa: E402
from gnnrepro.bench.sampling_speed import seed_batches  # noqa: E402
from gnnrepro.datasets import load  # noqa: E402
from gnnrepro.env import environment  # noqa: E402
from gnnrepro.sampling import FusedSampler  # noqa: E402
from gnnrepro.sampling.relabel_mode import (parallel_relabel_threads,  # noqa: E402
                                            relabel_in_parallel_from)

#: parallel_relabel_threads settings that force each relabel.
RELABELS = {"ordered": 1 << 30, "parallel": 1}


def _ms(sample: Callable, batches: list, passes: int) -> float:
    """Median milliseconds a batch over `passes` passes (after one warm-up pass)."""
    times = []
    for p in range(passes + 1):
        for b, seeds in enumerate(batches):
            start = time.perf_counter()
            sample(seeds, b)
            if p:
                times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def _relabels_ms(sample: Callable, batches: list, passes: int) -> dict[str, float]:
    """Median milliseconds a batch with each relabel, the two alternating batch by batch (after
    one warm-up pass of each), so that drift on the machine meets both alike."""
    times: dict[str, list[float]] = {name: [] for name in RELABELS}
    for p in range(passes + 1):
        for b, seeds in enumerate(batches):
            for name, setting in RELABELS.items():
                with relabel_in_parallel_from(setting):
                    start = time.perf_counter()
                    sample(seeds, b)
                    if p:
                        times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) * 1e3 for name, t in times.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--typed-scale", type=float, default=None,
                        help="mag-sim's scale for the typed op (default: --scale)")
    parser.add_argument("--threads", default="1,2,4,8,16")
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--reads", type=int, default=1 << 22,
                        help="random reads per thread per probe run")
    args = parser.parse_args()
    threads = [int(x) for x in args.threads.split(",")]
    default = parallel_relabel_threads()
    result = {"params": vars(args) | {"out": str(args.out)}, "homogeneous": {}, "relabel": {},
              "default_parallel_relabel_threads": default, "random_reads": {}, "typed": {}}
    data = load("products-sim", scale=args.scale)
    batches = seed_batches(data.train_idx, args.batch_size, args.batches, 0)
    sampler = FusedSampler(data.graph, [15, 10, 5], seed=0)
    from gnnrepro import _C
    gather_ahead = _C.sampler_prefetch_ahead()["indices"]
    for t in threads:
        torch.set_num_threads(t)
        both = _relabels_ms(sampler.sample, batches, args.passes)
        result["relabel"][str(t)] = both
        result["homogeneous"][str(t)] = both["parallel" if t >= default else "ordered"]
        probe = probe_ceiling(data.graph.indices, t, reads_per_thread=args.reads, repeats=3,
                              prefetch_ahead=gather_ahead)
        result["random_reads"][str(t)] = probe["lines_per_s"]
        print(f"products-sim {args.scale}: {t} threads: ordered {both['ordered']:.2f} ms, "
              f"parallel {both['parallel']:.2f} ms; random reads "
              f"{probe['lines_per_s'] / 1e6:.1f} M lines/s", flush=True)
    first = str(threads[0])
    result["speedup_from_first_count"] = {
        name: {t: result["relabel"][first][name] / result["relabel"][t][name]
               for t in result["relabel"]} for name in RELABELS} | {
        "random_reads": {t: result["random_reads"][t] / result["random_reads"][first]
                         for t in result["random_reads"]}}
    typed_scale = args.scale if args.typed_scale is None else args.typed_scale
    mag = load("mag-sim", scale=typed_scale)
    seeds = seed_batches(mag.train_idx, args.batch_size, args.batches, 0)
    torch.set_num_threads(max(threads))
    cpu = FusedSampler(mag.graph, [25, 20], seed=0, target="paper")
    result["typed"]["cpu"] = _ms(cpu.sample, seeds, args.passes)
    if torch.cuda.is_available():
        gpu = FusedSampler(mag.graph.to("cuda"), [25, 20], seed=0, target="paper")

        def on_gpu(ids: torch.Tensor, b: int) -> None:
            gpu.sample(ids.cuda(), b)
            torch.cuda.synchronize()
        result["typed"]["cuda"] = _ms(on_gpu, seeds, args.passes)
        same = all(torch.equal(a.cpu(), c) for x, y in
                   [(gpu.sample(seeds[0].cuda(), 0), cpu.sample(seeds[0], 0))]
                   for ta, tc in zip(x.blocks, y.blocks)
                   for a, c in [(ta.src_nodes[t], tc.src_nodes[t]) for t in tc.src_nodes]
                   + [(ta.blocks[r].indices, tc.blocks[r].indices) for r in tc.blocks])
        result["typed"]["cuda_equals_cpu"] = same
    print(f"mag-sim {typed_scale} typed: {result['typed']}")
    result["env"] = environment()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "sampler-threads.json").write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
