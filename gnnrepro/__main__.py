"""Command line: `python -m gnnrepro bench {sampling,end-to-end,loader,scaling,partitioned,storage,
disk-training,placements,copy-overlap} ...` and `python -m gnnrepro partition ...` (see --help).

Every training setting is an option declared once in gnnrepro.config (defaults, checks, help);
the options below the settings are each benchmark's own (the parser: gnnrepro.cli_parser). An
error ends the command with one line naming what is wrong (exit 2 for bad arguments or missing
data, 1 for anything else); `--debug` or GNNREPRO_DEBUG=1 shows the traceback instead.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gnnrepro.atomic import write_json_atomic
from gnnrepro.bench import (copy_overlap, disk_same_as_memory, disk_training, end_to_end,
                            link_prediction, loader, partitioned, placements, sampling_speed,
                            scaling, storage, temporal_sampling, typed_disk, typed_sampling,
                            weighted_sampling)
from gnnrepro.cli_parser import DATA_OPTIONS, TRAIN_OPTIONS, build_parser
from gnnrepro.config import TrainConfig, resolve_threads
from gnnrepro.datasets import load_scaled
from gnnrepro.errors import report_error
from gnnrepro.partition import partition_dataset
from gnnrepro.training.resume import checkpointing_from_args


def _config(args: argparse.Namespace) -> TrainConfig:
    return TrainConfig(**{name: getattr(args, name) for name in TRAIN_OPTIONS})


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except KeyboardInterrupt:
        print(f"{parser.prog}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # every error a user can meet: one line, unless asked
        return report_error(parser.prog, exc, args.debug)


def partition_table(manifest: dict[str, Any], out: Path) -> str:
    """What `partition` wrote, for people: one row per part and the totals (the manifest in
    `out` has it all)."""
    stats = manifest["stats"]
    lines = [f"{len(manifest['parts'])} part(s) in {out}: METIS {stats['metis_s']:.1f} s, all "
             f"{stats['partition_s']:.1f} s, peak RSS {stats['peak_rss_mb'] / 1024:.1f} GB",
             f"{'part':>4} {'owned nodes':>12} {'halo nodes':>11} {'edges':>12} {'train ids':>10}"]
    for index, part in enumerate(manifest["parts"]):
        lines.append(f"{index:>4} {part['num_owned']:>12} {part['num_halo']:>11} "
                     f"{part['num_edges']:>12} {part['num_train']:>10}")
    lines.append(f"edge cut {stats['edge_cut_fraction']:.1%} of the edges, halo "
                 f"{stats['halo_fraction']:.1%} of the nodes; manifest: {out / 'manifest.json'}")
    return "\n".join(lines)


def _run(args: argparse.Namespace) -> int:
    """Run the parsed command."""
    if args.command == "partition":
        manifest = partition_dataset(load_scaled(args.dataset, args.root, args.scale),
                                     args.parts, args.out,
                                     overwrite=args.overwrite)
        print(partition_table(manifest, args.out))
        return 0
    data = {name: getattr(args, name) for name in DATA_OPTIONS}
    result = _BENCHMARKS[args.benchmark](args, data)
    if args.out is not None:
        write_json_atomic(args.out, result)
        print(f"wrote {args.out}")
    return 0


# ---- one benchmark each: run it with the parsed options, print its table, return its JSON ----

def _sampling(args: argparse.Namespace, data: dict[str, Any]) -> dict[str, Any]:
    result = sampling_speed.measure(
        **data, fanouts=args.fanouts, batch_size=args.batch_size, batches=args.batches,
        threads=args.threads, repeats=args.repeats, samplers=args.samplers,
        seed=args.seed, sampler_device=args.sampler_device, peers=args.peers,
        ceiling=args.ceiling)
    print(sampling_speed.format_table(result))
    return result


def _typed_sampling(args: argparse.Namespace, data: dict[str, Any]) -> dict[str, Any]:
    result = typed_sampling.measure(**data, fanouts=args.fanouts, batch_size=args.batch_size,
                                    batches=args.batches, threads=args.threads,
                                    repeats=args.repeats, samplers=args.samplers,
                                    seed=args.seed)
    print(typed_sampling.format_table(result))
    return result


def _weighted_sampling(args: argparse.Namespace, data: dict[str, Any]) -> dict[str, Any]:
    result = weighted_sampling.measure(**data, fanouts=args.fanouts, batch_size=args.batch_size,
                                       batches=args.batches, threads=args.threads,
                                       repeats=args.repeats, samplers=args.samplers,
                                       weights=args.weights, seed=args.seed)
    print(weighted_sampling.format_table(result))
    return result


def _typed_disk(args: argparse.Namespace, data: dict[str, Any]) -> dict[str, Any]:
    result = typed_disk.measure(
        **data, model=args.model, fanouts=args.fanouts, batch_size=args.batch_size,
        steps=args.steps, baseline_steps=args.baseline_steps, eval_ids=args.eval_ids,
        hidden=args.hidden, lr=args.lr, stores=args.stores, device=args.device,
        cache_fraction=args.cache_fraction,
        workers=args.workers, threads=args.threads, store_seconds=args.store_seconds,
        seed=args.seed)
    print(typed_disk.format_table(result))
    return result


def _placements(args: argparse.Namespace, data: dict[str, Any]) -> dict[str, Any]:
    result = placements.measure(**data, fanouts=args.fanouts, batch_size=args.batch_size,
                                batches=args.batches, repeats=args.repeats,
                                threads=args.threads, seed=args.seed,
                                contenders=args.contenders)
    print(placements.format_table(result))
    return result


def _copy_overlap(args: argparse.Namespace, data: dict[str, Any]) -> dict[str, Any]:
    result = copy_overlap.measure(**data, fanouts=args.fanouts, batch_size=args.batch_size,
                                  batches=args.batches, rounds=args.rounds,
                                  streams=args.streams, prefetch=args.prefetch,
                                  step_ms=args.step_ms, threads=args.threads, seed=args.seed)
    print(copy_overlap.format_table(result))
    return result


def _end_to_end(args: argparse.Namespace, data: dict[str, Any]) -> dict[str, Any]:
    result = end_to_end.measure(_config(args), **data, pipelines=args.pipelines,
                                repeats=args.repeats,
                                timeline_batches=args.timeline_batches,
                                target_acc=args.target_acc, peers=args.peers,
                                model=args.model)
    print(end_to_end.format_table(result))
    return result


def _loader(args: argparse.Namespace, data: dict[str, Any]) -> dict[str, Any]:
    result = loader.measure(_config(args), **data, pipelines=args.pipelines,
                            rounds=args.rounds, step_ms=args.step_ms, peers=args.peers)
    print(loader.format_table(result))
    return result


def _partitioned(args: argparse.Namespace, data: dict[str, Any]) -> dict[str, Any]:
    result = partitioned.measure(_config(args), **data, machines=args.machines,
                                 ranks_per_machine=args.ranks_per_machine,
                                 digest_batches=args.digest_batches,
                                 dgl_baseline=not args.skip_dgl,
                                 eval_ids=args.eval_ids)
    print(partitioned.format_table(result))
    return result


def _storage(args: argparse.Namespace, data: dict[str, Any]) -> dict[str, Any]:
    result = storage.measure(**data, fanouts=args.fanouts, batch_size=args.batch_size,
                             batches=args.batches, epochs=args.epochs, stores=args.stores,
                             memory_limit=args.memory_limit,
                             budget_fraction=args.budget_fraction, hot_policy=args.hot_policy,
                             engine=args.engine, io_threads=args.io_threads,
                             queue_depth=args.queue_depth, max_gap_bytes=args.max_gap_bytes,
                             lookahead=args.lookahead, threads=resolve_threads(args.threads),
                             seed=args.seed, train=not args.no_train,
                             train_batches=args.train_batches,
                             epoch_seconds=args.epoch_seconds)
    print(storage.format_table(result))
    return result


def _disk_training(args: argparse.Namespace, data: dict[str, Any]) -> dict[str, Any]:
    if args.same_as_memory:
        result = disk_same_as_memory.same_as_memory(
            **data, fanouts=args.fanouts, batch_size=args.batch_size, epochs=args.same_as_memory,
            target_acc=args.target_acc, budget_fraction=args.budget_fraction,
            threads=resolve_threads(args.threads), seed=args.seed)
        print(disk_same_as_memory.format_same_as_memory(result))
        return result
    result = disk_training.measure(
        **data, fanouts=args.fanouts, batch_size=args.batch_size, stores=args.stores,
        budget_fraction=args.budget_fraction, hot_policy=args.hot_policy,
        gather_batches=args.gather_batches, train_batches=args.train_batches,
        baseline_gather_batches=args.baseline_gather_batches,
        baseline_train_batches=args.baseline_train_batches, eval_ids=args.eval_ids,
        check_batches=args.check_batches, workers=args.workers, lookahead=args.lookahead,
        read_ahead=not args.no_read_ahead, thread_cache=args.thread_cache,
        baseline_seconds=args.baseline_seconds,
        io_threads=args.io_threads, queue_depth=args.queue_depth,
        threads=resolve_threads(args.threads), seed=args.seed,
        checkpointing=checkpointing_from_args(args))
    print(disk_training.format_table(result))
    return result


def _scaling(args: argparse.Namespace, data: dict[str, Any]) -> dict[str, Any]:
    result = scaling.measure(_config(args), **data, ranks=args.ranks,
                             pipelines=args.pipelines, per_rank_batch=args.per_rank_batch)
    print(scaling.format_table(result))
    return result


def _temporal_sampling(args: argparse.Namespace, data: dict[str, Any]) -> dict[str, Any]:
    result = temporal_sampling.measure(**data, fanouts=args.fanouts, batch_size=args.batch_size,
                                       batches=args.batches, threads=args.threads,
                                       repeats=args.repeats, samplers=args.samplers,
                                       seed=args.seed, sampler_device=args.sampler_device)
    print(temporal_sampling.format_table(result))
    return result


def _link_prediction(args: argparse.Namespace, data: dict[str, Any]) -> dict[str, Any]:
    result = link_prediction.measure(**data, fanouts=args.fanouts, batch_size=args.batch_size,
                                     num_negatives=args.negatives, hidden=args.hidden,
                                     steps=args.steps, lr=args.lr, seeds=range(args.seeds),
                                     pipelines=args.pipelines, eval_method=args.eval_method,
                                     threads=args.threads, relation=args.relation)
    print(link_prediction.format_table(result))
    return result


#: Each `bench` subcommand's runner.
_BENCHMARKS: dict[str, Callable[[argparse.Namespace, dict[str, Any]], dict[str, Any]]] = {
    "sampling": _sampling, "end-to-end": _end_to_end, "loader": _loader, "scaling": _scaling,
    "partitioned": _partitioned, "storage": _storage, "disk-training": _disk_training,
    "placements": _placements, "copy-overlap": _copy_overlap,
    "typed-sampling": _typed_sampling, "typed-disk": _typed_disk,
    "weighted-sampling": _weighted_sampling, "temporal-sampling": _temporal_sampling,
    "link-prediction": _link_prediction}


if __name__ == "__main__":
    sys.exit(main())
