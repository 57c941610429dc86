"""Epoch time on k ranks projected from measured parts, and checked where k ranks can run
(issue 49 item 4; gnnrepro.distributed.projection, .scaling_parts). JSON out.

On the CPU: the parts of CPU ranks (k at once on C // k cores each, the gloo all-reduce), the
projected epochs, and with --validate `bench scaling`'s measured epochs at the same k beside
them, with the projection's error. On a GPU machine (--device cuda): the host parts of k ranks
at once on its cores (k = 1, 2, 4, 8: C // k cores each), the model's step and the copy rate
on its one GPU, the projected 2/4/8-GPU epochs, and with --validate the one-GPU epoch measured
through the data-parallel launcher (NCCL at one rank) beside the projection's.

    python benchmarks/scaling_projection.py --out DIR [--device cuda] [--scale 0.05]
        [--ranks 1,2,4] [--pipelines reference,fused+pinned] [--validate]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gnnrepro.bench.scaling_projection import (scaling_projection,  # noqa: E402
                                               validate_projection)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--scale", type=float, default=0.05, help="products-sim scale")
    parser.add_argument("--ranks", default=None, help="world sizes (default: 1,2,4 on the "
                                                      "CPU, 1,2,4,8 on a GPU)")
    parser.add_argument("--pipelines", default="reference,fused+pinned")
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--per-rank-batch", action="store_true",
                        help="--batch-size seeds per rank (DGL's multi-GPU convention; the "
                             "default on a GPU); default on the CPU: split between the ranks")
    parser.add_argument("--batches", type=int, default=10, help="timed batches per rank")
    parser.add_argument("--validate", action="store_true",
                        help="also train on every k this machine can run (bench scaling)")
    parser.add_argument("--epochs", type=int, default=2, help="of the validating runs")
    parser.add_argument("--eval-ids", type=int, default=2048,
                        help="val and test ids the validating runs evaluate")
    args = parser.parse_args(argv)
    cuda = args.device.startswith("cuda")
    ranks = [int(k) for k in (args.ranks or ("1,2,4,8" if cuda else "1,2,4")).split(",")]
    result = scaling_projection(
        "products-sim", args.scale, ranks, args.pipelines.split(","), device=args.device,
        batch_size=args.batch_size, per_rank_batch=args.per_rank_batch or cuda,
        batches=args.batches, epochs=args.epochs, eval_ids=args.eval_ids)
    out = args.out / "scaling-projection.json"
    args.out.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")  # kept if the validation is cut short
    if args.validate:
        validate_projection(result)
        out.write_text(json.dumps(result, indent=1) + "\n")
    for row in result["rows"]:
        measured = row.get("measured_epoch_s")
        print(f"{row['pipeline']:<13} {row['world_size']} rank(s): projected "
              f"{row['epoch_s']:.3f} s ({row['steps']} steps x {row['step_s'] * 1e3:.2f} ms)"
              + (f", measured {measured:.3f} s, error {row['error']:+.1%}"
                 if measured is not None else ""), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
