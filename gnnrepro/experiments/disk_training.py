"""06_storage, second part: training with features larger than this machine's memory, no cap.

One `bench disk-training` run on igb-sim at `disk_training_scale` (1.0: 41 GB of features, 1.6x
a 25 GB machine): the disk store, mmap and LMDB, each training `disk_training_batches` (the disk
store) or a few (the baselines) GraphSAGE steps with the epoch extrapolated, rows checked
against rows regenerated from (seed, node id). Scale 0 (the default) skips it: at 1.0 it needs
about 42 GB of free disk and half an hour on 2 cores.
"""
from __future__ import annotations

from typing import Any

import pandas as pd

from gnnrepro.bench import disk_training as bench
from gnnrepro.config import DISK_TRAINING_DEFAULTS, SETTINGS, resolve_threads
from gnnrepro.datasets import igb_sim
from gnnrepro.experiments import paper
from gnnrepro.experiments.params import Params

__all__ = ["NAME", "PARAMETERS", "disk_training", "disk_training_table", "skip_reason"]

NAME = "06_disk_training"
#: The parameters the result depends on (its store key).
PARAMETERS = ("disk_training_scale", "disk_training_batches", "threads", "seed")


def skip_reason(params: Params) -> str | None:
    """Why the section does not run with these parameters (None: it runs)."""
    if params.disk_training_scale > 0:
        return None
    need = igb_sim.feature_bytes(1.0) / 1e9
    return (f"Skipped: disk_training_scale is 0. At igb-sim 1.0 this section writes "
            f"{need:.0f} GB of features (it needs about {need * 1.02:.0f} GB of free disk) and "
            f"trains for about half an hour on 2 cores; run it with make figures "
            f"PARAMS=notebooks/params/larger-than-memory.yaml "
            f"NOTEBOOKS=notebooks/06_storage.ipynb")


def disk_training(params: Params) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Tidy rows per store: gather rows/s and its ratio to both mmaps, bytes read per byte
    used, hit rate, share of fio's rate, time per training step (a lower bound where a slow
    baseline did not train) and per (extrapolated) epoch, test accuracy, training's peak RSS,
    rows identical to the regenerated ones; or an error."""
    results = params.store()

    def compute() -> tuple[pd.DataFrame, dict[str, Any]]:
        kwargs = {"dataset": igb_sim.NAME, "scale": params.disk_training_scale,
                  "root": params.root, "fanouts": list(DISK_TRAINING_DEFAULTS.fanouts),
                  "batch_size": SETTINGS["batch_size"].default,
                  "budget_fraction": DISK_TRAINING_DEFAULTS.budget_fraction,
                  "train_batches": params.disk_training_batches,
                  "threads": resolve_threads(params.threads), "seed": params.seed}
        result = results.memo("disk-training", kwargs, lambda: bench.measure(**kwargs),
                              params.force)
        rows = []
        for name, r in result["stores"].items():
            if "error" in r:
                rows.append({"store": name, "error": r["error"]})
                continue
            g, t = r["gather"], r["train"]
            epoch = t.get("epoch_s_extrapolated")
            rows.append({
                "store": name, "rows_per_s": g["rows_per_s"],
                "gather_vs_mmap": r.get("gather_vs_mmap"),
                "gather_vs_mmap_random": r.get("gather_vs_mmap-random"),
                "bytes_read_per_byte_used": g.get("bytes_read_per_byte_used"),
                "hit_rate": g.get("hit_rate"), "share_of_fio": g.get("share_of_fio_busy"),
                "batch_s": t.get("batch_s", t.get("batch_s_at_least")),
                "step_run": "batch_s" in t, "batches": t.get("batches", 0),
                "epoch_h": None if epoch is None else epoch / 3600,
                "test_acc": t.get("test_acc"),
                "train_peak_rss_gb": r["memory"]["train"]["peak_rss_bytes"] / 2**30,
                "rows_identical": r["check"]["identical"], "error": None})
        meta = {"feature_file": result["feature_file"],
                "table_vs_memory": result["table_vs_memory"],
                "read_ahead_kb": result["read_ahead_kb"],
                "device_ceiling": result["device_ceiling"], "settings": result["params"],
                "paper": {"gids_speedup_vs_mmap": paper.GIDS_SPEEDUP_VS_MMAP}}
        return pd.DataFrame(rows), meta

    return results.cached(NAME, params.key(PARAMETERS), compute, params.force,
                        redraw=params.redraw)


def disk_training_table(data: pd.DataFrame) -> pd.DataFrame:
    """One row per store, for display (a step not run shows its lower bound, "> x")."""
    step = [None if pd.isna(s) else (f"{s:.2f}" if run else f"> {s:.0f}")
            for s, run in zip(data.get("batch_s", []), data.get("step_run", []))]
    return pd.DataFrame({
        "store": data["store"],
        "M rows/s": data.get("rows_per_s") / 1e6,
        "x mmap": data.get("gather_vs_mmap"),
        "x mmap-random": data.get("gather_vs_mmap_random"),
        "bytes read / used": data.get("bytes_read_per_byte_used"),
        "hit rate": data.get("hit_rate"),
        "share of fio": data.get("share_of_fio"),
        "s / step": step or None,
        "epoch (h, extrapolated)": data.get("epoch_h"),
        "test acc": data.get("test_acc"),
        "training peak RSS (GiB)": data.get("train_peak_rss_gb"),
        "rows identical": data.get("rows_identical"),
        "error": data.get("error"),
    })
