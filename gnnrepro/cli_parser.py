"""The command line's parser: `python -m gnnrepro` (gnnrepro.__main__) and every subcommand's
options (`bench {sampling,end-to-end,loader,scaling,partitioned,storage,disk-training,
placements,copy-overlap}`, `partition`).

Every training setting is an option declared once in gnnrepro.config (defaults, checks, help);
the options below the settings are each benchmark's own. A value an option's check rejects is
argparse's usage error, and every option's help shows its default.
"""
from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gnnrepro.bench import (disk_training, link_prediction, placements, sampling_speed,
                            temporal_sampling, typed_disk, typed_sampling, weighted_sampling)
from gnnrepro.checks import check_fraction, check_int
from gnnrepro.datasets import LINK_DATASETS, TYPED_DATASETS
from gnnrepro.peers import PEERS, SETUP_COMMAND
from gnnrepro.config import (DISK_TRAINING_DEFAULTS, FEATURE_STORES, PIPELINES,
                             STORAGE_DEFAULTS, TrainConfig, add_options, list_of)
from gnnrepro.errors import DEBUG_ENV
from gnnrepro.training.loop import MODELS
from gnnrepro.training.resume import add_checkpoint_options

__all__ = ["DATA_OPTIONS", "TRAIN_OPTIONS", "build_parser"]

#: The TrainConfig fields, as options.
TRAIN_OPTIONS = [f.name for f in dataclasses.fields(TrainConfig)]
DATA_OPTIONS = ["dataset", "scale", "root"]


def _names(choices: tuple[str, ...]):
    """An argparse type: a comma-separated non-empty, duplicate-free subset of `choices`."""
    def parse(text: str) -> list[str]:
        names = [n for n in text.split(",") if n]
        unknown = [n for n in names if n not in choices]
        if not names or unknown or len(set(names)) != len(names):
            raise argparse.ArgumentTypeError(
                f"must be a comma-separated subset of {', '.join(choices)} without repeats, "
                f"got {text!r}")
        return names
    return parse


def _arg_type(check: Callable[[str, Any], Any], name: str) -> Callable[[str], Any]:
    """An argparse type from a check: its error becomes argparse's usage error."""
    def parse(text: str) -> Any:
        try:
            return check(name, text)
        except (TypeError, ValueError) as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return parse


def _count(low: int) -> Callable[[str, Any], int]:
    """A check of an int >= low written as text."""
    def check(name: str, text: Any) -> int:
        if isinstance(text, str):
            if not text.strip().lstrip("-").isdigit():
                raise TypeError(f"{name} must be an int, got {text!r}")
            text = int(text)
        return check_int(name, text, low)
    return check


def _milliseconds(name: str, text: Any) -> float:
    """A check of a duration in ms >= 0 written as text."""
    try:
        value = float(text)
    except ValueError:
        raise TypeError(f"{name} must be a number, got {text!r}") from None
    if not value >= 0:
        raise ValueError(f"{name} must be >= 0, got {text!r}")
    return value


def _fraction(name: str, text: Any) -> float:
    """A check of a fraction in (0, 1] written as text."""
    try:
        value = float(text)
    except ValueError:
        raise TypeError(f"{name} must be a number, got {text!r}") from None
    return check_fraction(name, value)


def _add_pipelines(parser: argparse.ArgumentParser, default: list[str]) -> None:
    parser.add_argument("--pipelines", type=_names(PIPELINES), default=default,
                        help=f"comma-separated subset of {','.join(PIPELINES)}")


def _add_peers(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--peers", type=_names(tuple(PEERS)), default=[],
                        help=f"comma-separated subset of {','.join(PEERS)}: other stacks, "
                             f"each from its own environment (`{SETUP_COMMAND}` sets them up), "
                             f"measured alongside; one not set up is listed as not run")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m gnnrepro")
    parser.add_argument("--debug", action="store_true",
                        help=f"show the traceback of an error (or set {DEBUG_ENV}=1)")
    commands = parser.add_subparsers(dest="command", required=True)
    bench = commands.add_parser("bench", help="run a benchmark and write JSON")
    kinds = bench.add_subparsers(dest="benchmark", required=True)
    benchmarks = [add(kinds) for add in (_add_sampling, _add_end_to_end, _add_loader,
                                         _add_scaling, _add_partitioned, _add_storage,
                                         _add_disk_training, _add_placements,
                                         _add_copy_overlap, _add_typed_sampling,
                                         _add_typed_disk, _add_weighted_sampling,
                                         _add_temporal_sampling, _add_link_prediction)]
    for sub in benchmarks:
        sub.add_argument("--out", type=Path, default=None, help="JSON file to write")
    for sub in (*benchmarks, _add_partition(commands)):
        sub.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                         help=f"show the traceback of an error (or set {DEBUG_ENV}=1)")
        _show_defaults(sub)
    return parser


