"""k data-parallel ranks against one rank with the same global batch (issue 49 item 3): on a GPU,
one rank over NCCL against 2, 4 and 8 ranks sharing GPU 0 over gloo (the multi-GPU code path on
one chip: never a scaling figure); on the CPU, gloo ranks. Weights after 50 steps, their
largest relative difference, whether every rank's are identical, and the host memory (PSS) each
added rank costs (gnnrepro.distributed.equivalence). JSON out.

    python benchmarks/rank_equivalence.py --out DIR [--device cuda] [--world-sizes 2,4,8]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from gnnrepro.datasets import load  # noqa: E402
from gnnrepro.distributed.equivalence import rank_equivalence  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--scale", type=float, default=0.05, help="products-sim scale")
    parser.add_argument("--world-sizes", default="2,4,8")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--batch-size", type=int, default=1024, help="the global batch")
    parser.add_argument("--threads", type=int, default=None, help="torch threads per rank")
    args = parser.parse_args(argv)
    dataset = load("products-sim", scale=args.scale)
    result = rank_equivalence(dataset, [int(k) for k in args.world_sizes.split(",")],
                              steps=args.steps, batch_size=args.batch_size, device=args.device,
                              share_device=args.device.startswith("cuda"),
                              threads=args.threads, workers=0)
    # The ranks keep torch's default, full fp32 matmuls (TF32 off): recorded, not assumed.
    result["params"]["float32_matmul_precision"] = torch.get_float32_matmul_precision()
    for row in result["rows"]:
        print(f"{row['world_size']} rank(s) ({row['backend']}): relative difference "
              f"{row['relative_difference']:.2e}, ranks identical {row['ranks_identical']}, "
              f"PSS {row['pss_bytes'] / 2**20:.0f} MiB", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "rank-equivalence.json").write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
