"""`bench disk-training`: GraphSAGE trained with features larger than memory, no memory cap.

GIDS's setting on a CPU: the graph in memory, the features on disk (igb-sim at scale 1.0,
larger than a common machine's memory), read by the disk store (hot set + CLOCK cache within
`budget_fraction` of the table, O_DIRECT reads with look-ahead) and by its baselines - mmap of
the dense table as DGL and GIDS's baseline map it ("mmap"; each fault reads around the page,
as much as the device's read_ahead_kb, recorded in the result), the same with MADV_RANDOM
("mmap-random": only the faulting page) and LMDB - each in a child process of its own after
the file's page cache is dropped. A baseline gathers for at most `baseline_seconds` (in chunks,
so a slow one reports the rows it did) and trains only if one step fits in that time. A
training epoch over millions of ids takes hours, so each store trains a fixed number of
batches (a seeded random subset of the training ids) and the epoch is extrapolated from the
time per batch, as GIDS reports per-iteration times. The defaults are
gnnrepro.config.DISK_TRAINING_DEFAULTS. Per store:

* gather: `gather_batches` batches' input rows (other seeds than the training ones) gathered
  back to back, the disk store reading `lookahead` batches ahead: rows/s, bytes read per byte
  used, hit rate, and the device's rate while reads were in flight against fio's (random
  O_DIRECT reads of the store's mean request size at its queue depth, in the same run);
* train: `train_batches` training steps through the Loader (time per batch, per epoch
  extrapolated, stage times) and the test accuracy on `eval_ids` test ids read through the
  same store; `workers` Loader threads (0: in the training loop), reading ahead or not
  (`read_ahead`), sharing one CLOCK cache or one each (`thread_cache`);
* check: the rows of `check_batches` sampled batches (a baseline: 4096 random rows of each)
  compared with the rows regenerated from (seed, node id) (igb-sim; other datasets: their
  own table), so no second copy is needed;
* memory: the peak RSS of each phase (the kernel's high-water mark, reset between phases).

With `checkpointing` (`--checkpoint-dir`, gnnrepro.training.Checkpointing) nothing finished is
lost to a kill: each store trains with checkpoints in `<dir>/<store>/`, and its result is kept
there once its child is done; `--resume` keeps the finished stores' results and resumes the
store that was running from its newest checkpoint (its gather phase is measured again; its
time per step is over the steps run since the resume).

`bench disk-training --same-as-memory` trains at a scale that fits in memory with the
in-memory and the disk store and checks that they train bit-identical models
(gnnrepro.bench.disk_same_as_memory).
"""
from __future__ import annotations

import dataclasses
import json
import os
import resource
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import torch

from gnnrepro.atomic import write_json_atomic
from gnnrepro.bench.child_process import child_main, drop_page_cache, run_child
from gnnrepro.bench.device_ceiling import read_ahead_kb
from gnnrepro.bench.disk_training_report import device_ceiling, format_table, summarise
from gnnrepro.config import DISK_TRAINING_DEFAULTS, SETTINGS
from gnnrepro.training.resume import Checkpointing

__all__ = ["STORES", "format_table", "measure", "step_times"]

STORES = ("disk", "mmap", "mmap-random", "lmdb")
#: Store kind and options behind each name.
_OPEN = {"disk": ("disk", {}), "mmap": ("mmap", {"advice": "normal"}),
         "mmap-random": ("mmap", {"advice": "random"}), "lmdb": ("lmdb", {})}
_LMDB_PAGE = 4096
_CHUNK_ROWS = 8192  # a time-limited gather checks the clock this often
_CHECK_ROWS = 4096  # rows of each checked batch a baseline reads
_CHECK_CHUNK = 16384  # rows compared at a time
_D = DISK_TRAINING_DEFAULTS


def _regenerated_rows() -> dict[str, Any]:
    """The datasets whose rows regenerate from (seed, id): name -> feature_rows."""
    from gnnrepro.datasets import igb_sim, papers_sim
    return {igb_sim.NAME: igb_sim.feature_rows, papers_sim.NAME: papers_sim.feature_rows}


def reference_rows(dataset: Any, ids: torch.Tensor) -> torch.Tensor:
    """The true rows of `ids`: regenerated from (seed, id) for igb-sim and papers-sim, else
    the table's."""
    regenerate = _regenerated_rows().get(dataset.name)
    if regenerate is not None:
        return torch.from_numpy(regenerate(ids.numpy(), dataset.params["seed"]))
    return dataset.features[ids]