# ---- one subcommand each: its parser, with the options below the settings its own ----

#: What add_subparsers returns (argparse's _SubParsersAction, a private class).
Subparsers = Any


def _add_timed_batches(s: argparse.ArgumentParser, batches: int,
                       samplers: tuple[str, ...]) -> None:
    """A sampler benchmark's --batches, --repeats and --samplers (a subset of `samplers`)."""
    s.add_argument("--batches", type=_arg_type(_count(1), "batches"), default=batches)
    s.add_argument("--repeats", type=_arg_type(_count(1), "repeats"), default=4,
                   help="passes over the batches, interleaved in segments of 8 batches")
    s.add_argument("--samplers", type=_names(samplers), default=list(samplers),
                   help=f"comma-separated subset of {','.join(samplers)}")


def _add_sampling(kinds: Subparsers) -> argparse.ArgumentParser:
    s = kinds.add_parser("sampling", help="DGL samplers vs reference vs fused, side by side")
    add_options(s, [*DATA_OPTIONS, "fanouts", "batch_size", "threads", "seed",
                    "sampler_device"], scale=0.25)
    _add_timed_batches(s, 50, sampling_speed.SAMPLERS)
    s.add_argument("--ceiling", action="store_true",
                   help="also probe this machine's random-read ceiling over the graph and give "
                        "the fused sampler's random line reads per second as a share of it")
    _add_peers(s)
    return s


def _add_typed_sampling(kinds: Subparsers) -> argparse.ArgumentParser:
    s = kinds.add_parser("typed-sampling", help="on a typed graph (mag-sim, ogbn-mag): DGL's "
                                                "heterogeneous samplers vs fused, side by side")
    add_options(s, [*DATA_OPTIONS, "fanouts", "batch_size", "threads", "seed"],
                dataset="mag-sim", scale=0.1, fanouts=[25, 20])
    _add_timed_batches(s, 30, typed_sampling.SAMPLERS)
    return s


def _add_weighted_sampling(kinds: Subparsers) -> argparse.ArgumentParser:
    s = kinds.add_parser("weighted-sampling", help="weighted sampling against uniform, ours and "
                                                   "DGL's (prob=...), side by side")
    add_options(s, [*DATA_OPTIONS, "fanouts", "batch_size", "threads", "seed"], scale=1.0,
                fanouts=[15, 10, 5])
    _add_timed_batches(s, 20, weighted_sampling.SAMPLERS)
    s.add_argument("--weights", type=_names(weighted_sampling.WEIGHTS),
                   default=list(weighted_sampling.WEIGHTS),
                   help=f"comma-separated subset of {','.join(weighted_sampling.WEIGHTS)}")
    return s


def _add_temporal_sampling(kinds: Subparsers) -> argparse.ArgumentParser:
    s = kinds.add_parser("temporal-sampling", help="temporal sampling (edge times, a time per "
                                                   "seed, disjoint subgraphs) against uniform")
    add_options(s, [*DATA_OPTIONS, "fanouts", "batch_size", "threads", "seed",
                    "sampler_device"], scale=1.0, fanouts=[15, 10, 5])
    _add_timed_batches(s, 20, temporal_sampling.SAMPLERS)
    return s


