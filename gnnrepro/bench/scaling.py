"""`bench scaling`: data-parallel training on 1, 2, 4, ... ranks, DGL vs ours (the paper's
multi-GPU table: 1.10 / 1.16 / 1.12x on 2 / 4 / 8 GPUs) and memory per added rank.

Each (world size, pipeline) is one gnnrepro.distributed.launch: fresh rank processes, the dataset
loaded once by this process and shared with every rank. By default `batch_size` is the global
batch: each of N ranks takes ceil(batch_size / N) seeds per step, so every world size takes the
same optimizer steps and accuracies are comparable; per_rank_batch=True gives every rank
batch_size seeds instead (DGL's multi-GPU convention: fewer, larger steps as N grows, which with
few epochs costs accuracy). For each world size the pipelines run back to back, so a slow spell
of a shared machine hits both. Reported per run: epoch_s, the median over the epochs after the
first of the slowest rank's epoch time; stages (mean over ranks, and per rank) over the same
epochs; ids_per_epoch summed over ranks (DGL pads every rank to ceil(N / world_size) ids, so it
trains some ids twice); test accuracy; whether every rank ended with identical parameters;
memory, in total and per process (processes_memory).

Memory (MEMORY_METHOD): at the end of training, with every rank and sampling worker still
alive and every rank's free heap handed back (release_free_heap: what a rank holds, not what
its allocator kept from the last batches), the launcher sums PSS over its whole process tree
once (shared pages count once);
extra_rss_per_rank_bytes = (total(N) - total(N0)) / (N - N0) against the smallest world size
N0 run for that pipeline. That difference holds everything a rank adds: its dataset copies (none
for ours), but also its interpreter, torch, sampling worker and batch buffers, which do not grow
with the dataset.

World sizes above the GPUs present (device cuda) are skipped with the reason, never faked. CPU
ranks may outnumber the cores; the JSON then says the run was oversubscribed.
"""
from __future__ import annotations

import os
import statistics
from collections.abc import Sequence
from typing import Any

import torch

from gnnrepro.bench.timing import check_pipelines
from gnnrepro.config import PIPELINES, SETTINGS, TrainConfig, resolve_device, validate
from gnnrepro.datasets import load_scaled
from gnnrepro.distributed import launch, unavailable
from gnnrepro.distributed.memory import PSS_KINDS, machine_data_bytes
from gnnrepro.env import environment
from gnnrepro.progress import announce
from gnnrepro.training import reduce_stages

__all__ = ["MEMORY_METHOD", "format_table", "measure"]

MEMORY_METHOD = ("extra_rss_per_rank_bytes: sum of PSS (psutil memory_full_info) over the "
                 "launcher, every rank and every sampling worker, sampled once at the end of "
                 "training, after every rank ran gc.collect() and malloc_trim(0); extra per "
                 "added rank = (total(N) - total(N0)) / (N - N0), N0 the "
                 "smallest world size run. It holds each rank's interpreter, torch, worker and "
                 "batch buffers as well as any data copy; extra_pss_{anon,file,shmem}_per_rank"
                 "_bytes split it by kind of page (smaps_rollup): anon = process heaps, file = "
                 "libraries and mapped files, shmem = shared memory (the dataset, and the "
                 "staging slots a rank shares with its workers). extra_data_bytes_per_rank: the "
                 "same difference of machine_data_bytes, the bytes of every distinct copy of the "
                 "dataset's arrays (graph, features, labels, and DGL's own graph arrays) that "
                 "the ranks read, each copy named by the memory behind it (shared file and "
                 "inode, or a process's private heap; gnnrepro.distributed.memory.data_copies)")


