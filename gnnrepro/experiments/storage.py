"""06_storage: feature stores on data larger than memory (GIDS; GraphBolt's disk features) -
throughput vs memory budget against the device ceiling, and one training epoch end to end.

One `bench storage` run with every store (memory | disk | mmap | lmdb) at the first budget,
and disk-only runs at the other budgets; each capped store may use `memory_fraction` of the
feature file beyond what the training process needs (a memory cgroup, see bench.storage).
The settings are gnnrepro.config.STORAGE_DEFAULTS, the command line's defaults too.
"""
from __future__ import annotations

import math
from typing import Any

import pandas as pd

from gnnrepro.bench import memory_cap
from gnnrepro.bench import storage as storage_bench
from gnnrepro.config import STORAGE_DEFAULTS, resolve_threads
from gnnrepro.experiments import paper
from gnnrepro.experiments.params import Params
from gnnrepro.experiments.store import Store

__all__ = ["NAME", "storage", "storage_table"]

NAME = "06_storage"
#: The parameters the result depends on (its store key; the notebook lists them first).
PARAMETERS = ("dataset", "scale", "root", "fanouts", "batch_size", "threads", "seed")


def _bench(params: Params, store: Store, stores: list[str], budget: float,
           ceiling: bool) -> dict:
    """One `bench storage` run (memoised: its arguments are the key). Batches for data larger
    than memory are kept small (see StorageDefaults.max_batch_size)."""
    d = STORAGE_DEFAULTS
    kwargs = {"dataset": params.dataset, "scale": params.scale, "root": params.root,
              "fanouts": list(params.fanouts)[-d.max_layers:],
              "batch_size": min(params.batch_size, d.max_batch_size),
              "batches": d.batches, "epochs": d.epochs, "stores": stores,
              "budget_fraction": budget, "threads": resolve_threads(params.threads),
              "seed": params.seed,
              "train_batches": d.train_batches, "epoch_seconds": d.epoch_seconds,
              "ceiling_seconds": d.ceiling_seconds, "ceiling": ceiling,
              "memory_fraction": d.memory_fraction, "lookahead": d.lookahead}
    return store.memo("storage", kwargs, lambda: storage_bench.measure(**kwargs), params.force)


def storage(params: Params) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Tidy rows per (store, budget): rows_per_s, speedup_vs_mmap, bytes_read_per_byte_used,
    hit rate of the last epoch, fraction of the device's row ceiling, epoch_s end to end and
    its ratio to the in-memory store, rows_identical and the memory cap's mode."""
    results = params.store()

    def compute() -> tuple[pd.DataFrame, dict[str, Any]]:
        rows = []
        first, *others = STORAGE_DEFAULTS.budgets
        runs = [(first, _bench(params, results, ["memory", "disk", "mmap", "lmdb"],
                               first, True))]  # the device ceiling: measured once
        runs += [(b, _bench(params, results, ["disk"], b, False)) for b in others]
        for budget, result in runs:
            for name, r in result["stores"].items():
                if "error" in r:
                    rows.append({"store": name, "budget": budget, "error": r["error"],
                                 "lower_bound": False, "cap_reason": None,
                                 "cap_reached": None})
                    continue
                fraction = r.get("fraction_of_device_ceiling") or {}
                train = r.get("train", {})
                rows.append({
                    "store": name, "budget": budget if name == "disk" else math.nan,
                    "rows_per_s": r["rows_per_s"], "speedup_vs_mmap": r["speedup_vs_mmap"],
                    "bytes_read_per_byte_used": r.get("bytes_read_per_byte_used"),
                    "hit_rate": r["hit_rate"][-1], "ceiling_fraction": fraction.get("rows"),
                    # a store stopped at its time limit has only a lower bound
                    "epoch_s": train.get("epoch_s", train.get("epoch_s_at_least")),
                    "vs_memory": train.get("vs_memory"),
                    "rows_identical": r["rows_identical"], "cap": r["cap"]["mode"],
                    "cap_reason": r["cap"].get("reason"),
                    "cap_reached": memory_cap.reached(r["cap"]),
                    "lower_bound": bool(r.get("lower_bound", False)), "error": None})
        first = runs[0][1]
        ceiling = {k: v for k, v in first["device_ceiling"].items() if v}
        meta = {"feature_file": first["feature_file"], "device_ceiling": ceiling,
                "memory_fraction": STORAGE_DEFAULTS.memory_fraction,
                "memory_limit": first["params"].get("memory_limit"),
                "budgets": list(STORAGE_DEFAULTS.budgets),
                "paper": {"gids_speedup_vs_mmap": paper.GIDS_SPEEDUP_VS_MMAP,
                          "graphbolt_read_amplification": paper.GRAPHBOLT_READ_AMPLIFICATION}}
        return pd.DataFrame(rows), meta

    return results.cached(NAME, params.key(PARAMETERS), compute, params.force,
                        redraw=params.redraw)


def storage_table(data: pd.DataFrame) -> pd.DataFrame:
    """One row per (store, budget): throughput, its ratio to mmap, read amplification, hit
    rate, end-to-end epoch and its ratio to the in-memory store."""
    return pd.DataFrame({
        "store": data["store"],
        "budget (of file)": data["budget"],
        "M rows/s": data["rows_per_s"] / 1e6,
        "x mmap": data["speedup_vs_mmap"],
        "bytes read / used": data["bytes_read_per_byte_used"],
        "hit rate": data["hit_rate"],
        "epoch (s)": data["epoch_s"],
        "x in-memory epoch": data["vs_memory"],
        "rows identical": data["rows_identical"],
        "memory cap": data["cap"],
        "cap reached": data["cap_reached"] if "cap_reached" in data else None,
        "stopped at its time limit (a bound)": data["lower_bound"],
    })