def _add_link_prediction(kinds: Subparsers) -> argparse.ArgumentParser:
    s = kinds.add_parser("link-prediction", help="link prediction trained on DGL's edge-"
                                                 "prediction DataLoader and on ours, side by "
                                                 "side: time a step, MRR")
    s.add_argument("--dataset", choices=LINK_DATASETS + TYPED_DATASETS, default="citation-sim",
                   help="a link dataset (LinkDataset): citation-sim (built in) or ogbl-citation2 "
                        "(read from root); or a typed dataset with --relation")
    s.add_argument("--relation", default=None,
                   help="a typed dataset's relation to predict (e.g. cites, writes), its edges "
                        "held out with their reverse twins; ours only")
    add_options(s, ["scale", "root", "fanouts", "batch_size", "threads", "hidden", "lr"],
                scale=0.05, fanouts=[15, 10], hidden=64, lr=0.01)
    s.add_argument("--steps", type=_arg_type(_count(1), "steps"), default=300)
    s.add_argument("--negatives", type=_arg_type(_count(1), "negatives"), default=1,
                   help="uniform negatives per positive edge")
    s.add_argument("--seeds", type=_arg_type(_count(1), "seeds"), default=3,
                   help="seeds 0..N-1, each pipeline trained once per seed")
    s.add_argument("--pipelines", type=_names(link_prediction.PIPELINES), default=None,
                   help=f"comma-separated subset of {','.join(link_prediction.PIPELINES)} "
                        "(default: both; fused on a typed dataset)")
    s.add_argument("--eval-method", choices=["layerwise", "sampled"], default="layerwise",
                   help="how the evaluation embeds the query nodes (the same for both)")
    return s


def _add_typed_disk(kinds: Subparsers) -> argparse.ArgumentParser:
    s = kinds.add_parser("typed-disk", help="a typed model (R-GCN, or MLPerf's R-GAT preset) "
                                            "trained on igbh-sim with features read from disk: "
                                            "our disk store vs mmap, each in its own process")
    add_options(s, [*DATA_OPTIONS, "fanouts", "batch_size", "threads", "seed", "hidden", "lr"],
                dataset="igbh-sim", scale=1.0, fanouts=[10, 5], lr=3e-3, hidden=64)
    s.add_argument("--model", choices=typed_disk.MODELS, default="rgcn",
                   help="rgcn (2 layers for 2 cores) or rgat-mlperf (MLPerf's preset; its "
                        "fanouts, batch size and lr replace the options')")
    s.add_argument("--steps", type=_arg_type(_count(1), "steps"), default=40,
                   help="training steps of the disk store (a random subset of the papers)")
    s.add_argument("--baseline-steps", type=_arg_type(_count(1), "baseline_steps"), default=6,
                   help="training steps of mmap")
    s.add_argument("--eval-ids", type=_arg_type(_count(1), "eval_ids"), default=2048,
                   help="test papers evaluated (sampled, at the training fanouts)")
    s.add_argument("--stores", type=_names(typed_disk.STORES), default=["disk", "mmap"],
                   help=f"comma-separated subset of {','.join(typed_disk.STORES)}")
    s.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="where the model trains")
    s.add_argument("--cache-fraction", type=float, default=0.05,
                   help="the disk store's CLOCK cache, as a fraction of the features")
    s.add_argument("--workers", type=_arg_type(_count(0), "workers"), default=1,
                   help="Loader worker threads (0: in the training loop)")
    s.add_argument("--store-seconds", type=float, default=1200.0,
                   help="a store's process is stopped after this long (its steps so far kept)")
    return s


def _add_placements(kinds: Subparsers) -> argparse.ArgumentParser:
    p = kinds.add_parser("placements", help="the fused sampler per placement (GPU memory, UVA, "
                                            "CPU) against the unfused GPU sampler, per batch, "
                                            "and the GPU's blocks checked against the CPU's")
    add_options(p, [*DATA_OPTIONS, "fanouts", "batch_size", "threads", "seed"], scale=1.0)
    p.add_argument("--batches", type=_arg_type(_count(1), "batches"), default=40)
    p.add_argument("--repeats", type=_arg_type(_count(1), "repeats"), default=3,
                   help="passes over the batches, interleaved in segments of 8 batches")
    known = tuple(name for name, _, _ in placements.CONTENDERS)
    p.add_argument("--contenders", type=_names(known), default=None,
                   help=f"comma-separated subset of {','.join(known)} (default: "
                        f"{','.join(placements.contenders_here(True))} with CUDA, else "
                        f"{','.join(placements.contenders_here(False))})")
    return p


