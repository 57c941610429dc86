"""10_link_prediction: link prediction trained on DGL's edge-prediction DataLoader and on ours,
the same model and negatives scheme, side by side (`bench link-prediction` on citation-sim at
link_scale): per seed and pipeline the median time a step and the validation and test MRR."""
from __future__ import annotations

from typing import Any

import pandas as pd

from gnnrepro.bench import link_prediction as bench
from gnnrepro.experiments.params import Params

__all__ = ["NAME", "PARAMETERS", "link_prediction"]

NAME = "10_link_prediction"
#: The parameters the result depends on (its store key).
PARAMETERS = ("root", "batch_size", "threads", "link_scale", "link_steps", "link_seeds",
              "link_hidden")
#: GraphSAGE's fanouts here, input layer first (two layers: the node notebooks' three-layer
#: fanouts train far slower per step without a better MRR at these step counts).
FANOUTS = [15, 10]


def link_prediction(params: Params) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Tidy rows per (pipeline, seed): s_per_step, val_mrr, test_mrr, test_hits@10, and
    speedup (DGL's time a step over this one's, same seed)."""
    store = params.store()

    def compute() -> tuple[pd.DataFrame, dict[str, Any]]:
        kwargs = {"dataset": "citation-sim", "scale": params.link_scale, "root": params.root,
                  "fanouts": FANOUTS, "batch_size": params.batch_size,
                  "hidden": params.link_hidden, "steps": params.link_steps,
                  "seeds": list(range(params.link_seeds)), "threads": params.threads}
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

    return store.cached(NAME, params.key(PARAMETERS), compute, params.force,
                        redraw=params.redraw)
