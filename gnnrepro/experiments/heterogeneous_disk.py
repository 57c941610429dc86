"""09_heterogeneous, last part: MLPerf's workload shape with features larger than memory.

One `bench typed-disk` run on igbh-sim at `hetero_disk_scale` (1.0: MLPerf's IGBH schema with
IGB-medium's 10M papers, 41.6 GB of float16 features on every node type): R-GCN (2 layers,
hidden `hetero_hidden`, fanouts 10,5, batch 1024) trained for `hetero_disk_steps` steps with
the features read by our disk store and for a few with them memory-mapped, each in its own
process after the page cache is dropped, the epoch extrapolated; then the accuracy on test
papers sampled through the same store. Scale 0 (the default) skips it: at 1.0 it needs about
45 GB of free disk and half an hour on 2 cores.
"""
from __future__ import annotations

from typing import Any

import pandas as pd

from gnnrepro.bench import typed_disk as bench
from gnnrepro.config import resolve_threads
from gnnrepro.datasets import igbh_sim
from gnnrepro.experiments.params import Params

__all__ = ["NAME", "PARAMETERS", "heterogeneous_disk", "heterogeneous_disk_skip_reason"]

NAME = "09_heterogeneous_disk"
#: The parameters the result depends on (its store key).
PARAMETERS = ("hetero_disk_scale", "hetero_disk_steps", "hetero_hidden", "batch_size",
              "threads", "seed")


def heterogeneous_disk_skip_reason(params: Params) -> str | None:
    """Why the section does not run with these parameters (None: it runs)."""
    if params.hetero_disk_scale > 0:
        return None
    need = igbh_sim.disk_bytes(1.0) / 1e9
    return (f"Skipped: hetero_disk_scale is 0. At igbh-sim 1.0 this section writes {need:.0f} "
            f"GB (it needs about {need * 1.02:.0f} GB of free disk) and trains for about half "
            "an hour on 2 cores; run it with make figures "
            "PARAMS=notebooks/params/larger-than-memory.yaml "
            "NOTEBOOKS=notebooks/09_heterogeneous.ipynb")


def heterogeneous_disk(params: Params) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Rows per store (disk, mmap): steps run, seconds per step after the first, the epoch
    extrapolated (hours), test accuracy and the majority class's, peak RSS; or an error."""
    results = params.store()

    def compute() -> tuple[pd.DataFrame, dict[str, Any]]:
        kwargs = {"dataset": igbh_sim.NAME, "scale": params.hetero_disk_scale,
                  "root": params.root, "model": "rgcn", "fanouts": [10, 5],
                  "batch_size": params.batch_size, "steps": params.hetero_disk_steps,
                  "hidden": params.hetero_hidden, "threads": resolve_threads(params.threads),
                  "seed": params.seed}
        result = results.memo("typed-disk", kwargs, lambda: bench.measure(**kwargs),
                              params.force)
        rows = []
        for name, r in result["stores"].items():
            epoch = r.get("epoch_s_extrapolated")
            rows.append({"store": name, "steps": r.get("steps"),
                         "step_s": r.get("step_s_after_first"),
                         "epoch_h": None if epoch is None else epoch / 3600,
                         "test_acc": r.get("test_acc"),
                         "majority_acc": r.get("test_majority_acc"),
                         "peak_rss_gb": (r["peak_rss_bytes"] / 2**30
                                         if "peak_rss_bytes" in r else None),
                         "error": r.get("error")})
        p = result["params"]
        meta = {"feature_gb": p["feature_bytes"] / 1e9, "memory_gb": p["memory_bytes"] / 1e9,
                "settings": p, "dataset": result["dataset"]}
        return pd.DataFrame(rows), meta

    return results.cached(NAME, params.key(PARAMETERS), compute, params.force,
                          redraw=params.redraw)
