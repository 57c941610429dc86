"""04_scaling: epoch time and speedup vs DGL per world size beside the paper's, and the memory
each added rank costs (all of it, and the part that is copies of the data); world sizes this
machine cannot run, or that the benchmark skipped, are rows marked "not run" with the reason."""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from gnnrepro.bench import scaling as scaling_bench
from gnnrepro.experiments import measurements, paper
from gnnrepro.experiments.params import Params, runnable_world_sizes

__all__ = ["NAME", "scaling", "scaling_table"]

NAME = "04_scaling"
#: DGL's pipeline and the paper's (without DGL, our reference pipeline in DGL's place).
PIPELINES = ("dgl", "fused+pinned")
#: The parameters the result depends on (its store key; the notebook lists them first).
PARAMETERS = ("dataset", "scale", "root", "fanouts", "batch_size", "epochs", "device",
        "sampler_device", "feature_source", "gpus", "threads", "workers", "worker_kind",
        "streams", "seed")


def _row(pipeline: str, world_size: int, baseline: str, reason: str | None = None,
         **measured: Any) -> dict[str, Any]:
    """One (pipeline, world size) row: speedup_vs_<baseline> (without DGL
    speedup_vs_reference, every row, and no paper speedup beside it: the paper's is over
    DGL's pipeline)."""
    values = {"epoch_s": math.nan, "speedup_vs_dgl": math.nan,
              f"speedup_vs_{baseline}": math.nan, "test_acc": math.nan,
              "extra_mb_per_rank": math.nan, "extra_data_mb_per_rank": math.nan,
              "oversubscribed": False} | measured
    return {"pipeline": pipeline, "world_size": world_size,
            "status": "not run" if reason else "run", "reason": reason, **values,
            "paper_speedup": (paper.SCALING_SPEEDUP.get(world_size, math.nan)
                              if baseline == "dgl" else math.nan)}


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame(rows).sort_values(["world_size", "pipeline"], kind="stable",
                                          ignore_index=True)


def scaling(params: Params) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Tidy rows per (pipeline, world_size): status ('run' or 'not run'), reason, epoch_s,
    speedup_vs_dgl (fused+pinned's, at the same world size; without DGL speedup_vs_reference,
    over our reference pipeline, and no paper_speedup), test_acc, extra_mb_per_rank and
    extra_data_mb_per_rank (machine PSS, and bytes of distinct data copies, per rank added to
    the smallest world size run; gnnrepro.bench.scaling.MEMORY_METHOD), oversubscribed (CPU
    ranks sharing cores), paper_speedup. The metadata's ranks_are says what a rank is (GPUs,
    or CPU processes on the cpu device), baseline and not_run (DGL's pipeline, where it
    cannot be imported).
    """
    ranks_are = "GPUs" if params.device.startswith("cuda") else "CPU processes"
    runnable, reasons = runnable_world_sizes(params.gpus, params.device)
    pipelines, missing = measurements.on_this_machine(PIPELINES)
    baseline = pipelines[0]
    column = "speedup_vs_dgl" if baseline == "dgl" else "speedup_vs_reference"
    store = params.store()

    def compute() -> tuple[pd.DataFrame, dict[str, Any]]:
        meta = {"ranks_are": ranks_are, "num_train_ids": None, "baseline": baseline,
                "not_run": missing}
        rows = [_row(p, size, baseline, reasons[size]) for size in reasons for p in pipelines]
        if not runnable:
            return _frame(rows), meta
        result = scaling_bench.measure(
            measurements.train_config(params), dataset=params.dataset, scale=params.scale,
            root=params.root, ranks=runnable, pipelines=pipelines)
        base_s = {run["world_size"]: run["epoch_s"] for run in result["runs"]
                  if run["pipeline"] == baseline and not run["skipped"]}
        for run in result["runs"]:
            size, skipped = run["world_size"], run["skipped"]
            if skipped:
                rows.append(_row(run["pipeline"], size, baseline, skipped))
                continue
            speedup = base_s[size] / run["epoch_s"] if size in base_s else math.nan
            rows.append(_row(run["pipeline"], size, baseline, epoch_s=run["epoch_s"],
                             **{column: speedup}, test_acc=run["test_acc"],
                             extra_mb_per_rank=_mb(run["extra_rss_per_rank_bytes"]),
                             extra_data_mb_per_rank=_mb(run["extra_data_bytes_per_rank"]),
                             oversubscribed=bool(run["oversubscribed"])))
        return _frame(rows), meta | {"num_train_ids": result["num_train_ids"]}

    return store.cached(NAME, measurements.result_key(params, PARAMETERS), compute,
                        params.force, redraw=params.redraw)


def _mb(nbytes: float | None) -> float:
    return math.nan if nbytes is None else nbytes / 2**20


def scaling_table(data: pd.DataFrame, not_run: Mapping[str, str] | None = None
                  ) -> pd.DataFrame:
    """One row per world size: each pipeline's epoch time, the speedup beside the paper's
    (without DGL: over our reference pipeline, no paper column), each pipeline's memory per
    added rank (all, and data copies), and why a size was not run; then a row per pipeline in
    `not_run`."""
    baseline = "reference" if "speedup_vs_reference" in data else "dgl"
    pipelines = sorted(dict.fromkeys(data["pipeline"]), key=lambda p: p != baseline)
    rows = []
    for size, group in data.groupby("world_size", sort=True):
        by = group.set_index("pipeline")
        reasons = [r for r in dict.fromkeys(group["reason"]) if isinstance(r, str)]
        if group["oversubscribed"].astype(bool).any():
            reasons.append("ranks shared CPU cores (oversubscribed)")
        statuses = set(group["status"])
        rows.append({
            "world size": size,
            **{f"{p} epoch (s)": by.at[p, "epoch_s"] if p in by.index else math.nan
               for p in pipelines},
            f"speedup vs {baseline} (x)": (by.at["fused+pinned", f"speedup_vs_{baseline}"]
                                           if "fused+pinned" in by.index else math.nan),
            **({"paper (x)": group["paper_speedup"].iloc[0]} if baseline == "dgl" else {}),
            **{f"{p} MB per added rank": by.at[p, "extra_mb_per_rank"] if p in by.index
               else math.nan for p in pipelines},
            **{f"{p} data copies MB per added rank": by.at[p, "extra_data_mb_per_rank"]
               if p in by.index else math.nan for p in pipelines},
            "status": statuses.pop() if len(statuses) == 1 else "partly run",
            "reason": "; ".join(reasons) or "-",
        })
    missing = [{"world size": "-", "status": "not run", "reason": f"{name}: {why}"}
               for name, why in (not_run or {}).items()]
    return pd.DataFrame(rows + missing)
