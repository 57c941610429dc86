"""03_end_to_end: epoch time of the ablation ladder (dgl, fused, fused+pinned) beside the paper's
end-to-end speedup and DGL's whole stack (dgl-native: its pipeline and its model), the epochs
each needs to reach a validation accuracy, and a timeline of a few batches showing which stages
overlap."""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from gnnrepro.experiments import measurements, paper
from gnnrepro.experiments.params import Params
from gnnrepro.experiments.tables import with_not_run

__all__ = ["NAME", "end_to_end", "end_to_end_table", "pipeline_alone", "pipeline_alone_table",
           "timeline_frame"]

NAME = "03_end_to_end"


def end_to_end(params: Params) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Tidy rows per pipeline (epoch_s, speedup_vs_dgl, paper_speedup, val_acc, test_acc,
    seeds_per_s, peak_rss_bytes, wait_s; without DGL speedup_vs_reference, and no paper
    speedup beside it); the metadata holds every epoch's time (epochs_s), the timeline spans
    (pipeline, batch, stage, lane, start_s, end_s; seconds from the pipeline's first span), the
    baseline and the pipelines not run. Same training run as 01_stage_breakdown."""
    store = params.store()

    def compute() -> tuple[pd.DataFrame, dict[str, Any]]:
        result = measurements.ladder(params, store)
        baseline, speedup = measurements.speedups_over(
            {p: r["epoch_s"] for p, r in result["pipelines"].items()})
        rows, timeline = [], []
        for pipeline in measurements.ladder_order(result["pipelines"]):
            r = result["pipelines"][pipeline]
            rows.append({
                "pipeline": pipeline, "epoch_s": r["epoch_s"],
                "speedup_vs_dgl": result["speedup_vs_dgl"].get(pipeline, math.nan),
                **({"speedup_vs_reference": speedup[pipeline]} if baseline == "reference"
                   else {}),
                "speedup_vs_dgl_native": result.get("speedup_vs_dgl_native", {}).get(
                    pipeline, math.nan),
                "epochs_to_target": r.get("epochs_to_target"),
                "paper_speedup": (paper.END_TO_END_SPEEDUP
                                  if pipeline == "fused+pinned" and baseline == "dgl"
                                  else math.nan),
                "val_acc": r["val_acc"], "test_acc": r["test_acc"],
                "seeds_per_s": r["seeds_per_s"], "peak_rss_bytes": r["peak_rss_bytes"],
                "wait_s": r["wait_s"],
                # the spread of the epochs epoch_s is the median of: the bars' error bars
                "epoch_s_p10": float(np.percentile(r.get("steady_epochs_s", r["epochs_s"]), 10)),
                "epoch_s_p90": float(np.percentile(r.get("steady_epochs_s", r["epochs_s"]), 90))})
            origin = min((span["start"] for span in r["timeline"]), default=0.0)
            timeline += [{"pipeline": pipeline, "batch": span["batch"], "stage": span["stage"],
                          "lane": span["lane"], "start_s": span["start"] - origin,
                          "end_s": span["end"] - origin} for span in r["timeline"]]
        meta = {"dataset": result["dataset"], "timeline": timeline, "baseline": baseline,
                "not_run": measurements.on_this_machine(measurements.LADDER)[1],
                "target_acc": result["params"].get("target_acc"),
                "val_acc_epochs": {p: r.get("val_acc_epochs")
                                   for p, r in result["pipelines"].items()},
                "epochs_s": {p: r["epochs_s"] for p, r in result["pipelines"].items()}}
        return pd.DataFrame(rows), meta

    return store.cached(NAME, measurements.result_key(params, measurements.LADDER_KEY),
                        compute, params.force, redraw=params.redraw)


def end_to_end_table(data: pd.DataFrame, not_run: Mapping[str, str] | None = None
                     ) -> pd.DataFrame:
    """One row per pipeline: epoch time, speedups vs DGL's pipeline (same model, beside the
    paper's) and vs DGL's whole stack (without DGL: vs our reference pipeline, and no paper
    column), accuracy, epochs to the target accuracy, memory; then `not_run`'s rows."""
    return with_not_run(pd.DataFrame({
        "pipeline": data["pipeline"],
        "epoch (s)": data["epoch_s"],
        **_speedup_columns(data),
        "seeds/s": data["seeds_per_s"],
        "val acc": data["val_acc"],
        "test acc": data["test_acc"],
        "epochs to target acc": data.get("epochs_to_target"),
        "peak RSS (MiB)": data["peak_rss_bytes"] / 2**20,
    }), "pipeline", not_run)


def _speedup_columns(data: pd.DataFrame) -> dict[str, pd.Series]:
    """The speedup column over the baseline that ran (DGL's pipeline beside the paper's, or
    our reference pipeline alone: the paper's ratios are over DGL)."""
    if "speedup_vs_reference" in data:
        return {"speedup vs reference (x)": data["speedup_vs_reference"]}
    return {"speedup vs dgl (x)": data["speedup_vs_dgl"], "paper (x)": data["paper_speedup"],
            "speedup vs dgl-native (x)": data.get("speedup_vs_dgl_native", math.nan)}


def timeline_frame(meta: dict[str, Any]) -> pd.DataFrame:
    """The timeline spans of end_to_end's metadata as a DataFrame."""
    return pd.DataFrame(meta["timeline"], columns=["pipeline", "batch", "stage", "lane",
                                                   "start_s", "end_s"])


#: The parameters the pipeline-alone result depends on (its store key).
ALONE_PARAMETERS = (*measurements.LADDER_KEY, "loader_rounds", "loader_step_ms", "peers")


def pipeline_alone(params: Params) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The pipeline alone (gnnrepro.bench.loader): tidy rows per pipeline (epoch_s,
    batches_per_s, speedup_vs_dgl, epoch_s_min, epoch_s_max) for delivering every batch of an
    epoch with no model, or a busy-wait standing in for a GPU step; what a GPU trainer would
    wait for; the peers (GraphBolt, PyG) that ran, beside them (only with no stand-in step).
    Without DGL the speedups are over our reference pipeline (speedup_vs_reference). The
    metadata holds step_ms, its note, peers_not_run and not_run (DGL's loader, where DGL
    cannot be imported)."""
    store = params.store()

    def compute() -> tuple[pd.DataFrame, dict[str, Any]]:
        result = measurements.loader_run(params, store)
        baseline, speedup = measurements.speedups_over(
            {name: r["epoch_s"] for name, r in result["pipelines"].items()})
        rows = [{"pipeline": name, "epoch_s": r["epoch_s"], "batches_per_s": r["batches_per_s"],
                 "speedup_vs_dgl": result["speedup_vs_dgl"].get(name, math.nan),
                 **({"speedup_vs_reference": speedup[name]} if baseline == "reference"
                    else {}),
                 "epoch_s_min": r["epoch_s_min"], "epoch_s_max": r["epoch_s_max"]}
                for name, r in ((n, result["pipelines"][n])
                                for n in measurements.ladder_order(result["pipelines"]))]
        step = result["params"]["step_ms"]
        note = (f"model step: {step:g} ms busy-wait (a stand-in, no model)" if step
                else "no model step: the pipeline alone")
        return pd.DataFrame(rows), {"step_ms": step, "step_note": note,
                                    "threads": result["params"]["threads"],
                                    "peers_not_run": result.get("peers_not_run", {}),
                                    "not_run": measurements.on_this_machine(
                                        measurements.LOADERS)[1]}

    return store.cached(f"{NAME}_pipeline_alone",
                        measurements.result_key(params, ALONE_PARAMETERS), compute,
                        params.force, redraw=params.redraw)


def pipeline_alone_table(data: pd.DataFrame, not_run: Mapping[str, str] | None = None
                         ) -> pd.DataFrame:
    """One row per pipeline: epoch time (median, min, max over rounds), batches/s, speedup
    (over DGL's loader, or without DGL over our reference pipeline's); then `not_run`'s
    rows."""
    return with_not_run(pd.DataFrame({
        "pipeline": data["pipeline"],
        "epoch (s)": data["epoch_s"],
        "min (s)": data["epoch_s_min"],
        "max (s)": data["epoch_s_max"],
        "batches/s": data["batches_per_s"],
        **({"speedup vs reference (x)": data["speedup_vs_reference"]}
           if "speedup_vs_reference" in data else
           {"speedup vs dgl (x)": data["speedup_vs_dgl"]}),
    }), "pipeline", not_run)
