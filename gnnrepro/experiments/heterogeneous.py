"""09_heterogeneous: heterogeneous graphs (issue 50), ours beside DGL's heterogeneous stack on a
typed dataset (`hetero_dataset` at `hetero_scale`: mag-sim, ogbn-mag's shape, by default).

Three measurements, each one of the benchmarks the library runs (stored and reused as the other
notebooks' are): sampling a batch of the target type (`bench typed-sampling`: DGL's
sample_neighbors + to_block and its NeighborSampler on the heterograph against our fused
per-relation op, the same batches interleaved) at each of `hetero_fanouts`; the pipeline alone
(`bench loader`: DGL's DataLoader on the heterograph against fused+pinned, no model); and
training end to end (`bench end-to-end`: the same R-GCN, `hetero_hidden` wide, one layer per
fanout of the first list, on both loaders). The pipeline-alone run measures the `peers`
(GraphBolt's and PyG's typed stacks: gnnrepro.peers) beside them, each from its own environment;
a peer not set up is a row marked "not run" with the reason. Where DGL cannot be imported its
samplers and its pipeline are rows marked "not run" with the reason, and ours are measured
alone."""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pandas as pd
from tqdm import tqdm

from gnnrepro.baselines.dgl_import import import_dgl
from gnnrepro.bench import typed_sampling
from gnnrepro.datasets import SCALED_DATASETS
from gnnrepro.experiments import measurements
from gnnrepro.experiments.params import Params
from gnnrepro.experiments.store import Store
from gnnrepro.training.loop import MODELS

__all__ = ["MODEL", "NAME", "PIPELINES", "heterogeneous", "heterogeneous_label",
           "heterogeneous_sampling_table", "heterogeneous_table"]

NAME = "09_heterogeneous"
#: DGL's loader and ours, both feeding MODEL.
PIPELINES = ("dgl", "fused+pinned")
#: The model both pipelines train (gnnrepro.training.loop.MODELS): R-GCN, as ogbn-mag's
#: examples in DGL and PyG.
MODEL = "rgcn"
#: The parameters the result depends on (its store key; the notebook lists them first).
PARAMETERS = ("hetero_dataset", "hetero_scale", "root", "hetero_fanouts", "hetero_hidden",
              "batch_size", "epochs", "device", "sampler_device", "feature_source",
              "feature_store", "threads", "workers", "worker_kind", "streams", "seed",
              "train_repeats", "sampling_batches", "sampling_repeats", "loader_rounds",
              "loader_step_ms", "peers")
#: Every row's measured columns, NaN where a row's part or status has none.
_MEASURED = ("ms_per_batch", "ms_p10", "ms_p90", "edges", "input_nodes", "fused_speedup",
             "batches_per_s", "batches_per_s_min", "batches_per_s_max", "alone_speedup_vs_dgl",
             "epoch_s", "epoch_s_p10", "epoch_s_p90", "speedup_vs_dgl", "val_acc", "test_acc",
             "peak_rss_bytes")


def _row(part: str, fanouts: list[int], name: str, reason: str | None = None,
         **measured: float) -> dict[str, Any]:
    """One tidy row: `part` 'sampling' (name: a sampler) or 'pipeline' (name: a pipeline)."""
    return {"part": part, "fanouts": ",".join(map(str, fanouts)), "name": name,
            "status": "not run" if reason else "run", "reason": reason,
            **dict.fromkeys(_MEASURED, math.nan), **measured}


def _dgl_missing() -> str | None:
    """Why DGL cannot be imported here, or None where it can."""
    try:
        import_dgl()
    except ImportError as exc:
        return str(exc)
    return None


