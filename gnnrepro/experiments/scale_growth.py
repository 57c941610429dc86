"""08_scale_growth: how cost grows with the graph, ours beside DGL's, on products-sim at each of
`growth_scales` (0.05, 0.25 and 1.0 by default: 122k to 2.45M nodes).

Per scale and system: sampling time per batch (the same seed batches; the work per batch is
nearly the same at every scale, so a rising line is the cost of a graph that no longer fits
the caches), the pipeline alone in batches per second, the training epoch (the work grows with
the training ids, i.e. with the scale), the training process's peak memory and test accuracy.
Each measurement is one of the benchmarks the other notebooks run (stored and reused the same
way)."""
from __future__ import annotations

import dataclasses
from typing import Any

import pandas as pd
from tqdm import tqdm

from gnnrepro.experiments import measurements
from gnnrepro.experiments.params import Params
from gnnrepro.experiments.store import Store

__all__ = ["DATASET", "NAME", "SYSTEMS", "growth_table", "scale_growth"]

NAME = "08_scale_growth"
DATASET = "products-sim"
#: system -> (its sampler in bench sampling, its pipeline in bench loader / end-to-end)
SYSTEMS = {"ours": ("fused", "fused+pinned"), "dgl": ("dgl-fused", "dgl")}
#: The parameters the result depends on (its store key; the notebook lists them first).
PARAMETERS = ("growth_scales", "root", "fanouts", "batch_size", "epochs", "threads", "workers",
        "worker_kind", "seed", "sampling_batches", "sampling_repeats", "loader_rounds")


def scale_growth(params: Params) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Tidy rows per (scale, system): nodes, edges, train_ids, sample_ms (median per batch),
    sampled_edges_per_s, loader_batches_per_s, epoch_s, peak_rss_gb (the training process),
    test_acc, eval_methods (how val and test were evaluated)."""
    store = Store(params.results_dir)
    pipelines = tuple(pipeline for _, pipeline in SYSTEMS.values())

    def compute() -> tuple[pd.DataFrame, dict[str, Any]]:
        rows = []
        for scale in tqdm(params.growth_scales, desc=NAME, unit="scale"):
            at = dataclasses.replace(params, dataset=DATASET, scale=scale)
            sampling = measurements.sampling_run(at, store, DATASET)
            loader = measurements.loader_run(at, store, pipelines)
            training = measurements.end_to_end_run(at, store, pipelines)
            graph = sampling["params"]
            for system, (sampler, pipeline) in SYSTEMS.items():
                sampled = sampling["samplers"][sampler]
                trained = training["pipelines"][pipeline]
                rows.append({
                    "scale": scale, "nodes": graph["num_nodes"], "edges": graph["num_edges"],
                    "train_ids": training["dataset"]["num_train"], "system": system,
                    "sample_ms": sampled["ms_per_batch"],
                    "sampled_edges_per_s": sampled["edges_per_s"],
                    "loader_batches_per_s": loader["pipelines"][pipeline]["batches_per_s"],
                    "epoch_s": trained["epoch_s"],
                    "peak_rss_gb": trained["peak_rss_bytes"] / 2**30,
                    "test_acc": trained["test_acc"],
                    "eval_methods": str(trained.get("eval_methods", {}))})
        return pd.DataFrame(rows), {"dataset": DATASET, "systems": SYSTEMS}

    return store.cached(NAME, params.key(PARAMETERS), compute, params.force)


def growth_table(data: pd.DataFrame) -> pd.DataFrame:
    """One row per (scale, system), readable units, and each cost over the smallest scale's
    beside the edges' ratio (what growing with the work would give)."""
    first = data[data["scale"] == data["scale"].min()].set_index("system")
    base = first.loc[data["system"]].reset_index(drop=True)
    return pd.DataFrame({
        "scale": data["scale"], "system": data["system"],
        "edges (M)": data["edges"] / 1e6, "edges x": data["edges"] / base["edges"],
        "sample ms/batch": data["sample_ms"], "sample x": data["sample_ms"] / base["sample_ms"],
        "loader batches/s": data["loader_batches_per_s"],
        "epoch (s)": data["epoch_s"], "epoch x": data["epoch_s"] / base["epoch_s"],
        "peak RSS (GB)": data["peak_rss_gb"], "test acc": data["test_acc"]})
