"""`bench typed-disk` (`measure`): a typed model trained with features read from disk.

igbh-sim at scale 1.0 holds 41.6 GB of float16 features, more than this machine's memory:
MLPerf's R-GAT setting on one node. Each store ("disk": our O_DIRECT store, one per node type
behind a TypedFeatureStore; "mmap": the same files memory-mapped, as DGL and MLPerf's
reference map IGBH's .npy files; "memory": read into memory, where they fit) trains in a child process of its own after the feature files'
page cache is dropped: `steps` training steps (a seeded random subset of the training papers;
the epoch is extrapolated, as GIDS and MLPerf report per-step times), then the accuracy on
`eval_ids` test papers sampled at the same fanouts through the same store (MLPerf's sampled
validation). A store stops at `store_seconds`; one whose first steps do not fit reports the
steps it made. Per store: time per step after the first, the loader's wait, peak RSS, bytes
read, accuracy against the majority class.

`model`: "rgcn" (2 layers, `hidden`: sized for 2 cores) or "rgat-mlperf" (MLPerf's preset:
3 layers, hidden 512 in 4 heads, fanouts 5,10,15, 1024 seeds, lr 1e-3; its fanouts and batch
size replace the given ones). `device` "cuda" trains on the GPU (the GPU session's step:
MLPerf's preset for a fixed number of steps, features in memory).
"""
from __future__ import annotations

import dataclasses
import resource
import time
from typing import Any, Sequence

import torch

from gnnrepro.bench.child_process import child_main, drop_page_cache, progress, run_child
from gnnrepro.config import resolve_threads
from gnnrepro.env import environment

__all__ = ["MODELS", "STORES", "format_table", "measure"]

STORES = ("disk", "mmap", "memory")
MODELS = ("rgcn", "rgat-mlperf")


def measure(*, dataset: str = "igbh-sim", scale: float = 1.0, root: str | None = None,
            model: str = "rgcn", fanouts: Sequence[int] = (10, 5), batch_size: int = 1024,
            steps: int = 40, baseline_steps: int = 6, eval_ids: int = 2048, hidden: int = 64, lr: float = 3e-3,
            stores: Sequence[str] = ("disk", "mmap"), device: str = "cpu", cache_fraction: float = 0.05, workers: int = 1,
            threads: int | None = None, store_seconds: float = 1200.0,
            seed: int = 0) -> dict[str, Any]:
    """Train `steps` steps (mmap: `baseline_steps`) per store in a child each, on `device`;
    return the JSON-ready result."""
    from gnnrepro.datasets import load_scaled
    from gnnrepro.datasets.cache import default_root, entry_dir
    from gnnrepro.models import RGAT_MLPERF
    if model not in MODELS:
        raise ValueError(f"model must be one of {', '.join(MODELS)}, got {model!r}")
    bad = [s for s in stores if s not in STORES]
    if bad or not stores:
        raise ValueError(f"stores must be a non-empty subset of {', '.join(STORES)}, got "
                         f"{list(stores)}")
    if model == "rgat-mlperf":
        fanouts, batch_size, lr = list(RGAT_MLPERF.fanouts), RGAT_MLPERF.batch_size, RGAT_MLPERF.lr
    data = load_scaled(dataset, root, scale)  # built here once, not in the children
    entry = entry_dir(default_root() if root is None else root, data.name, data.params)
    feature_bytes = sum(x.numel() * x.element_size() for x in data.features.values())
    settings = {"dataset": dataset, "scale": scale, "root": root, "model": model,
                "fanouts": [int(f) for f in fanouts], "batch_size": batch_size, "steps": steps,
                "eval_ids": eval_ids, "hidden": hidden, "lr": lr, "workers": workers,
                "threads": resolve_threads(threads), "seed": seed, "device": device,
                "baseline_steps": baseline_steps,
                "cache_bytes": int(cache_fraction * feature_bytes)}
    results = {}
    for kind in stores:
        drop_page_cache(entry)
        # A batch may take as long as the store's whole time: the Loader waits that long for
        # one (mmap's batches took 95 s, and past 120 s on a slower day, of random page faults).
        results[kind] = run_child("gnnrepro.bench.typed_disk", "typed-disk",
                                  {**settings, "store": kind, "batch_timeout_s": store_seconds,
                                   "steps": baseline_steps if kind == "mmap" else steps},
                                  store_seconds, stopped=_stopped)
    return {"benchmark": "typed-disk",
            "params": {**settings, "cache_fraction": cache_fraction,
                       "store_seconds": store_seconds, "feature_bytes": feature_bytes,
                       "memory_bytes": _memory_bytes()},
            "dataset": data.summary(), "stores": results, "env": environment()}


