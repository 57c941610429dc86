"""02_sampling_speedup: DGL's two samplers, the reference and the fused sampler per dataset,
with the fused sampler's speedup beside the paper's, and the peers (GraphBolt, PyG) where
their environments are set up (listed as not run otherwise)."""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd
from tqdm import tqdm

from gnnrepro.bench.sampling_speed import SAMPLERS
from gnnrepro.experiments import measurements, paper
from gnnrepro.experiments.params import Params
from gnnrepro.experiments.tables import with_not_run

__all__ = ["NAME", "sampling_speedup", "speedup_table"]

NAME = "02_sampling_speedup"
#: The parameters the result depends on (its store key; the notebook lists them first).
PARAMETERS = ("dataset", "compare_datasets", "scale", "root", "fanouts", "batch_size", "threads",
        "seed", "sampling_batches", "sampling_repeats", "peers")


def sampling_speedup(params: Params) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Tidy rows per (dataset, sampler): ms_per_batch (median), ms_p10, ms_p90, edges_per_s,
    input_nodes, fused_speedup (this sampler's time / the fused sampler's) and paper_speedup
    (on dgl-unfused's row: the paper fuses sample_neighbors + to_block); the peers that ran
    follow. The metadata's peers_not_run says why the others did not, and not_run why DGL's
    samplers did not (a machine without DGL)."""
    store = params.store()
    names, missing = measurements.on_this_machine(SAMPLERS)

    def compute() -> tuple[pd.DataFrame, dict[str, Any]]:
        rows, datasets, not_run = [], {}, {}
        for dataset in tqdm([params.dataset, *params.compare_datasets], desc=NAME,
                            unit="dataset"):
            result = measurements.sampling_run(params, store, dataset, names)
            samplers = result["samplers"]
            fused_ms = samplers["fused"]["ms_per_batch"]
            for sampler in [*names, *result.get("peers", {})]:
                r = samplers[sampler]
                rows.append({"dataset": dataset, "sampler": sampler,
                             "ms_per_batch": r["ms_per_batch"], "ms_p10": r["ms_p10"],
                             "ms_p90": r["ms_p90"], "edges_per_s": r["edges_per_s"],
                             "input_nodes": r["input_nodes"],
                             "fused_speedup": r["ms_per_batch"] / fused_ms,
                             "paper_speedup": (paper.SAMPLING_SPEEDUP if sampler == "dgl-unfused"
                                               else math.nan)})
            datasets[dataset] = {k: result["params"][k]
                                 for k in ("num_nodes", "num_edges", "batches")}
            not_run |= result.get("peers_not_run", {})
        return pd.DataFrame(rows), {"datasets": datasets, "peers_not_run": not_run,
                                    "not_run": missing}

    return store.cached(NAME, measurements.result_key(params, PARAMETERS), compute,
                        params.force, redraw=params.redraw)


def speedup_table(data: pd.DataFrame, not_run: Mapping[str, str] | None = None
                  ) -> pd.DataFrame:
    """One row per (dataset, sampler): time per batch and the fused sampler's speedup over it,
    beside the paper's speedup over DGL; then `not_run`'s rows."""
    return with_not_run(pd.DataFrame({
        "dataset": data["dataset"],
        "sampler": data["sampler"],
        "ms/batch": data["ms_per_batch"],
        "p10 (ms)": data["ms_p10"],
        "p90 (ms)": data["ms_p90"],
        "fused's speedup (x)": data["fused_speedup"],
        # the paper's ratio is over DGL's sampler: no column where DGL's did not run
        **({"paper (x)": data["paper_speedup"]} if data["paper_speedup"].notna().any()
           else {}),
    }), "sampler", not_run)