def _add_copy_overlap(kinds: Subparsers) -> argparse.ArgumentParser:
    c = kinds.add_parser("copy-overlap", help="host-to-device copies of batches' feature rows: "
                                              "pinned on side streams vs pageable and "
                                              "synchronous, and the share hidden behind a "
                                              "stand-in GPU step")
    add_options(c, [*DATA_OPTIONS, "fanouts", "batch_size", "threads", "seed", "streams"],
                scale=1.0)
    c.add_argument("--batches", type=_arg_type(_count(1), "batches"), default=16)
    c.add_argument("--rounds", type=_arg_type(_count(1), "rounds"), default=4)
    c.add_argument("--prefetch", type=_arg_type(_count(1), "prefetch"), default=2,
                   help="batches whose copies are issued ahead of the step")
    c.add_argument("--step-ms", type=_arg_type(_milliseconds, "step_ms"), default=None,
                   help="the stand-in step's length (default: one batch's pinned copy)")
    return c


def _add_end_to_end(kinds: Subparsers) -> argparse.ArgumentParser:
    t = kinds.add_parser("end-to-end", help="end-to-end training: dgl vs reference vs fused "
                                            "vs fused+pinned, each in a fresh process")
    add_options(t, [*DATA_OPTIONS, *TRAIN_OPTIONS])
    _add_pipelines(t, ["dgl", "fused", "fused+pinned"])
    t.add_argument("--repeats", type=_arg_type(_count(1), "repeats"), default=1,
                   help="rounds of all pipelines, in Williams-balanced orders")
    t.add_argument("--timeline-batches", type=_arg_type(_count(0), "timeline_batches"),
                   default=0,
                   help="keep the timeline of this many batches of the second epoch")
    t.add_argument("--model", choices=tuple(MODELS), default=None,
                   help="the model every pipeline trains (dgl-sage: DGL's example model, on "
                        "DGL's loader and on ours; pyg-sage: PyG's, on ours, beside the pyg "
                        "peer's); default: each pipeline's own")
    t.add_argument("--target-acc", type=_arg_type(_fraction, "target_acc"), default=None,
                   help="evaluate every epoch and report the epochs each pipeline needs to "
                        "reach this validation accuracy (in (0, 1])")
    _add_peers(t)
    return t


def _add_loader(kinds: Subparsers) -> argparse.ArgumentParser:
    ld = kinds.add_parser("loader", help="the mini-batch pipeline alone (no model; optional "
                                         "busy-wait standing in for a GPU step): DGL's "
                                         "DataLoader vs ours")
    add_options(ld, [*DATA_OPTIONS, *TRAIN_OPTIONS])
    _add_pipelines(ld, ["dgl", "fused", "fused+pinned"])
    ld.add_argument("--rounds", type=_arg_type(_count(1), "rounds"), default=5,
                    help="timed epochs per pipeline, in Williams-balanced orders")
    ld.add_argument("--step-ms", type=_arg_type(_milliseconds, "step_ms"), default=0.0,
                    help="busy-wait per batch standing in for a GPU model step (0: none)")
    _add_peers(ld)
    return ld


def _add_scaling(kinds: Subparsers) -> argparse.ArgumentParser:
    c = kinds.add_parser("scaling", help="data-parallel training on 1, 2, 4, ... ranks (GPUs, "
                                         "or CPU processes): dgl vs fused+pinned, and memory "
                                         "per added rank")
    add_options(c, [*DATA_OPTIONS, *TRAIN_OPTIONS], epochs=2)
    _add_pipelines(c, ["dgl", "fused+pinned"])
    c.add_argument("--ranks", type=_arg_type(list_of(_count(1), nonempty=True, unique=True),
                                             "ranks"), default=[1, 2, 4],
                   help="comma-separated world sizes")
    c.add_argument("--per-rank-batch", action="store_true",
                   help="--batch-size seeds per rank per step (DGL's multi-GPU convention); "
                        "default: split between the ranks")
    return c