def measure(config: TrainConfig, *, dataset: str = SETTINGS["dataset"].default,
            scale: float = SETTINGS["scale"].default, root: str | None = None,
            ranks: Sequence[int] = (1, 2, 4), pipelines: Sequence[str] = ("dgl", "fused+pinned"),
            per_rank_batch: bool = False) -> dict[str, Any]:
    """Train every pipeline on every world size in `ranks` with `config`'s settings
    (config.batch_size is the global batch unless per_rank_batch); return the JSON-ready
    result: num_train_ids, runs [{pipeline, world_size, epoch_s, stages, test_acc,
    ids_per_epoch, extra_rss_per_rank_bytes, dataset_bytes, skipped, ...}], speedup_vs_dgl
    {world_size: x} (the first non-dgl pipeline's), params, memory_method, env."""
    pipelines, ranks = check_pipelines(pipelines, PIPELINES), sorted(set(ranks))
    if not ranks or any(isinstance(r, bool) or not isinstance(r, int) or r < 1 for r in ranks):
        raise ValueError(f"ranks must be world sizes >= 1, got {ranks}")
    data = load_scaled(validate("dataset", dataset), root, validate("scale", scale))
    device = resolve_device(config.device)
    batch_size = config.batch_size
    cpus = os.cpu_count() or 1
    runs: list[dict[str, Any]] = []
    for world_size in ranks:
        for name in pipelines:
            rank_batch = batch_size if per_rank_batch else -(-batch_size // world_size)
            row: dict[str, Any] = {"pipeline": name, "world_size": world_size,
                                   "rank_batch_size": rank_batch,
                                   "dataset_bytes": data.nbytes(),
                                   "skipped": unavailable(world_size, device)}
            if row["skipped"] is None:
                settings = config.replace(pipeline=name, batch_size=rank_batch).to_dict()
                announce(f"bench scaling: {name} on {world_size} rank(s)")
                result = launch(world_size, data, **settings)
                row.update(_run_fields(result, world_size, device == "cpu", cpus))
            runs.append(row)
    _add_extra_per_rank(runs, pipelines)
    ours = next((p for p in pipelines if p not in ("dgl", "reference")), None)
    return {
        "benchmark": "scaling",
        "num_train_ids": data.train_idx.numel(),
        "runs": runs,
        "speedup_vs_dgl": _speedups(runs, ranks, pipelines, ours),
        "params": {**config.to_dict(), "dataset": dataset, "scale": scale, "root": root,
                   "ranks": ranks, "pipelines": pipelines, "batch_size": batch_size,
                   "batch_size_is": "per rank" if per_rank_batch else
                   "global (each rank: ceil(batch_size / world_size))", "speedup_of": ours},
        "dataset": data.summary(),
        "memory_method": MEMORY_METHOD,
        "env": {**environment(), "cpu_count": cpus,
                "note": ("CPU ranks: gloo, one process per rank; world_size * (threads + "
                         "the pipeline's sampling workers) above cpu_count means ranks share "
                         "cores (oversubscribed)")
                if device == "cpu" else "GPU ranks: NCCL, one GPU per rank"},
    }


def _run_fields(result: Any, world_size: int, cpu: bool, cpus: int) -> dict[str, Any]:
    """One launch's row: times and stages over the epochs after the first (all of them if
    there is one), accuracy, memory, and whether the ranks ended with the same parameters."""
    steady = result.epochs[1:] or result.epochs
    return dict(
        epoch_s=statistics.median(e["epoch_s"] for e in steady),
        epochs_s=[e["epoch_s"] for e in result.epochs],
        stages=reduce_stages([e["stages"]["mean"] for e in steady], statistics.median),
        rank_stages=[reduce_stages([e["stages"]["ranks"][r] for e in steady],
                                   statistics.median)
                     for r in range(world_size)],
        test_acc=result.test_acc, val_acc=result.val_acc,
        loss=[e["loss"] for e in result.epochs],
        ids_per_epoch=result.ids_per_epoch[-1],
        total_pss_bytes=result.memory["pss_bytes"],
        **{f"total_pss_{kind}_bytes": result.memory[f"pss_{kind}_bytes"] for kind in PSS_KINDS},
        machine_data_bytes=machine_data_bytes(result.data_copies_ranks),
        total_uss_bytes=result.memory["uss_bytes"],
        processes=len(result.memory["processes"]),
        processes_memory=result.memory["processes"],
        threads=result.params["threads"],
        oversubscribed=(cpu and world_size * (
            result.params["threads"] + result.params["loader_workers"]) > cpus),
        loader=result.params["loader"],
        params_identical_across_ranks=all(
            state.keys() == result.states[0].keys()
            and all(torch.equal(state[k], result.states[0][k]) for k in state)
            for state in result.states))


def _add_extra_per_rank(runs: list[dict[str, Any]], pipelines: Sequence[str]) -> None:
    """Per pipeline, each total's difference from its smallest world size run, per added rank
    (None for that run itself): see MEMORY_METHOD."""
    for name in pipelines:
        done = [r for r in runs if r["pipeline"] == name and r["skipped"] is None]
        for r in done:
            base = done[0]
            for total, extra in (("total_pss_bytes", "extra_rss_per_rank_bytes"),
                                 ("machine_data_bytes", "extra_data_bytes_per_rank"),
                                 *((f"total_pss_{kind}_bytes", f"extra_pss_{kind}_per_rank_bytes")
                                   for kind in PSS_KINDS)):
                r[extra] = (None if r is base else (r[total] - base[total])
                            / (r["world_size"] - base["world_size"]))


def _speedups(runs: list[dict[str, Any]], ranks: Sequence[int], pipelines: Sequence[str],
              ours: str | None) -> dict[str, float]:
    """{world size: dgl's epoch time / `ours`'} where both ran."""
    speedup = {}
    if "dgl" in pipelines and ours is not None:
        for world_size in ranks:
            by = {r["pipeline"]: r for r in runs
                  if r["world_size"] == world_size and r["skipped"] is None}
            if "dgl" in by and ours in by:
                speedup[str(world_size)] = by["dgl"]["epoch_s"] / by[ours]["epoch_s"]
    return speedup


def format_table(result: dict[str, Any]) -> str:
    """Epoch time, speedup, ids per epoch, accuracy and memory per (world size, pipeline):
    extra PSS per added rank, split into anon / file / shmem, and extra data copies."""
    lines = [f"{'ranks':>5} {'pipeline':<13} {'epoch s':>8} {'vs dgl':>7} {'ids/epoch':>9} "
             f"{'test acc':>8} {'extra MB/rank (anon/file/shmem)':>32} {'data MB/rank':>12}"]
    for r in result["runs"]:
        if r["skipped"]:
            lines.append(f"{r['world_size']:>5} {r['pipeline']:<13} skipped: {r['skipped']}")
            continue
        x = result["speedup_vs_dgl"].get(str(r["world_size"]))
        x = "-" if x is None or r["pipeline"] == "dgl" else f"{x:.2f}x"
        if r["extra_rss_per_rank_bytes"] is None:
            extra = data = "-"
        else:
            split = "/".join(f"{r[f'extra_pss_{kind}_per_rank_bytes'] / 2**20:.0f}"
                             for kind in PSS_KINDS)
            extra = f"{r['extra_rss_per_rank_bytes'] / 2**20:.0f} ({split})"
            data = f"{r['extra_data_bytes_per_rank'] / 2**20:.2f}"
        lines.append(f"{r['world_size']:>5} {r['pipeline']:<13} {r['epoch_s']:8.2f} {x:>7} "
                     f"{r['ids_per_epoch']:>9} {r['test_acc']:8.4f} {extra:>32} {data:>12}")
    return "\n".join(lines)
