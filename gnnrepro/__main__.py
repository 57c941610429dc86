"""Command line: `python -m gnnrepro bench {sampling,train,scaling,storage} ...` (see --help)."""
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


def parse_names(text: str) -> list[str]:
    return [name for name in text.split(",") if name]


def _add_common(p: argparse.ArgumentParser, scale: float, threads_help: str) -> None:
    """The options every benchmark takes: data, sampling, threads, seed, output."""
    p.add_argument("--dataset", default="products-sim")
    p.add_argument("--scale", type=float, default=scale, help="products-sim scale")
    p.add_argument("--root", default=None, help="dataset root (OGB datasets)")
    p.add_argument("--fanouts", type=parse_fanouts, default=[15, 10, 5])
    p.add_argument("--threads", type=int, default=2, help=threads_help)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=None, help="JSON file to write")


def _add_training(p: argparse.ArgumentParser, epochs: int, pipelines: str,
                  workers_help: str) -> None:
    """The options of the training benchmarks: epochs, pipelines and their settings, model."""
    p.add_argument("--epochs", type=int, default=epochs)
    p.add_argument("--pipelines", type=parse_names, default=parse_names(pipelines),
                   help="comma-separated subset of dgl,reference,fused,fused+pinned")
    p.add_argument("--workers", type=int, default=1, help=workers_help)
    p.add_argument("--streams", type=int, default=2, help="CUDA copy streams (fused+pinned)")
    p.add_argument("--prefetch", type=int, default=2, help="batches ahead (fused+pinned)")
    p.add_argument("--lr", type=float, default=0.003)
    p.add_argument("--hidden", type=int, default=256)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m gnnrepro")
    commands = parser.add_subparsers(dest="command", required=True)
    bench = commands.add_parser("bench", help="run a benchmark and write JSON")
    kinds = bench.add_subparsers(dest="benchmark", required=True)
    s = kinds.add_parser("sampling", help="DGL samplers vs reference vs fused, side by side")
    _add_common(s, 0.25, "torch (and DGL) threads")
    s.add_argument("--batch-size", type=int, default=1024)
    s.add_argument("--batches", type=int, default=50)
    s.add_argument("--repeats", type=int, default=4,
                   help="passes over the batches, interleaved in segments of 8 batches")
    s.add_argument("--samplers", type=parse_names,
                   default=parse_names("dgl-unfused,dgl-fused,reference,fused"),
                   help="comma-separated subset of dgl-unfused,dgl-fused,reference,fused")

    t = kinds.add_parser("train", help="end-to-end training: dgl vs reference vs fused vs "
                                       "fused+pinned, each in a fresh process")
    _add_common(t, 0.05, "torch threads of the trainer")
    _add_training(t, 3, "dgl,fused,fused+pinned", "sampling workers (fused+pinned)")
    t.add_argument("--batch-size", type=int, default=1024)
    t.add_argument("--device", default="cpu")
    t.add_argument("--repeats", type=int, default=1,
                   help="rounds of all pipelines, in Williams-balanced orders")
    t.add_argument("--timeline-batches", type=int, default=0,
                   help="keep the timeline of this many batches of the second epoch")

    c = kinds.add_parser("scaling", help="data-parallel training on 1, 2, 4, ... ranks (GPUs, "
                                         "or CPU processes): dgl vs fused+pinned, and memory "
                                         "per added rank")
    _add_common(c, 0.05, "torch threads per rank")
    c.set_defaults(threads=1)
    _add_training(c, 2, "dgl,fused+pinned", "sampling workers per rank")
    c.add_argument("--batch-size", type=int, default=1024,
                   help="seeds per step, split between the ranks (see --per-rank-batch)")
    c.add_argument("--per-rank-batch", action="store_true",
                   help="--batch-size seeds per rank per step (DGL's multi-GPU convention)")
    c.add_argument("--ranks", type=parse_fanouts, default=[1, 2, 4],
                   help="comma-separated world sizes")
    c.add_argument("--device", default="cpu", help="cpu (gloo ranks) or cuda (NCCL, a GPU each)")
    c.add_argument("--timeout", type=float, default=120.0,
                   help="seconds before a collective waiting on a dead rank fails")
    st = kinds.add_parser("storage", help="feature stores (memory, disk, mmap, lmdb) on data "
                                          "larger than the memory they may use")
    _add_common(st, 0.25, "torch threads of each store's process")
    st.add_argument("--batch-size", type=int, default=1024)
    st.add_argument("--batches", type=int, default=8, help="batches per measured epoch")
    st.add_argument("--epochs", type=int, default=2, help="measured epochs of gathers")
    st.add_argument("--stores", type=parse_names, default=parse_names("memory,disk,mmap,lmdb"))
    st.add_argument("--memory-limit", type=int, default=None,
                    help="bytes a capped store may use beyond the training process's own "
                         "(default: 25%% of the feature file)")
    st.add_argument("--budget-fraction", type=float, default=0.10,
                    help="disk store's hot set + cache, as a fraction of the feature file")
    st.add_argument("--hot-policy", default="degree", help="degree or pagerank")
    st.add_argument("--engine", default="auto", help="auto, io_uring or pread")
    st.add_argument("--queue-depth", type=int, default=32)
    st.add_argument("--io-threads", type=int, default=16)
    st.add_argument("--max-gap-bytes", type=int, default=None)
    st.add_argument("--lookahead", type=int, default=2, help="batches read ahead (disk)")
    st.add_argument("--no-train", action="store_true", help="skip the end-to-end epoch")
    st.add_argument("--train-batches", type=int, default=20,
                    help="batches of the end-to-end training epoch")
    st.add_argument("--epoch-seconds", type=float, default=30.0,
                    help="stop a store's measured gather epoch after this long")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "bench" and args.benchmark == "sampling":
        from gnnrepro.bench import sampling
        result = sampling.run(dataset=args.dataset, scale=args.scale, root=args.root,
                              fanouts=args.fanouts, batch_size=args.batch_size,
                              batches=args.batches, threads=args.threads, repeats=args.repeats,
                              samplers=args.samplers,
                              seed=args.seed)
        print(sampling.format_table(result))
    elif args.command == "bench" and args.benchmark == "train":
        from gnnrepro.bench import train
        result = train.run(dataset=args.dataset, scale=args.scale, root=args.root,
                           fanouts=args.fanouts, batch_size=args.batch_size,
                           epochs=args.epochs,
                           pipelines=args.pipelines,
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
                             pipelines=args.pipelines,
                             threads=args.threads, workers=args.workers, seed=args.seed,
                             device=args.device, lr=args.lr, hidden=args.hidden,
                             streams=args.streams, prefetch=args.prefetch,
                             timeout_s=args.timeout, per_rank_batch=args.per_rank_batch)
        print(scaling.format_table(result))
    elif args.command == "bench" and args.benchmark == "storage":
        from gnnrepro.bench import storage
        result = storage.run(dataset=args.dataset, scale=args.scale, root=args.root,
                             fanouts=args.fanouts, batch_size=args.batch_size,
                             batches=args.batches, epochs=args.epochs, stores=args.stores,
                             memory_limit=args.memory_limit,
                             budget_fraction=args.budget_fraction, hot_policy=args.hot_policy,
                             engine=args.engine, io_threads=args.io_threads,
                             queue_depth=args.queue_depth, max_gap_bytes=args.max_gap_bytes,
                             lookahead=args.lookahead, threads=args.threads, seed=args.seed,
                             train=not args.no_train, train_batches=args.train_batches,
                             epoch_seconds=args.epoch_seconds)
        print(storage.format_table(result))
    if args.out is not None:
        write_json_atomic(args.out, result)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
