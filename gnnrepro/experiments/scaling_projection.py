"""04_scaling's projection panel (issue 49 item 4): epochs on 2, 4 and 8 GPUs projected from
measured parts (gnnrepro.distributed.projection), and the same method checked against CPU-rank
runs measured on the CPU machine. Both come from stored results of
benchmarks/scaling_projection.py: the CPU check from benchmarks/results/
scaling-projection-cpu.json, the GPUs from each machine's latest GPU session
(`--steps ranks,projection`). A projected epoch is never a measurement: every row says which it
is, and ratios are over our reference pipeline, never beside the paper's (over DGL's)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from gnnrepro.experiments.gpu_results import RESULTS, GpuSession

__all__ = ["CPU_CHECK", "COLUMNS", "PROJECTION_CAPTION", "PROJECTION_NOT_MEASURED",
           "projection_label", "projection_rows"]

#: The stored check on CPU ranks (benchmarks/scaling_projection.py --validate).
CPU_CHECK = RESULTS / "scaling-projection-cpu.json"
#: What the GPU panel says where no stored GPU session holds a projection.
PROJECTION_NOT_MEASURED = ("GPUs: not measured. A GPU machine measures the parts: make "
                           "gpu-session GPU_SESSION_ARGS=\"--steps ranks,projection\"")
PROJECTION_CAPTION = ("Epochs on k ranks projected from measured parts, beside the measured "
                      "ones where k ranks ran (stored results of "
                      "benchmarks/scaling_projection.py); speedups over our reference.")
COLUMNS = ["source", "pipeline", "world_size", "cores_per_rank", "kind", "epoch_s", "error",
           "speedup_vs_reference", "bound_by"]


def _rows(source: str, result: dict[str, Any]) -> list[dict[str, Any]]:
    """A stored projection's rows: per (pipeline, k) the projected epoch, and the measured one
    beside it where k ranks ran; the speedup over the reference pipeline at the same k and of
    the same kind."""
    rows = []
    cores = result.get("parts", {}).get("cores")  # the machine's: k ranks share them
    for r in result["rows"]:
        common = {"source": source, "pipeline": r["pipeline"], "world_size": r["world_size"],
                  "cores_per_rank": cores / r["world_size"] if cores else None}
        rows.append({**common, "kind": "projected", "epoch_s": r["epoch_s"],
                     "error": r.get("error"), "bound_by": r.get("bound_by")})
        if r.get("measured_epoch_s") is not None:
            rows.append({**common, "kind": "measured", "epoch_s": r["measured_epoch_s"],
                         "error": None, "bound_by": None})
    reference = {(r["kind"], r["world_size"]): r["epoch_s"] for r in rows
                 if r["pipeline"] == "reference"}
    for r in rows:
        base = reference.get((r["kind"], r["world_size"]))
        r["speedup_vs_reference"] = base / r["epoch_s"] if base else None
    return rows


def _cpu_label(result: dict[str, Any]) -> str:
    env = result.get("env", {})
    params = result["params"]
    return (f"CPU ranks, {env.get('cpu', 'CPU')} ({env.get('cpu_count', '?')} cores), "
            f"{params['dataset']} {params['scale']}")


def projection_rows(sessions: list[GpuSession], cpu_check: Path | None = None
                    ) -> pd.DataFrame:
    """COLUMNS per (source, pipeline, world size, kind): the CPU check (if stored) and every
    GPU session holding a scaling-projection result, each source labelled with its machine."""
    rows: list[dict[str, Any]] = []
    path = CPU_CHECK if cpu_check is None else cpu_check
    if path.exists():
        result = json.loads(path.read_text())
        rows += _rows(_cpu_label(result), result)
    for s in sessions:
        result = s.result("scaling-projection")
        if result is not None:
            params = result["params"]
            rows += _rows(f"GPUs: {s.label}, {params['dataset']} {params['scale']}", result)
    return pd.DataFrame(rows, columns=COLUMNS)


def projection_label(rows: pd.DataFrame) -> str:
    """The figure's corner: the sources its rows came from, or that nothing is stored."""
    sources = list(dict.fromkeys(rows["source"]))
    return "; ".join(sources) if sources else "no stored projection"
