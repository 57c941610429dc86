"""07_partitioned: partitioned training on 1 and 2 machines of this host (DistDGLv2's row),
ours beside DGL's DistDGL - epoch time, bytes exchanged per batch, remote fractions, accuracy,
and whether the distributed blocks equal the single machine's. A DGL run that could not
happen is a row marked "not run" with the reason."""
from __future__ import annotations

import math
from typing import Any

import pandas as pd

from gnnrepro.bench import partitioned as partitioned_bench
from gnnrepro.experiments import measurements
from gnnrepro.experiments.params import Params

__all__ = ["MACHINES", "NAME", "partitioned", "partitioned_table"]

NAME = "07_partitioned"
#: Machine counts, simulated on this host (torchrun agents over loopback).
MACHINES = (1, 2)
#: The parameters the result depends on (its store key; the notebook lists them first).
PARAMETERS = ("dataset", "scale", "root", "fanouts", "batch_size", "epochs", "threads", "seed")


def _row(system: str, machines: int, reason: str | None = None,
         **measured: Any) -> dict[str, Any]:
    values = {"epoch_s": math.nan, "sampling_bytes_per_batch": math.nan,
              "feature_bytes_per_batch": math.nan, "remote_edge_fraction": math.nan,
              "remote_row_fraction": math.nan, "loopback_bytes_per_step": math.nan,
              "test_acc": math.nan, "blocks_identical": None} | measured
    return {"system": system, "machines": machines, "status": "not run" if reason else "run",
            "reason": reason, **values}


def partitioned(params: Params) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Tidy rows per (system: ours | dgl, machines): status, reason, epoch_s, bytes per batch
    sent by a rank for sampling and for features, remote edge and row fractions, DistDGL's
    loopback bytes per step (all its traffic, gradients included), test_acc, blocks_identical
    (ours). The metadata holds each partition's statistics."""
    store = params.store()

    def compute() -> tuple[pd.DataFrame, dict[str, Any]]:
        result = partitioned_bench.measure(
            measurements.train_config(params, workers=0), dataset=params.dataset,
            scale=params.scale, root=params.root, machines=MACHINES)
        rows = []
        for run in result["runs"]:
            rows.append(_row(
                "ours", run["machines"], epoch_s=run["epoch_s"],
                sampling_bytes_per_batch=run["bytes_per_batch"]["sampling"],
                feature_bytes_per_batch=run["bytes_per_batch"]["features"],
                remote_edge_fraction=run["remote_edge_fraction"],
                remote_row_fraction=run["remote_row_fraction"], test_acc=run["test_acc"],
                blocks_identical=run["blocks_identical"]))
        for machines, dgl in result["dgl"].items():
            if dgl["ran"]:
                rows.append(_row("dgl", int(machines), epoch_s=dgl["epoch_s"],
                                 test_acc=dgl["test_acc"],
                                 loopback_bytes_per_step=dgl.get("loopback_bytes_per_step",
                                                                 math.nan)))
            else:
                rows.append(_row("dgl", int(machines),
                                 dgl.get("cause") or f"{dgl['step']}: {dgl['reason']}"))
        data = pd.DataFrame(rows).sort_values(["machines", "system"], kind="stable",
                                              ignore_index=True)
        return data, {"partitions": {str(r["machines"]): r["partition"]
                                     for r in result["runs"]}}

    return store.cached(NAME, params.key(PARAMETERS), compute, params.force,
                        redraw=params.redraw)


def partitioned_table(data: pd.DataFrame) -> pd.DataFrame:
    """One row per (machines, system) with the measured columns in readable units."""
    return pd.DataFrame({
        "machines": data["machines"], "system": data["system"], "status": data["status"],
        "epoch (s)": data["epoch_s"],
        "sampling KB/batch": data["sampling_bytes_per_batch"] / 1024,
        "features KB/batch": data["feature_bytes_per_batch"] / 1024,
        "remote edges": data["remote_edge_fraction"], "remote rows": data["remote_row_fraction"],
        "loopback KB/step (DistDGL)": data["loopback_bytes_per_step"] / 1024,
        "test acc": data["test_acc"], "blocks identical": data["blocks_identical"],
        "reason": data["reason"].fillna("-")})
