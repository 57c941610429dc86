"""The fused CPU sampler at 1, 2, 4, ... threads on one machine (issue 49 item 6), and the typed
op on the CPU and the GPU (mag-sim): seconds per batch, medians of interleaved passes, JSON out.

    python benchmarks/sampler_threads.py --out DIR [--scale 1.0] [--threads 1,2,4,8,16]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gnnrepro.bench.sampling_speed import seed_batches  # noqa: E402
from gnnrepro.datasets import load  # noqa: E402
from gnnrepro.env import environment  # noqa: E402
from gnnrepro.sampling import FusedSampler  # noqa: E402


def _ms(sample, batches: list, passes: int) -> float:
    """Median milliseconds a batch over `passes` passes (after one warm-up pass)."""
    times = []
    for p in range(passes + 1):
        for b, seeds in enumerate(batches):
            start = time.perf_counter()
            sample(seeds, b)
            if p:
                times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--threads", default="1,2,4,8,16")
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--passes", type=int, default=3)
    args = parser.parse_args()
    result = {"params": vars(args) | {"out": str(args.out)}, "homogeneous": {}, "typed": {}}
    data = load("products-sim", scale=args.scale)
    batches = seed_batches(data.train_idx, 1024, args.batches, 0)
    sampler = FusedSampler(data.graph, [15, 10, 5], seed=0)
    for t in [int(x) for x in args.threads.split(",")]:
        torch.set_num_threads(t)
        result["homogeneous"][str(t)] = _ms(sampler.sample, batches, args.passes)
        print(f"products-sim {args.scale}: {t} threads {result['homogeneous'][str(t)]:.2f} ms")
    mag = load("mag-sim", scale=args.scale)
    seeds = seed_batches(mag.train_idx, 1024, args.batches, 0)
    torch.set_num_threads(max(int(x) for x in args.threads.split(",")))
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
    print(f"mag-sim {args.scale} typed: {result['typed']}")
    result["env"] = environment()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "sampler-threads.json").write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
