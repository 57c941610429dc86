"""01_stage_breakdown: the four stage times (sample, extract, forward, backward) per pipeline,
which show that sampling and feature extraction dominate DGL's pipeline."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from gnnrepro.experiments import measurements
from gnnrepro.experiments.params import Params
from gnnrepro.experiments.tables import with_not_run
from gnnrepro.pipeline.spans import STAGES

__all__ = ["NAME", "stage_breakdown", "stage_table"]

NAME = "01_stage_breakdown"


def stage_breakdown(params: Params) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Tidy rows (pipeline, stage, work_s, exposed_s, share_of_work, epoch_s, wait_s): per
    epoch, median over the epochs after the first. exposed_s is NaN where the pipeline cannot
    split its wait between sample and extract (workers); wait_s is that wait."""
    store = params.store()

    def compute() -> tuple[pd.DataFrame, dict[str, Any]]:
        result = measurements.ladder(params, store)
        rows = []
        for pipeline in measurements.ladder_order(result["pipelines"]):
            r = result["pipelines"][pipeline]
            total = sum(r["stages"][stage]["work_s"] for stage in STAGES)
            for stage in STAGES:
                times = r["stages"][stage]
                rows.append({"pipeline": pipeline, "stage": stage, "work_s": times["work_s"],
                             "exposed_s": times["exposed_s"],
                             "share_of_work": times["work_s"] / total,
                             "epoch_s": r["epoch_s"], "wait_s": r["wait_s"]})
        data = pd.DataFrame(rows).astype({"exposed_s": float})
        return data, {"dataset": result["dataset"],
                      "not_run": measurements.on_this_machine(measurements.LADDER)[1]}

    return store.cached(NAME, measurements.result_key(params, measurements.LADDER_KEY),
                        compute, params.force, redraw=params.redraw)


def stage_table(data: pd.DataFrame, not_run: Mapping[str, str] | None = None) -> pd.DataFrame:
    """One row per pipeline: each stage's work, the epoch time, the wait for batches, and the
    share of sample + extract in the total work; then `not_run`'s rows."""
    pipelines = list(dict.fromkeys(data["pipeline"]))
    work = data.pivot(index="pipeline", columns="stage", values="work_s").loc[pipelines]
    per_pipeline = data.groupby("pipeline").first().loc[pipelines]
    table = pd.DataFrame({"pipeline": pipelines})
    for stage in STAGES:
        table[f"{stage} (s)"] = work[stage].to_numpy()
    table["epoch (s)"] = per_pipeline["epoch_s"].to_numpy()
    table["waited (s)"] = per_pipeline["wait_s"].to_numpy()
    table["sample+extract (% of work)"] = (
        100 * (work["sample"] + work["extract"]) / work[list(STAGES)].sum(axis=1)).to_numpy()
    return with_not_run(table, "pipeline", not_run)
