"""Command line: `python -m gnnrepro bench {sampling,train,scaling} ...` (see --help)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gnnrepro.atomic import write_json_atomic


def parse_fanouts(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"fanouts must be comma-separated ints, got {text!r}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m gnnrepro")
    commands = parser.add_subparsers(dest="command", required=True)
    bench = commands.add_parser("bench", help="run a benchmark and write JSON")
    kinds = bench.add_subparsers(dest="benchmark", required=True)
    s = kinds.add_parser("sampling", help="DGL samplers vs reference vs fused, side by side")
    s.add_argument("--dataset", default="products-sim")
    s.add_argument("--scale", type=float, default=0.25, help="products-sim scale")
    s.add_argument("--root", default=None, help="dataset root (OGB datasets)")
    s.add_argument("--fanouts", type=parse_fanouts, default=[15, 10, 5])
    s.add_argument("--batch-size", type=int, default=1024)
    s.add_argument("--batches", type=int, default=50)
    s.add_argument("--threads", type=int, default=2)
    s.add_argument("--repeats", type=int, default=4,
                   help="passes over the batches, interleaved in segments of 8 batches")
    s.add_argument("--samplers", default="dgl-unfused,dgl-fused,reference,fused",
                   help="comma-separated subset of dgl-unfused,dgl-fused,reference,fused")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--out", type=Path, default=None, help="JSON file to write")

    t = kinds.add_parser("train", help="end-to-end training: dgl vs reference vs fused vs "
                                       "fused+pinned, each in a fresh process")
    t.add_argument("--dataset", default="products-sim")
    t.add_argument("--scale", type=float, default=0.05, help="products-sim scale")
    t.add_argument("--root", default=None, help="dataset root (OGB datasets)")
    t.add_argument("--fanouts", type=parse_fanouts, default=[15, 10, 5])
    t.add_argument("--batch-size", type=int, default=1024)
    t.add_argument("--epochs", type=int, default=3)
    t.add_argument("--pipelines", default="dgl,fused,fused+pinned",
                   help="comma-separated subset of dgl,reference,fused,fused+pinned")
    t.add_argument("--threads", type=int, default=2, help="torch threads of the trainer")
    t.add_argument("--workers", type=int, default=1, help="sampling workers (fused+pinned)")
    t.add_argument("--streams", type=int, default=2, help="CUDA copy streams (fused+pinned)")
    t.add_argument("--prefetch", type=int, default=2, help="batches ahead (fused+pinned)")
    t.add_argument("--device", default="cpu")
    t.add_argument("--lr", type=float, default=0.003)
    t.add_argument("--hidden", type=int, default=256)
    t.add_argument("--repeats", type=int, default=1,
                   help="rounds of all pipelines, each round in a rotated order")
    t.add_argument("--timeline-batches", type=int, default=0,
                   help="keep the timeline of this many batches of the second epoch")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--out", type=Path, default=None, help="JSON file to write")

    c = kinds.add_parser("scaling", help="data-parallel training on 1, 2, 4, ... ranks (GPUs, "
                                         "or CPU processes): dgl vs fused+pinned, and memory "
                                         "per added rank")
    c.add_argument("--dataset", default="products-sim")
    c.add_argument("--scale", type=float, default=0.05, help="products-sim scale")
    c.add_argument("--root", default=None, help="dataset root (OGB datasets)")
    c.add_argument("--fanouts", type=parse_fanouts, default=[15, 10, 5])
    c.add_argument("--batch-size", type=int, default=1024,
                   help="seeds per step, split between the ranks (see --per-rank-batch)")
    c.add_argument("--per-rank-batch", action="store_true",
                   help="--batch-size seeds per rank per step (DGL's multi-GPU convention)")
    c.add_argument("--epochs", type=int, default=2)
    c.add_argument("--ranks", type=parse_fanouts, default=[1, 2, 4],
                   help="comma-separated world sizes")
    c.add_argument("--pipelines", default="dgl,fused+pinned",
                   help="comma-separated subset of dgl,reference,fused,fused+pinned")
    c.add_argument("--threads", type=int, default=1, help="torch threads per rank")
    c.add_argument("--workers", type=int, default=1, help="sampling workers per rank")
    c.add_argument("--streams", type=int, default=2, help="CUDA copy streams (fused+pinned)")
    c.add_argument("--prefetch", type=int, default=2, help="batches ahead (fused+pinned)")
    c.add_argument("--device", default="cpu", help="cpu (gloo ranks) or cuda (NCCL, a GPU each)")
    c.add_argument("--lr", type=float, default=0.003)
    c.add_argument("--hidden", type=int, default=256)
    c.add_argument("--timeout", type=float, default=120.0,
                   help="seconds before a collective waiting on a dead rank fails")
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--out", type=Path, default=None, help="JSON file to write")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "bench" and args.benchmark == "sampling":
        from gnnrepro.bench import sampling
        result = sampling.run(dataset=args.dataset, scale=args.scale, root=args.root,
                              fanouts=args.fanouts, batch_size=args.batch_size,
                              batches=args.batches, threads=args.threads, repeats=args.repeats,
                              samplers=[s for s in args.samplers.split(",") if s],
                              seed=args.seed)
        print(sampling.format_table(result))
    elif args.command == "bench" and args.benchmark == "train":
        from gnnrepro.bench import train
        result = train.run(dataset=args.dataset, scale=args.scale, root=args.root,
                           fanouts=args.fanouts, batch_size=args.batch_size,
                           epochs=args.epochs,
                           pipelines=[p for p in args.pipelines.split(",") if p],
                           threads=args.threads, workers=args.workers, streams=args.streams,
                           prefetch=args.prefetch, seed=args.seed, device=args.device,
                           lr=args.lr, hidden=args.hidden, repeats=args.repeats,
                           timeline_batches=args.timeline_batches)
        print(train.format_table(result))
    elif args.command == "bench" and args.benchmark == "scaling":
        from gnnrepro.bench import scaling
        result = scaling.run(dataset=args.dataset, scale=args.scale, root=args.root,
                             fanouts=args.fanouts, batch_size=args.batch_size,
                             epochs=args.epochs, ranks=args.ranks,
                             pipelines=[p for p in args.pipelines.split(",") if p],
                             threads=args.threads, workers=args.workers, seed=args.seed,
                             device=args.device, lr=args.lr, hidden=args.hidden,
                             streams=args.streams, prefetch=args.prefetch,
                             timeout_s=args.timeout, per_rank_batch=args.per_rank_batch)
        print(scaling.format_table(result))
    if args.out is not None:
        write_json_atomic(args.out, result)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