def _add_partitioned(kinds: Subparsers) -> argparse.ArgumentParser:
    d = kinds.add_parser("partitioned", help="partitioned training on 1, 2, ... local "
                                             "machines (torchrun), beside DGL's DistDGL")
    add_options(d, [*DATA_OPTIONS, *(n for n in TRAIN_OPTIONS if n != "eval_ids")], epochs=2)
    d.add_argument("--machines", type=_arg_type(list_of(_count(1), nonempty=True, unique=True),
                                                "machines"), default=[1, 2],
                   help="comma-separated machine counts")
    d.add_argument("--ranks-per-machine", type=_arg_type(_count(1), "ranks_per_machine"),
                   default=1)
    d.add_argument("--digest-batches", type=_arg_type(_count(0), "digest_batches"), default=2,
                   help="batches per rank checked against the single-machine sampler")
    d.add_argument("--skip-dgl", action="store_true", help="do not run DGL's DistDGL beside")
    d.add_argument("--eval-ids", type=_arg_type(_count(1), "eval_ids"), default=None,
                   help="val and test ids evaluated (a seeded subset of each split, the same "
                        "for DGL; default: as many as the training ids)")
    return d


def _add_storage(kinds: Subparsers) -> argparse.ArgumentParser:
    """`bench storage`: its defaults are gnnrepro.config.STORAGE_DEFAULTS (notebook 06's)."""
    sd = STORAGE_DEFAULTS
    st = kinds.add_parser("storage", help="feature stores (memory, disk, mmap, lmdb) on data "
                                          "larger than the memory they may use")
    add_options(st, [*DATA_OPTIONS, "fanouts", "batch_size", "threads", "seed"], scale=0.25)
    st.add_argument("--batches", type=_arg_type(_count(1), "batches"), default=sd.batches,
                    help="batches per measured epoch")
    st.add_argument("--epochs", type=_arg_type(_count(1), "epochs"), default=sd.epochs,
                    help="measured epochs of gathers")
    st.add_argument("--stores", type=_names(FEATURE_STORES), default=list(FEATURE_STORES),
                    help=f"comma-separated subset of {','.join(FEATURE_STORES)}")
    st.add_argument("--memory-limit", type=_arg_type(_count(1), "memory_limit"), default=None,
                    help="bytes a capped store may use beyond the training process's own "
                         f"(default: {sd.memory_fraction * 100:g}%% of the feature file)")
    st.add_argument("--budget-fraction", type=float, default=sd.budget_fraction,
                    help="disk store's hot set + cache, as a fraction of the feature file")
    st.add_argument("--hot-policy", choices=("degree", "pagerank"), default="degree")
    st.add_argument("--engine", choices=("auto", "io_uring", "pread"), default="auto")
    st.add_argument("--queue-depth", type=_arg_type(_count(1), "queue_depth"),
                    default=sd.queue_depth)
    st.add_argument("--io-threads", type=_arg_type(_count(1), "io_threads"),
                    default=sd.io_threads)
    st.add_argument("--max-gap-bytes", type=_arg_type(_count(0), "max_gap_bytes"),
                    default=None)
    st.add_argument("--lookahead", type=_arg_type(_count(0), "lookahead"), default=sd.lookahead,
                    help="batches read ahead (disk)")
    st.add_argument("--no-train", action="store_true", help="skip the end-to-end epoch")
    st.add_argument("--train-batches", type=_arg_type(_count(1), "train_batches"),
                    default=sd.train_batches, help="batches of the end-to-end training epoch")
    st.add_argument("--epoch-seconds", type=float, default=sd.epoch_seconds,
                    help="stop a store's measured gather epoch after this long")
    return st