def _sampling_rows(params: Params, store: Store, fanouts: list[int],
                   missing: str | None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The rows of every typed sampler at `fanouts` (DGL's not run where `missing` says why),
    and the run's parameters."""
    samplers = ["fused"] if missing else list(typed_sampling.SAMPLERS)
    kwargs = {**params.sampling_kwargs(), "dataset": params.hetero_dataset,
              "scale": params.hetero_scale, "fanouts": list(fanouts), "samplers": samplers}
    result = store.memo("typed-sampling", kwargs, lambda: typed_sampling.measure(**kwargs),
                        params.force)
    fused_ms = result["samplers"]["fused"]["ms_per_batch"]
    rows = []
    for name in typed_sampling.SAMPLERS:
        r = result["samplers"].get(name)
        if r is None:
            rows.append(_row("sampling", fanouts, name, missing))
            continue
        rows.append(_row("sampling", fanouts, name, ms_per_batch=r["ms_per_batch"],
                         ms_p10=r["ms_p10"], ms_p90=r["ms_p90"], edges=r["edges"],
                         input_nodes=r["input_nodes"],
                         fused_speedup=r["ms_per_batch"] / fused_ms))
    return rows, result["params"]


def _pipeline_rows(params: Params, store: Store,
                   missing: str | None) -> tuple[list[dict[str, Any]], str]:
    """Per pipeline (DGL's not run where `missing` says why): the pipeline alone and training
    MODEL on the first fanout list; per peer (`params.peers`) the pipeline alone only (its own
    model is not ours: issue 50's peers-train runs compare them); and the pipeline-alone run's
    step note."""
    fanouts = params.hetero_fanouts[0]
    at = dataclasses.replace(params, dataset=params.hetero_dataset, scale=params.hetero_scale,
                             fanouts=list(fanouts))
    pipelines = PIPELINES[1:] if missing else PIPELINES
    alone = measurements.loader_run(at, store, pipelines)
    trained = measurements.end_to_end_run(at, store, pipelines, repeats=params.train_repeats,
                                          model=MODEL, hidden=params.hetero_hidden)
    rows = []
    for name in PIPELINES:
        if name not in pipelines:
            rows.append(_row("pipeline", fanouts, name, missing))
            continue
        loader, run = alone["pipelines"][name], trained["pipelines"][name]
        batches = loader["batches_per_s"] * loader["epoch_s"]  # an epoch's
        steady = run.get("steady_epochs_s", run["epochs_s"])
        rows.append(_row(
            "pipeline", fanouts, name, batches_per_s=loader["batches_per_s"],
            batches_per_s_min=batches / loader["epoch_s_max"],
            batches_per_s_max=batches / loader["epoch_s_min"],
            alone_speedup_vs_dgl=alone["speedup_vs_dgl"].get(name, math.nan),
            epoch_s=run["epoch_s"], epoch_s_p10=float(np.percentile(steady, 10)),
            epoch_s_p90=float(np.percentile(steady, 90)),
            speedup_vs_dgl=trained["speedup_vs_dgl"].get(name, math.nan),
            val_acc=run["val_acc"], test_acc=run["test_acc"],
            peak_rss_bytes=run["peak_rss_bytes"]))
    rows += _peer_rows(alone, fanouts)
    step = alone["params"]["step_ms"]
    note = (f"pipeline alone: {step:g} ms busy-wait per batch (a stand-in, no model)" if step
            else "pipeline alone: no model step")
    return rows, note


def _peer_rows(alone: dict[str, Any], fanouts: list[int]) -> list[dict[str, Any]]:
    """The pipeline-alone rows of the peers that ran beside ours, then of those that did not
    (with why)."""
    rows = []
    for name, loader in alone["pipelines"].items():
        if name in PIPELINES:
            continue
        batches = loader["batches_per_s"] * loader["epoch_s"]
        rows.append(_row("pipeline", fanouts, name, batches_per_s=loader["batches_per_s"],
                         batches_per_s_min=batches / loader["epoch_s_max"],
                         batches_per_s_max=batches / loader["epoch_s_min"],
                         alone_speedup_vs_dgl=alone["speedup_vs_dgl"].get(name, math.nan)))
    return rows + [_row("pipeline", fanouts, name, why)
                   for name, why in alone.get("peers_not_run", {}).items()]


def heterogeneous(params: Params) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Tidy rows, `part` 'sampling' per (fanouts, sampler: dgl-unfused, dgl-fused, fused):
    ms_per_batch (median), ms_p10, ms_p90, edges and input_nodes (per batch), fused_speedup
    (this sampler's time / the fused sampler's); `part` 'pipeline' per pipeline (dgl,
    fused+pinned) at the first fanouts: the pipeline alone's batches_per_s (min, max over its
    rounds) and alone_speedup_vs_dgl, the training epoch_s (median of the steady epochs; p10,
    p90), speedup_vs_dgl, val_acc, test_acc, peak_rss_bytes. Every row has status and reason.
    The metadata holds the target type, the graph's size, the model's name and width,
    not_run {name: why} and step_note."""
    store = params.store()

    def compute() -> tuple[pd.DataFrame, dict[str, Any]]:
        missing = _dgl_missing()
        rows: list[dict[str, Any]] = []
        graph: dict[str, Any] = {}  # the dataset's, as typed-sampling reports it
        for fanouts in tqdm(params.hetero_fanouts, desc=NAME, unit="fanouts"):
            sampled, graph = _sampling_rows(params, store, fanouts, missing)
            rows += sampled
        pipelines, note = _pipeline_rows(params, store, missing)
        rows += pipelines
        data = pd.DataFrame(rows)
        not_run = {r["name"]: r["reason"] for r in rows if r["reason"]}
        return data, {"dataset": params.hetero_dataset, "target": graph["target"],
                      "num_nodes": graph["num_nodes"], "num_edges": graph["num_edges"],
                      "model": MODELS[MODEL][1], "hidden": params.hetero_hidden,
                      "not_run": not_run, "step_note": note}

    return store.cached(NAME, params.key(PARAMETERS), compute, params.force,
                        redraw=params.redraw)


def heterogeneous_sampling_table(data: pd.DataFrame) -> pd.DataFrame:
    """One row per (fanouts, sampler): time per batch, its spread, the batch's size and the
    fused sampler's speedup over it."""
    rows = data[data["part"] == "sampling"]
    return pd.DataFrame({
        "fanouts": rows["fanouts"], "sampler": rows["name"], "status": rows["status"],
        "ms/batch": rows["ms_per_batch"], "p10 (ms)": rows["ms_p10"],
        "p90 (ms)": rows["ms_p90"], "edges/batch": rows["edges"],
        "input nodes/batch": rows["input_nodes"], "fused's speedup (x)": rows["fused_speedup"],
        "reason": rows["reason"].fillna("-")}).reset_index(drop=True)


def heterogeneous_table(data: pd.DataFrame) -> pd.DataFrame:
    """One row per pipeline: epoch time, speedup over DGL's loader, accuracy and memory of
    training, and the pipeline alone's batches/s and speedup."""
    rows = data[data["part"] == "pipeline"]
    return pd.DataFrame({
        "pipeline": rows["name"], "fanouts": rows["fanouts"], "status": rows["status"],
        "epoch (s)": rows["epoch_s"], "speedup vs dgl (x)": rows["speedup_vs_dgl"],
        "val acc": rows["val_acc"], "test acc": rows["test_acc"],
        "peak RSS (MiB)": rows["peak_rss_bytes"] / 2**20,
        "alone: batches/s": rows["batches_per_s"],
        "alone: speedup vs dgl (x)": rows["alone_speedup_vs_dgl"],
        "reason": rows["reason"].fillna("-")}).reset_index(drop=True)


def heterogeneous_label(params: Params) -> dict[str, Any]:
    """What the figure's corner label names (plots.save_figure's `dataset` and `scales`): the
    typed dataset, with its scale where it has one."""
    if params.hetero_dataset in SCALED_DATASETS:
        return {"dataset": params.hetero_dataset, "scales": [params.hetero_scale]}
    return {"dataset": params.hetero_dataset}