def _union_seconds(spans: list[tuple[float, float]]) -> float:
    """Length of the union of (start, end) intervals: how long the device had reads."""
    total, end = 0.0, -float("inf")
    for a, b in sorted(spans):
        if b > end:
            total += b - max(a, end)
            end = b
    return total


def _subset(ids: torch.Tensor, count: int, generator: torch.Generator) -> torch.Tensor:
    """`count` of `ids` at random (seeded), in their original order."""
    pick = torch.randperm(ids.numel(), generator=generator)[:min(count, ids.numel())]
    return ids[pick.sort().values]


def _gather_phase(store: Any, batches: list[torch.Tensor], lookahead: int,
                  limit_s: float | None = None) -> dict[str, Any]:
    """Gather `batches` back to back (announcing `lookahead` ahead where the store can); with
    `limit_s`, in chunks of _CHUNK_ROWS rows, stopping after `limit_s` seconds."""
    ahead = lookahead if callable(getattr(store, "prefetch", None)) else 0
    if hasattr(store, "reset_stats"):
        store.reset_stats()
        store.take_read_spans()
    out = torch.empty((max(b.numel() for b in batches), store.dim), dtype=store.dtype)
    rows = 0
    start = time.perf_counter()
    for k in range(min(ahead, len(batches))):
        store.prefetch(batches[k])
    for b, ids in enumerate(batches):
        if ahead and b + ahead < len(batches):
            store.prefetch(batches[b + ahead])
        step = ids.numel() if limit_s is None else _CHUNK_ROWS
        for lo in range(0, ids.numel(), step):
            store.gather(ids[lo:lo + step], out)
            rows += min(step, ids.numel() - lo)
            if limit_s is not None and time.perf_counter() - start > limit_s:
                break
        else:
            continue
        break
    seconds = time.perf_counter() - start
    row_bytes = store.dim * store.dtype.itemsize
    total = sum(b.numel() for b in batches)
    phase = {"batches": len(batches), "rows": rows, "complete": rows == total,
             "batch_rows": total / len(batches), "seconds": seconds,
             "rows_per_s": rows / seconds, "bytes_per_s": rows * row_bytes / seconds}
    if hasattr(store, "stats"):
        stats = store.stats
        busy = _union_seconds(store.take_read_spans())
        phase.update(stats.to_dict(row_bytes))
        phase["mean_request_bytes"] = stats.bytes_read / max(stats.requests, 1)
        phase["device_busy_s"] = busy
        phase["device_bytes_per_s_busy"] = stats.bytes_read / busy if busy else None
        phase["device_bytes_per_s_wall"] = stats.bytes_read / seconds
    return phase


