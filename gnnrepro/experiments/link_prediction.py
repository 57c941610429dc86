"""10_link_prediction: link prediction trained on DGL's edge-prediction DataLoader and on ours,
the same model and negatives scheme, side by side (`bench link-prediction` on citation-sim at
link_scale; and on a typed graph, `hetero_dataset`'s "cites" relation at `hetero_scale` with
R-GCN): per seed and pipeline the median time a step and the validation and test MRR."""
from __future__ import annotations

from typing import Any

import pandas as pd

from gnnrepro.bench import link_prediction as bench
from gnnrepro.experiments.params import Params

__all__ = ["NAME", "PARAMETERS", "TYPED_NAME", "TYPED_PARAMETERS", "link_prediction",
           "typed_link_prediction"]

NAME = "10_link_prediction"
#: The parameters the result depends on (its store key).
PARAMETERS = ("root", "batch_size", "threads", "link_scale", "link_steps", "link_seeds",
              "link_hidden")
TYPED_NAME = "10_link_prediction_typed"
TYPED_PARAMETERS = ("root", "batch_size", "threads", "hetero_dataset", "hetero_scale",
                    "link_steps", "link_seeds", "link_hidden")
#: The typed run's relation: papers citing papers in mag-sim, igbh-sim and ogbn-mag alike.
TYPED_RELATION = "cites"
#: GraphSAGE's fanouts here, input layer first (two layers: the node notebooks' three-layer
#: fanouts train far slower per step without a better MRR at these step counts).
FANOUTS = [15, 10]


def link_prediction(params: Params) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Tidy rows per (pipeline, seed): s_per_step, val_mrr, test_mrr, test_hits@10, and
    speedup (DGL's time a step over this one's, same seed)."""
    return _measured(params, NAME, PARAMETERS, {
        "dataset": "citation-sim", "scale": params.link_scale})


def typed_link_prediction(params: Params) -> tuple[pd.DataFrame, dict[str, Any]]:
    """link_prediction's rows for the "cites" relation of `hetero_dataset` at `hetero_scale`
    (R-GCN on both pipelines; DGL's heterogeneous edge-prediction DataLoader), evaluated on
    sampled blocks (R-GCN's learnt embeddings have no layer-wise pass of DGL's)."""
    return _measured(params, TYPED_NAME, TYPED_PARAMETERS, {
        "dataset": params.hetero_dataset, "scale": params.hetero_scale,
        "relation": TYPED_RELATION, "eval_method": "sampled"})


def _measured(params: Params, name: str, parameters: tuple[str, ...],
              data: dict[str, Any]) -> tuple[pd.DataFrame, dict[str, Any]]:
    """`bench link-prediction` on `data` (dataset, scale, ...) with the notebook's settings,
    as tidy rows, stored under `name`."""
    store = params.store()

    def compute() -> tuple[pd.DataFrame, dict[str, Any]]:
        kwargs = {**data, "root": params.root, "fanouts": FANOUTS,
                  "batch_size": params.batch_size, "hidden": params.link_hidden,
                  "steps": params.link_steps, "seeds": list(range(params.link_seeds)),
                  "threads": params.threads}
        result = store.memo("link-prediction", kwargs, lambda: bench.measure(**kwargs),
                            params.force)
        runs = result["runs"]
        rows = []
        for pipeline, by_seed in runs.items():
            for seed, r in by_seed.items():
                dgl = runs.get("dgl", {}).get(seed)
                rows.append({"pipeline": pipeline, "seed": int(seed),
                             "s_per_step": r["s_per_step"], "val_mrr": r["val"]["mrr"],
                             "test_mrr": r["test"]["mrr"],
                             "test_hits@10": r["test"]["hits@10"],
                             "speedup": (dgl["s_per_step"] / r["s_per_step"]
                                         if dgl else float("nan"))})
        return pd.DataFrame(rows), {"settings": result["params"],
                                    "ratios": result.get("ratios", {})}

    return store.cached(name, params.key(parameters), compute, params.force,
                        redraw=params.redraw)
