"""08_scale_growth: how cost grows with the graph, ours beside DGL's, on products-sim at each of
`growth_scales` (0.05 and 0.25 by default, 122k and 612k nodes; 1.0, ogbn-products' size of
2.45M nodes, with params/products.yaml), and optionally at
papers-sim `growth_papers_scale` (1.0: ogbn-papers100M's size, 1.6B edges).

Per scale and system: sampling time per batch (the same seed batches; the work per batch is
nearly the same at every scale, so a rising line is the cost of a graph that no longer fits
the caches), the pipeline alone in batches per second, the training epoch (the work grows with
the training ids, i.e. with the scale), the training process's peak memory and test accuracy.
Each measurement is one of the benchmarks the other notebooks run (stored and reused the same
way; at the notebooks' own dataset and scale, the very runs of 01-03, so that `make figures`
measures them once). At papers-sim the features (57 GB at 1.0) are larger than memory: sampling is measured
for both systems, and training for ours only, with the features from the disk store for
`disk_training_batches` steps (`bench disk-training`, the epoch extrapolated, test accuracy
sampled on a subset of the test ids); the pipeline alone is not measured there."""
from __future__ import annotations

import dataclasses
from typing import Any

import pandas as pd
from tqdm import tqdm

from gnnrepro.bench import disk_training as disk_bench
from gnnrepro.config import resolve_threads
from gnnrepro.datasets import papers_sim
from gnnrepro.experiments import measurements
from gnnrepro.experiments.params import Params
from gnnrepro.experiments.store import Store

__all__ = ["DATASET", "NAME", "PAPERS", "SYSTEMS", "growth_table", "scale_growth"]

NAME = "08_scale_growth"
DATASET = "products-sim"
PAPERS = papers_sim.NAME
#: system -> (its sampler in bench sampling, its pipeline in bench loader / end-to-end)
SYSTEMS = {"ours": ("fused", "fused+pinned"), "dgl": ("dgl-fused", "dgl")}
#: The parameters the result depends on (its store key; the notebook lists them first).
PARAMETERS = ("growth_scales", "growth_papers_scale", "disk_training_batches", "root", "fanouts",
              "batch_size", "epochs", "threads", "workers", "worker_kind", "seed",
              "sampling_batches", "sampling_repeats", "loader_rounds")


def scale_growth(params: Params) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Tidy rows per (dataset, scale, system): features (where they were read from), nodes, edges, train_ids, sample_ms (median per batch),
    sampled_edges_per_s, loader_batches_per_s, epoch_s, peak_rss_gb (the training process),
    test_acc, eval_methods (how val and test were evaluated)."""
    store = params.store()
    pipelines = tuple(pipeline for _, pipeline in SYSTEMS.values())

    def compute() -> tuple[pd.DataFrame, dict[str, Any]]:
        rows = []
        for scale in tqdm(params.growth_scales, desc=NAME, unit="scale"):
            at = dataclasses.replace(params, dataset=DATASET, scale=scale)
            # At the size 01-03 measure, their runs (a superset of these pipelines) serve.
            own = params.dataset == DATASET and scale == params.scale
            sampling = measurements.sampling_run(at, store, DATASET)
            loader = measurements.loader_run(at, store, None if own else pipelines)
            training = (measurements.ladder(at, store) if own
                        else measurements.end_to_end_run(at, store, pipelines))
            graph = sampling["params"]
            for system, (sampler, pipeline) in SYSTEMS.items():
                sampled = sampling["samplers"][sampler]
                trained = training["pipelines"][pipeline]
                rows.append({
                    "dataset": DATASET, "features": "memory",
                    "scale": scale, "nodes": graph["num_nodes"], "edges": graph["num_edges"],
                    "train_ids": training["dataset"]["num_train"], "system": system,
                    "sample_ms": sampled["ms_per_batch"],
                    "sampled_edges_per_s": sampled["edges_per_s"],
                    "loader_batches_per_s": loader["pipelines"][pipeline]["batches_per_s"],
                    "epoch_s": trained["epoch_s"],
                    "peak_rss_gb": trained["peak_rss_bytes"] / 2**30,
                    "test_acc": trained["test_acc"],
                    "eval_methods": str(trained.get("eval_methods", {}))})
        if params.growth_papers_scale > 0:
            rows += _papers_rows(params, store)
        datasets = [DATASET] + ([PAPERS] if params.growth_papers_scale > 0 else [])
        return pd.DataFrame(rows), {"datasets": datasets, "systems": SYSTEMS}

    return store.cached(NAME, params.key(PARAMETERS), compute, params.force,
                        redraw=params.redraw)


def _papers_rows(params: Params, store: Store) -> list[dict[str, Any]]:
    """The papers-sim rows: both systems' sampling (with the random-read ceiling), our
    training from the disk store (NaN where a system was not measured)."""
    scale = params.growth_papers_scale
    at = dataclasses.replace(params, dataset=PAPERS, scale=scale)
    sampling = measurements.sampling_run(at, store, PAPERS, samplers=("dgl-fused", "fused"),
                                         ceiling=True, peers=[])
    kwargs = {"dataset": PAPERS, "scale": scale, "root": params.root,
              "fanouts": list(params.fanouts), "batch_size": params.batch_size,
              "stores": ["disk"], "train_batches": params.disk_training_batches,
              "threads": resolve_threads(params.threads), "seed": params.seed}
    trained = store.memo("disk-training", kwargs, lambda: disk_bench.measure(**kwargs),
                         params.force)
    disk = trained["stores"]["disk"]
    graph, train = sampling["params"], disk["train"]
    rows = []
    for system, (sampler, _) in SYSTEMS.items():
        ours = system == "ours"
        sampled = sampling["samplers"][sampler]
        rows.append({
            "dataset": PAPERS, "features": "disk" if ours else "not trained",
            "scale": scale, "nodes": graph["num_nodes"], "edges": graph["num_edges"],
            "train_ids": trained["dataset"]["num_train"], "system": system,
            "sample_ms": sampled["ms_per_batch"], "sampled_edges_per_s": sampled["edges_per_s"],
            "loader_batches_per_s": float("nan"),
            "epoch_s": train["epoch_s_extrapolated"] if ours else float("nan"),
            "peak_rss_gb": (disk["memory"]["train"]["peak_rss_bytes"] / 2**30 if ours
                            else float("nan")),
            "test_acc": train["test_acc"] if ours else float("nan"),
            "eval_methods": (f"sampled on {train['eval_ids']} test ids; epoch extrapolated "
                             f"from {train['batches']} steps" if ours else "")})
    return rows


def growth_table(data: pd.DataFrame) -> pd.DataFrame:
    """One row per (dataset, scale, system), readable units, and each cost over the smallest
    products-sim scale's beside the edges' ratio (what growing with the work would give)."""
    products = data[data["dataset"] == DATASET]
    first = products[products["scale"] == products["scale"].min()].set_index("system")
    base = first.loc[data["system"]].reset_index(drop=True).set_axis(data.index)
    return pd.DataFrame({
        "dataset": data["dataset"], "scale": data["scale"], "system": data["system"],
        "features": data["features"],
        "edges (M)": data["edges"] / 1e6, "edges x": data["edges"] / base["edges"],
        "sample ms/batch": data["sample_ms"], "sample x": data["sample_ms"] / base["sample_ms"],
        "loader batches/s": data["loader_batches_per_s"],
        "epoch (s)": data["epoch_s"], "epoch x": data["epoch_s"] / base["epoch_s"],
        "peak RSS (GB)": data["peak_rss_gb"], "test acc": data["test_acc"]})