def _add_disk_training(kinds: Subparsers) -> argparse.ArgumentParser:
    """`bench disk-training`: its defaults are gnnrepro.config.DISK_TRAINING_DEFAULTS."""
    dd = DISK_TRAINING_DEFAULTS
    dt = kinds.add_parser("disk-training", help="GraphSAGE trained with features larger than "
                                                "memory (igb-sim), no memory cap: disk store "
                                                "vs mmap (normal, random) vs LMDB")
    add_options(dt, [*DATA_OPTIONS, "fanouts", "batch_size", "threads", "seed"], scale=dd.scale,
                dataset=dd.dataset, fanouts=list(dd.fanouts))
    dt.add_argument("--stores", type=_names(disk_training.STORES),
                    default=list(disk_training.STORES),
                    help=f"comma-separated subset of {','.join(disk_training.STORES)}")
    dt.add_argument("--budget-fraction", type=float, default=dd.budget_fraction,
                    help="disk store's hot set + cache, as a fraction of the feature file")
    dt.add_argument("--hot-policy", choices=("degree", "pagerank"), default="degree")
    dt.add_argument("--gather-batches", type=_arg_type(_count(1), "gather_batches"),
                    default=dd.gather_batches,
                    help="batches gathered back to back (disk store)")
    dt.add_argument("--train-batches", type=_arg_type(_count(1), "train_batches"),
                    default=dd.train_batches,
                    help="training steps (disk store); the epoch is extrapolated")
    dt.add_argument("--baseline-gather-batches", default=dd.baseline_gather_batches,
                    type=_arg_type(_count(1), "baseline_gather_batches"),
                    help="batches gathered back to back by the baselines")
    dt.add_argument("--baseline-train-batches", default=dd.baseline_train_batches,
                    type=_arg_type(_count(1), "baseline_train_batches"),
                    help="training steps of the baselines (mmap, mmap-random, LMDB)")
    dt.add_argument("--baseline-seconds", type=float, default=dd.baseline_seconds,
                    help="a baseline gathers for at most this long, and trains only if one "
                         "step's gather fits in it")
    dt.add_argument("--eval-ids", type=_arg_type(_count(0), "eval_ids"), default=dd.eval_ids,
                    help="test (and val) ids evaluated through the disk store")
    dt.add_argument("--check-batches", type=_arg_type(_count(0), "check_batches"),
                    default=dd.check_batches,
                    help="sampled batches whose rows are checked against regenerated rows")
    dt.add_argument("--workers", type=_arg_type(_count(0), "workers"), default=0,
                    help="Loader worker threads (0: gather in the training loop)")
    dt.add_argument("--lookahead", type=_arg_type(_count(0), "lookahead"), default=dd.lookahead,
                    help="batches the disk store reads ahead (each one's rows are held in "
                         "memory until it is gathered)")
    dt.add_argument("--no-read-ahead", action="store_true",
                    help="do not announce upcoming batches to the disk store")
    dt.add_argument("--thread-cache", choices=("shared", "per-thread"), default="shared",
                    help="worker threads share the disk store's CLOCK cache or keep one each")
    dt.add_argument("--queue-depth", type=_arg_type(_count(1), "queue_depth"),
                    default=dd.queue_depth)
    dt.add_argument("--same-as-memory", type=_arg_type(_count(1), "same_as_memory"),
                    default=None, metavar="EPOCHS",
                    help="instead: train this many epochs with the features in memory and "
                         "from the disk store (a --scale that fits in memory) and check the "
                         "two train bit-identical models")
    dt.add_argument("--target-acc", type=float, default=0.7,
                    help="with --same-as-memory: report the epochs each needs to reach this "
                         "validation accuracy")
    dt.add_argument("--io-threads", type=_arg_type(_count(1), "io_threads"),
                    default=dd.io_threads)
    add_checkpoint_options(dt)
    return dt


def _add_partition(commands: Subparsers) -> argparse.ArgumentParser:
    p = commands.add_parser("partition", help="METIS partitions with 1-hop halos and a "
                                              "checksummed manifest, for partitioned training")
    add_options(p, DATA_OPTIONS)
    p.add_argument("--parts", type=_arg_type(_count(1), "parts"), required=True)
    p.add_argument("--out", type=Path, required=True, help="partition directory to write")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    return p


def _show_defaults(parser: argparse.ArgumentParser) -> None:
    """Append '(default: ...)' to the help of every option of `parser` that has a value
    default and does not show it yet."""
    for action in parser._actions:
        if (action.option_strings and action.nargs != 0 and action.default is not None
                and action.default is not argparse.SUPPRESS
                and "(default" not in (action.help or "")):
            default = (",".join(map(str, action.default)) if isinstance(action.default, list)
                       else action.default)
            action.help = f"{action.help or ''} (default: {default})".strip()
