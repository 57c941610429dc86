"""02_sampling_speedup, last part: weighted sampling (DGL's prob=...) against uniform.

One `bench weighted-sampling` run on the notebook's dataset and scale: ours and DGL's two
samplers, uniform and under each weight distribution (dgl#7462's half-zero, Pareto(1.5)), on the
same batches. Rows per (weights, sampler): time per batch, its cost over the same sampler's
uniform time, and ours' speedup over it.
"""
from __future__ import annotations

from typing import Any

import pandas as pd

from gnnrepro.bench import weighted_sampling as bench
from gnnrepro.experiments import measurements
from gnnrepro.experiments.params import Params

__all__ = ["NAME", "PARAMETERS", "weighted_sampling"]

NAME = "02_weighted_sampling"
#: The parameters the result depends on (its store key).
PARAMETERS = ("dataset", "scale", "root", "fanouts", "batch_size", "threads", "seed",
              "sampling_batches", "sampling_repeats")


def weighted_sampling(params: Params) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Tidy rows per (weights, sampler): ms_per_batch, ms_p10, ms_p90, cost_vs_uniform (this
    sampler's time over its own uniform time) and fused_speedup (its time over ours). Without
    DGL ours alone, DGL's listed in the metadata's not_run."""
    store = params.store()
    names, missing = measurements.on_this_machine(bench.SAMPLERS, baseline=None)

    def compute() -> tuple[pd.DataFrame, dict[str, Any]]:
        # Ours and DGL's: the key of the run with every sampler stays as it was.
        kwargs = params.sampling_kwargs() | ({"samplers": list(names)} if missing else {})
        result = store.memo("weighted-sampling", kwargs, lambda: bench.measure(**kwargs),
                            params.force)
        samplers = result["samplers"]
        rows = []
        for name, r in samplers.items():
            sampler, weights = name.split("/")
            rows.append({"weights": weights, "sampler": sampler,
                         "ms_per_batch": r["ms_per_batch"], "ms_p10": r["ms_p10"],
                         "ms_p90": r["ms_p90"],
                         "cost_vs_uniform": (r["ms_per_batch"]
                                             / samplers[f"{sampler}/uniform"]["ms_per_batch"]),
                         "fused_speedup": (r["ms_per_batch"]
                                           / samplers[f"fused/{weights}"]["ms_per_batch"])})
        meta = {"peers_not_run": result.get("peers_not_run", {}),
                "settings": result["params"], "not_run": missing}
        return pd.DataFrame(rows), meta

    return store.cached(NAME, measurements.result_key(params, PARAMETERS), compute,
                        params.force, redraw=params.redraw)