def child(settings: dict[str, Any]) -> dict[str, Any]:
    """One store's run (in its own process): steps, evaluation, memory."""
    from gnnrepro.datasets import load_scaled
    from gnnrepro.features.factory import open_feature_store
    from gnnrepro.models import RGAT_MLPERF
    from gnnrepro.pipeline import Loader
    from gnnrepro.sampling import FusedSampler
    from gnnrepro.training import train
    torch.set_num_threads(settings["threads"])
    data = load_scaled(settings["dataset"], settings["root"], settings["scale"])
    kind, bs, seed = settings["store"], settings["batch_size"], settings["seed"]
    store = open_feature_store(kind, data, **({"cache_bytes": settings["cache_bytes"]}
                                              if kind == "disk" else {}))
    gen = torch.Generator().manual_seed(seed)
    part = dataclasses.replace(
        data, train_idx=_subset(data.train_idx, settings["steps"] * bs, gen),
        val_idx=data.val_idx[:0], test_idx=_subset(data.test_idx, settings["eval_ids"], gen))
    fanouts = settings["fanouts"]
    net = None
    if settings["model"] == "rgat-mlperf":
        torch.manual_seed(seed)
        net = RGAT_MLPERF.build(data.graph.canonical_relations, data.num_features,
                                data.num_classes, target=data.target)
    started = time.perf_counter()
    step_ends: list[float] = []

    def heartbeat() -> None:
        step_ends.append(time.perf_counter())
        progress("step", step=len(step_ends), seconds=step_ends[-1] - started)

    with Loader(part, FusedSampler(data.graph, fanouts, seed=seed), settings["device"], bs,
                workers=settings["workers"], worker_kind="thread", prefetch=2, seed=seed,
                feature_store=store, timeout_s=settings["batch_timeout_s"]) as loader:
        trained = train(part, loader, FusedSampler(data.graph, fanouts, seed=seed), epochs=1,
                        lr=settings["lr"], hidden=settings["hidden"], seed=seed,
                        **({"model": net} if net is not None else {"architecture": "rgcn"}),
                        eval_method="sampled",
                        eval_batch_size=bs, heartbeat=heartbeat)
    epoch = trained.epochs[0]
    step_ends = step_ends[:len(loader)]  # the evaluation's batches beat too
    gaps = [b - a for a, b in zip(step_ends, step_ends[1:])]
    out = {"store": repr(store)[:200], "steps": len(step_ends), "seconds": epoch.epoch_s,
           "step_s_after_first": sorted(gaps)[len(gaps) // 2] if gaps else None,
           "step_s_mean_after_first": sum(gaps) / len(gaps) if gaps else None,
           "epoch_steps": -(-data.train_idx.numel() // bs), "loss": epoch.loss,
           "loader_wait_s": epoch.loader_wait_s, "stages": epoch.stages,
           "test_acc": trained.test_acc, "eval_ids": part.test_idx.numel(),
           "test_majority_acc": float(torch.bincount(data.labels[part.test_idx]).max()
                                      / max(1, part.test_idx.numel())),
           "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
           "model": settings["model"], "params_count": sum(
               p.numel() for p in (net.parameters() if net is not None else []))}
    if out["step_s_mean_after_first"] is not None:
        out["epoch_s_extrapolated"] = out["step_s_mean_after_first"] * out["epoch_steps"]
    stats = [s.stats for s in getattr(store, "stores", {}).values() if hasattr(s, "stats")]
    if stats:
        out["bytes_read"] = sum(s.bytes_read for s in stats)
    return out


def _stopped(lines: list[dict[str, Any]], timeout: float) -> dict[str, Any]:
    """A store killed at `timeout`: the steps its progress lines show (the evaluation's
    batches beat too: the count is an upper bound when it reached them)."""
    times = [line["seconds"] for line in lines if line.get("progress") == "step"]
    gaps = [b - a for a, b in zip(times, times[1:])]
    return {"error": f"stopped after {timeout:.0f} s", "steps": len(times),
            "step_s_after_first": sorted(gaps)[len(gaps) // 2] if gaps else None,
            "first_step_s": times[0] if times else None}


def _subset(ids: torch.Tensor, count: int, gen: torch.Generator) -> torch.Tensor:
    """`count` of `ids` (all when fewer), a seeded random choice, sorted."""
    if count >= ids.numel():
        return ids
    return ids[torch.randperm(ids.numel(), generator=gen)[:count]].sort().values


def _memory_bytes() -> int:
    """This machine's memory (the cgroup's limit where lower)."""
    import os
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = open(path).read().strip()
            if text.isdigit():
                total = min(total, int(text))
        except OSError:
            pass
    return total


def format_table(result: dict[str, Any]) -> str:
    """One line per store: step time, extrapolated epoch, accuracy, memory."""
    p = result["params"]
    lines = [f"{p['dataset']} {p['scale']}: {p['feature_bytes'] / 1e9:.1f} GB of features, "
             f"{p['memory_bytes'] / 1e9:.1f} GB of memory; model {p['model']}, fanouts "
             f"{p['fanouts']}, batch {p['batch_size']}",
             "store  steps  step_s  epoch_h  test_acc  majority  peak_rss_GB"]
    for kind, r in result["stores"].items():
        if "error" in r:
            lines.append(f"{kind:6} {r['error']}")
            continue
        step = r.get("step_s_after_first")
        epoch = r.get("epoch_s_extrapolated")
        lines.append(f"{kind:6} {r['steps']:5d}  {step if step is None else round(step, 2)!s:>6}"
                     f"  {'-' if epoch is None else f'{epoch / 3600:.1f}':>7}"
                     f"  {r['test_acc'] or 0:.4f}    {r['test_majority_acc']:.4f}"
                     f"    {r['peak_rss_bytes'] / 1e9:.2f}")
    return "\n".join(lines)


if __name__ == "__main__":  # a child: settings as JSON in argv[1], result as JSON on stdout
    child_main(child)
