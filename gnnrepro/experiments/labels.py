"""The line in a figure's corner that says what it shows: dataset, scale, machine, date, commit.

A figure copied out of its folder (into a slide, a paper, an issue) must still say that it came
from a 0.002-scale smoke run on a 2-core VM, not from the paper's hardware. The machine and date
come from the stored result's record, so a figure redrawn from a reused result names the
machine that measured it, not the one that drew it; a redraw (make figures REDRAW=1) adds
the commit whose plotting code drew it.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gnnrepro.env import environment
from gnnrepro.experiments.params import Params

__all__ = ["figure_label"]


def figure_label(params: Params, record: Mapping[str, Any],
                 scales: Sequence[float] | None = None, dataset: str | None = None) -> str:
    """'products-sim scale 0.05 · AMD EPYC (2 cores) · 2026-11-25 · 2d6705c' for a result's
    record (Store.cached's). A figure of other data than the parameters' names it: `dataset`
    (default products-sim when `scales` is given) at `scales` (08_scale_growth: products-sim
    at growth_scales; 06's larger-than-memory part: igb-sim at disk_training_scale), or
    `dataset` alone where it has no scale (09_heterogeneous on ogbn-mag)."""
    env = record.get("env") or environment()
    if scales is not None:
        data = f"{dataset or 'products-sim'} scale " + ", ".join(f"{s:g}" for s in scales)
    elif dataset is not None:
        data = dataset
    elif params.dataset == "products-sim":
        data = f"products-sim scale {params.scale:g}"
    else:
        data = params.dataset
    machine = f"{env.get('cpu') or 'unknown CPU'} ({env.get('cpu_count')} cores)"
    if env.get("gpu"):
        machine += f", {env.get('gpu_count', 1)}x {env['gpu']}"
    parts = [data, machine]
    created = record.get("created") or env.get("timestamp")
    if created:
        parts.append(str(created)[:10])
    commit = (record.get("code") or {}).get("git_commit") or env.get("git_commit")
    if commit:
        parts.append(str(commit)[:7])
    redrawn_by = (record.get("redrawn_by") or {}).get("git_commit")
    if redrawn_by:
        parts.append(f"drawn by {str(redrawn_by)[:7]}")
    return " · ".join(parts)