def _reset_peak() -> None:
    """Restart the kernel's peak-RSS counter (VmHWM) at the current RSS (Linux)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def _rss() -> dict[str, int]:
    """The peak RSS since the last _reset_peak, and the current anonymous and file-backed
    resident bytes (Linux; the peak falls back to the process's lifetime peak elsewhere)."""
    out = {"peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}
    try:
        for line in open("/proc/self/status"):
            key, _, value = line.partition(":")
            if key in ("RssAnon", "RssFile", "VmHWM"):
                out[key] = int(value.split()[0]) * 1024
    except OSError:
        pass
    out["peak_rss_bytes"] = out.get("VmHWM", out["peak_rss_bytes"])
    return out


def _open_store(data: Any, settings: dict[str, Any]) -> Any:
    """The store `settings["store"]` names, the disk store within its memory budget."""
    from gnnrepro.features import open_feature_store
    kind, options = _OPEN[settings["store"]]
    if kind == "disk":
        budget = settings["budget_bytes"]
        hot = int(budget * settings["hot_share"])
        options = {"hot_bytes": hot, "cache_bytes": budget - hot,
                   "hot_policy": settings["hot_policy"], "threads": settings["io_threads"],
                   "queue_depth": settings["queue_depth"],
                   "thread_cache": settings["thread_cache"]}
    return open_feature_store(kind, data, share=False, **options)


def _train_phase(data: Any, store: Any, sampler: Any, settings: dict[str, Any],
                 gen: torch.Generator) -> dict[str, Any]:
    """`train_batches` training steps on a random subset of the training ids through the
    Loader, then (disk store) the accuracy on `eval_ids` val and test ids; epoch
    extrapolated."""
    from gnnrepro.pipeline import Loader
    from gnnrepro.sampling import FusedSampler
    from gnnrepro.training import train
    bs, seed = settings["batch_size"], settings["seed"]
    evaluate = settings["eval_ids"] if settings["evaluate"] else 0
    part = dataclasses.replace(
        data, train_idx=_subset(data.train_idx, settings["train_batches"] * bs, gen),
        val_idx=_subset(data.val_idx, evaluate, gen),
        test_idx=_subset(data.test_idx, evaluate, gen))
    if hasattr(store, "reset_stats"):
        store.reset_stats()
    checkpointing = (Checkpointing(**settings["checkpoint"]) if settings.get("checkpoint")
                     else None)
    with Loader(part, sampler, "cpu", bs, workers=settings["workers"], worker_kind="thread",
                prefetch=max(settings["lookahead"], 1), seed=seed, feature_store=store,
                read_ahead=settings["read_ahead"]) as loader:
        trained = train(part, loader, FusedSampler(data.graph, settings["fanouts"], seed=seed),
                        epochs=1, hidden=settings["hidden"], seed=seed,
                        eval_method="sampled", eval_batch_size=bs, checkpointing=checkpointing)
        steps = len(loader)
    epoch = trained.epochs[0]
    resumed = trained.params.get("checkpoint", {}).get("resumed_at_step", 0)
    out = {"batches": steps, "seconds": epoch.epoch_s, "resumed_at_step": resumed,
           **step_times(epoch.epoch_s, steps - resumed, -(-data.train_idx.numel() // bs)),
           "loss": epoch.loss,
           "stages": epoch.stages, "loader_wait_s": epoch.loader_wait_s, "eval_ids": evaluate,
           "test_acc": trained.test_acc, "val_acc": trained.val_acc,
           "test_majority_acc": _majority_share(data.labels[part.test_idx])}
    if hasattr(store, "stats"):
        out.update(store.stats.to_dict(store.dim * store.dtype.itemsize))
        out["device_bytes_per_s_wall"] = store.stats.bytes_read / epoch.epoch_s
    return out


def step_times(seconds: float, timed: int, epoch_steps: int) -> dict[str, Any]:
    """The training phase's time per step and the epoch extrapolated from it, over the
    `timed` steps this run made in `seconds` (a resumed run: those after its checkpoint);
    where it made none (resumed at its last step) no time is claimed, only why."""
    if timed <= 0:
        return {"timed_batches": 0, "untimed": "resumed at its last step: no step ran in "
                                               "this run, so none was timed"}
    return {"timed_batches": timed, "batch_s": seconds / timed, "epoch_batches": epoch_steps,
            "epoch_s_extrapolated": seconds / timed * epoch_steps}


def _majority_share(labels: torch.Tensor) -> float | None:
    """The accuracy of always answering the most common of `labels` (None: no labels)."""
    labels = labels[labels >= 0]
    return float(torch.bincount(labels).max() / labels.numel()) if labels.numel() else None


def _check_phase(data: Any, store: Any, sampler: Any, batches: int, batch_size: int,
                 gen: torch.Generator, rows_per_batch: int | None = None) -> dict[str, Any]:
    """Rows of `batches` sampled batches (at most `rows_per_batch` of each, at random) from
    the store against the true ones."""
    checked, identical = 0, True
    seeds = _subset(data.train_idx, batches * batch_size, gen)
    for i in range(0, seeds.numel(), batch_size):
        ids = sampler.sample(seeds[i:i + batch_size], 2_000_000 + i // batch_size).input_nodes
        if rows_per_batch is not None:
            ids = _subset(ids, rows_per_batch, gen)
        for part in torch.split(ids, _CHECK_CHUNK):  # bounded memory: a batch's rows are many
            identical &= torch.equal(store.gather(part), reference_rows(data, part))
        checked += ids.numel()
    return {"rows": checked, "identical": bool(identical),
            "against": "regenerated" if data.name in _regenerated_rows() else "table"}


def child(settings: dict[str, Any]) -> dict[str, Any]:
    """One store: open it, gather, train, check; the JSON-ready result."""
    from gnnrepro.datasets import load_scaled
    from gnnrepro.sampling import FusedSampler
    torch.set_num_threads(settings["threads"])
    seed, bs = settings["seed"], settings["batch_size"]
    data = load_scaled(settings["dataset"], settings["root"], settings["scale"])
    memory = {}
    _reset_peak()
    t0 = time.perf_counter()
    store = _open_store(data, settings)
    result: dict[str, Any] = {"store": settings["store"], "open_s": time.perf_counter() - t0,
                              "store_repr": repr(store), "memory": memory}
    if hasattr(store, "memory_bytes"):
        result["memory_bytes"] = store.memory_bytes()
        result["engine"] = store.engine
    gen = torch.Generator().manual_seed(seed)
    sampler = FusedSampler(data.graph, settings["fanouts"], seed=seed)
    seeds = _subset(data.train_idx, settings["gather_batches"] * bs, gen)
    batches = [sampler.sample(seeds[i:i + bs], 1_000_000 + i // bs).input_nodes.clone()
               for i in range(0, seeds.numel(), bs)]
    limit = None if settings["store"] == "disk" else settings["baseline_seconds"]
    result["gather"] = _gather_phase(store, batches, settings["lookahead"], limit)
    del batches
    memory["gather"] = _rss()
    _reset_peak()
    step_s = result["gather"]["batch_rows"] / result["gather"]["rows_per_s"]
    if limit is not None and step_s > limit:
        result["train"] = {"skipped": f"one step's gather alone would take ~{step_s:.0f} s at "
                                      f"the rate measured (limit {limit:.0f} s)",
                           "batch_s_at_least": step_s}
    else:
        result["train"] = _train_phase(data, store, sampler, settings, gen)
    memory["train"] = _rss()
    _reset_peak()
    # a slow baseline checks a random part of each batch (its rate is known by now)
    result["check"] = _check_phase(data, store, sampler, settings["check_batches"], bs, gen,
                                   None if limit is None else _CHECK_ROWS)
    memory["check"] = _rss()
    if hasattr(store, "close"):
        store.close()
    return result


def lmdb_bytes(num_nodes: int, row_bytes: int) -> int:
    """What an LMDB of one row per value takes at least: a value above half a page goes to
    overflow pages of its own (a 4 KiB row and its header: two pages)."""
    per_row = -(-(row_bytes + 16) // _LMDB_PAGE) * _LMDB_PAGE
    return num_nodes * per_row


def measure(*, dataset: str = _D.dataset, scale: float = _D.scale, root: str | None = None,
            fanouts: list[int] | None = None, batch_size: int = SETTINGS["batch_size"].default,
            stores: list[str] | None = None, budget_fraction: float = _D.budget_fraction,
            hot_share: float = _D.hot_share, hot_policy: str = "degree",
            gather_batches: int = _D.gather_batches, train_batches: int = _D.train_batches,
            baseline_gather_batches: int = _D.baseline_gather_batches,
            baseline_train_batches: int = _D.baseline_train_batches,
            eval_ids: int = _D.eval_ids, check_batches: int = _D.check_batches,
            workers: int = 0, lookahead: int = _D.lookahead, read_ahead: bool = True,
            thread_cache: str = "shared", io_threads: int = _D.io_threads,
            queue_depth: int = _D.queue_depth, threads: int = 2,
            hidden: int = SETTINGS["hidden"].default, seed: int = SETTINGS["seed"].default,
            baseline_seconds: float = _D.baseline_seconds,
            ceiling_seconds: float = _D.ceiling_seconds,
            timeout_s: float = 7200.0,
            checkpointing: Checkpointing | None = None) -> dict[str, Any]:
    """Run the stores one after another (see the module doc); the JSON-ready result.
    Defaults: gnnrepro.config's DISK_TRAINING_DEFAULTS and SETTINGS. `checkpointing`: each
    store's training checkpointed in `<directory>/<store>/`, with `resume` from there."""
    from gnnrepro.datasets import load_scaled
    from gnnrepro.env import environment
    from gnnrepro.features.factory import feature_file_for
    from gnnrepro.feature_file import read_header
    fanouts = fanouts or list(_D.fanouts)
    stores = stores or list(STORES)
    for s in stores:
        if s not in STORES:
            raise ValueError(f"stores: unknown store {s!r} (known: {', '.join(STORES)})")
    if not 0 < budget_fraction < 1:
        raise ValueError(f"budget_fraction must be in (0, 1), got {budget_fraction}")
    data = load_scaled(dataset, root, scale)
    file = feature_file_for(data)
    info = read_header(file)
    summary = data.summary()
    del data  # each child loads its own: a papers-sized graph held here too would not fit
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    settings = {"dataset": dataset, "scale": scale, "root": root, "fanouts": fanouts,
                "batch_size": batch_size, "budget_fraction": budget_fraction,
                "budget_bytes": int(info.data_bytes * budget_fraction), "hot_share": hot_share,
                "hot_policy": hot_policy, "gather_batches": gather_batches,
                "train_batches": train_batches, "eval_ids": eval_ids,
                "check_batches": check_batches, "workers": workers, "lookahead": lookahead,
                "read_ahead": read_ahead, "thread_cache": thread_cache,
                "io_threads": io_threads, "queue_depth": queue_depth, "threads": threads,
                "hidden": hidden, "seed": seed, "baseline_seconds": baseline_seconds}
    if checkpointing is not None and not isinstance(checkpointing, Checkpointing):
        raise TypeError(f"checkpointing must be a gnnrepro.training.Checkpointing, got "
                        f"{type(checkpointing).__name__}")
    results: dict[str, Any] = {}
    for kind in stores:
        kept = _kept_result(checkpointing, kind)
        if kept is not None:
            results[kind] = kept
            continue
        child_settings = dict(settings, store=kind, evaluate=kind == "disk",
                              checkpoint=_store_checkpoints(checkpointing, kind))
        if kind != "disk":
            child_settings.update(gather_batches=baseline_gather_batches,
                                  train_batches=baseline_train_batches)
        if kind == "lmdb":
            error = _build_lmdb(file, info)
            if error is not None:
                results[kind] = {"store": kind, "error": error}
                continue
        drop_page_cache(file)
        results[kind] = run_child("gnnrepro.bench.disk_training", "disk-training",
                                  child_settings, timeout_s)
        if checkpointing is not None and "error" not in results[kind]:
            write_json_atomic(Path(checkpointing.directory) / kind / _RESULT, results[kind])
    ceiling = device_ceiling(file, results.get("disk", {}), queue_depth, ceiling_seconds)
    summarise(results, ceiling)
    checkpoints = (None if checkpointing is None else
                   dataclasses.asdict(dataclasses.replace(
                       checkpointing, directory=str(checkpointing.directory))))
    return {"benchmark": "disk-training", "env": environment(),
            "params": {**settings, "checkpoints": checkpoints},
            "dataset": summary,
            "feature_file": {"path": str(file), "bytes": info.data_bytes,
                             "row_bytes": info.row_bytes},
            "memory_bytes": memory, "table_vs_memory": info.data_bytes / memory,
            "read_ahead_kb": read_ahead_kb(file), "device_ceiling": ceiling, "stores": results}


#: A finished store's result, kept in its checkpoint directory.
_RESULT = "result.json"


def _store_checkpoints(checkpointing: Checkpointing | None, kind: str) -> dict[str, Any] | None:
    """The child's Checkpointing fields for store `kind` (its own directory), or None."""
    if checkpointing is None:
        return None
    return dataclasses.asdict(dataclasses.replace(
        checkpointing, directory=str(Path(checkpointing.directory) / kind)))


def _kept_result(checkpointing: Checkpointing | None, kind: str) -> dict[str, Any] | None:
    """With `resume`, the result store `kind` finished in an earlier run (marked so)."""
    if checkpointing is None or not checkpointing.resume:
        return None
    path = Path(checkpointing.directory) / kind / _RESULT
    if not path.exists():
        return None
    print(f"bench disk-training: {kind}: kept from an earlier run ({path})", file=sys.stderr,
          flush=True)
    return {**json.loads(path.read_text()), "kept_from": str(path)}


def _build_lmdb(file: Path, info: Any) -> str | None:
    """Build the LMDB database of `file`'s rows here, not in the timed child, and drop its
    page cache; or, where it does not exist and cannot fit on the disk, why it is not run."""
    db = file.with_suffix(".lmdb")
    need, free = lmdb_bytes(info.num_nodes, info.row_bytes), shutil.disk_usage(file.parent).free
    if not db.exists() and need > free:
        return (f"not run: an LMDB of these rows needs at least {need / 1e9:.1f} GB of "
                f"disk (each {info.row_bytes}-byte row takes "
                f"{need // max(info.num_nodes, 1)} bytes of pages), {free / 1e9:.1f} GB "
                "are free")
    from gnnrepro.features import open_feature_store
    open_feature_store("lmdb", file).close()
    drop_page_cache(db)
    return None


if __name__ == "__main__":  # a child: settings as JSON in argv[1], result as JSON on stdout
    child_main(child)
