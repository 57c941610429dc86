"""02_sampling_speedup, temporal part: temporal sampling (PyG's edge_time, each seed on its own
at its time) against uniform and disjoint sampling.

One `bench temporal-sampling` run on the notebook's dataset and scale (its edges given random
times): uniform, disjoint without times, temporal with every edge a candidate, with seeds at
random times, and "last", on the same batches. Rows per contender: time per batch, its cost
over uniform sampling, edges and sources per batch.
"""
from __future__ import annotations

from typing import Any

import pandas as pd

from gnnrepro.bench import temporal_sampling as bench
from gnnrepro.experiments.params import Params

__all__ = ["NAME", "PARAMETERS", "temporal_sampling"]

NAME = "02_temporal_sampling"
#: The parameters the result depends on (its store key).
PARAMETERS = ("dataset", "scale", "root", "fanouts", "batch_size", "threads", "seed",
              "sampling_batches", "sampling_repeats")


def temporal_sampling(params: Params) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Tidy rows per contender: ms_per_batch, ms_p10, ms_p90, cost_vs_uniform, edges,
    sources."""
    store = params.store()

    def compute() -> tuple[pd.DataFrame, dict[str, Any]]:
        kwargs = params.sampling_kwargs()
        result = store.memo("temporal-sampling", kwargs, lambda: bench.measure(**kwargs),
                            params.force)
        samplers = result["samplers"]
        uniform = samplers["uniform"]["ms_per_batch"]
        rows = [{"sampler": name, "ms_per_batch": r["ms_per_batch"], "ms_p10": r["ms_p10"],
                 "ms_p90": r["ms_p90"], "cost_vs_uniform": r["ms_per_batch"] / uniform,
                 "edges": r["edges"], "sources": r["sources"]}
                for name, r in samplers.items()]
        meta = {"peers_not_run": result.get("peers_not_run", {}), "settings": result["params"]}
        return pd.DataFrame(rows), meta

    return store.cached(NAME, params.key(PARAMETERS), compute, params.force,
                        redraw=params.redraw)
