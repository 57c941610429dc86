"""Figures over a swept quantity: world size (04_scaling), one setting at a time
(05_sensitivity), machines (07_partitioned) and graph size (08_scale_growth).
"""
from __future__ import annotations

import textwrap
from collections.abc import Mapping

import pandas as pd
from matplotlib.figure import Figure

from gnnrepro.plots.style import (PAPER, PIPELINE_COLORS, _footer, _not_run_footer, _note,
                                  _plain_log_ticks, _subplots)

def scaling_lines(data: pd.DataFrame, paper_speedups: dict[int, float],
                  ranks_are: str = "GPUs", not_run: Mapping[str, str] | None = None) -> Figure:
    """Left: epoch time vs world size per pipeline. Right: speedup over DGL per world size
    with the paper's marked (without DGL: over our reference pipeline, the paper's not drawn);
    world sizes and pipelines not run are named with the reason (04_scaling). `ranks_are`
    names what a rank is, for the axis label."""
    baseline = "reference" if "speedup_vs_reference" in data else "dgl"
    fig, (left, right) = _subplots(ncols=2, figsize=(9.0, 3.8))
    sizes = sorted(data["world_size"].unique())
    ran = data[data["status"] == "run"]
    for pipeline, group in ran.groupby("pipeline", sort=False):
        group = group.sort_values("world_size")
        left.plot(group["world_size"], group["epoch_s"], marker="o", label=pipeline,
                  color=PIPELINE_COLORS.get(pipeline))
        if pipeline != baseline:
            right.plot(group["world_size"], group[f"speedup_vs_{baseline}"], marker="o",
                       label=f"{pipeline} (measured)", color=PIPELINE_COLORS.get(pipeline))
    paper_sizes = sorted(paper_speedups) if baseline == "dgl" else []
    if paper_sizes:  # the paper's ratios are over DGL's pipeline
        right.plot(paper_sizes, [paper_speedups[s] for s in paper_sizes], marker="x",
                   markersize=8, label=f"paper ({', '.join(map(str, paper_sizes))} GPUs)",
                   **PAPER)
    right.axhline(1.0, color="#777777", linewidth=0.8)
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(set(sizes) | set(paper_sizes)),
                      [str(s) for s in sorted(set(sizes) | set(paper_sizes))])
        ax.minorticks_off()
        ax.set_xlabel(f"world size ({ranks_are})")
    left.set_ylim(bottom=0)  # from zero: a cropped axis reads a 10% change as a doubling
    right.set_ylim(bottom=0)
    left.set_ylabel("epoch time (s, median)")
    left.set_title("Epoch time vs world size")
    right.set_ylabel(f"speedup over {baseline} (x)")
    right.set_title("Speedup at each world size")
    right.legend(fontsize=8)
    missing = data[data["status"] != "run"].drop_duplicates("world_size")
    if ran.empty:
        reasons = "; ".join(dict.fromkeys(missing["reason"].astype(str)))
        _note(left, f"not run: {reasons}")
        _not_run_footer(fig, not_run)
    else:
        left.legend(fontsize=8)
        sizes_not_run = dict(zip(missing["world_size"].astype(str), missing["reason"]))
        _not_run_footer(fig, (not_run or {}) | sizes_not_run)
    return fig


def growth_lines(data: pd.DataFrame) -> Figure:
    """Four panels against the graph's edges (log-log), ours and DGL's (08_scale_growth):
    sampling time per batch (the same work per batch at every scale: a rising line is cache
    and memory cost), the pipeline alone in batches/s, the epoch time and the peak memory, the
    last two beside a dashed line growing as the edges do (from ours at the smallest scale).
    papers-sim points, another graph with its features on disk, are stars, not joined."""
    fig, axes = _subplots(ncols=4, figsize=(13.0, 3.4))
    panels = [("sample_ms", "sampling (ms per batch)", False),
              ("loader_batches_per_s", "pipeline alone (batches/s)", False),
              ("epoch_s", "epoch (s)", True), ("peak_rss_gb", "peak memory (GB)", True)]
    colors = {"ours": PIPELINE_COLORS["fused+pinned"], "dgl": PIPELINE_COLORS["dgl"]}
    for ax, (column, label, with_work) in zip(axes, panels):
        for (system, dataset), group in data.groupby(["system", "dataset"], sort=False):
            group = group.sort_values("edges").dropna(subset=[column])
            if group.empty:
                continue
            other = dataset != "products-sim"
            ax.plot(group["edges"], group[column], marker="*" if other else "o",
                    markersize=11 if other else 6, linestyle="none" if other else "-",
                    label=f"{system}, {dataset}" + (f" ({group['features'].iloc[0]})"
                                                     if other else ""),
                    color=colors.get(system))
        if with_work:
            ours = data[data["system"] == "ours"].sort_values("edges")
            first = ours[ours["dataset"] == "products-sim"].iloc[0]  # growth_table's base
            ax.plot(ours["edges"], first[column] * ours["edges"] / first["edges"],
                    label="grows as the edges", **{**PAPER, "color": "#777777"})
        ax.set_xscale("log")
        ax.set_yscale("log")
        _plain_log_ticks(ax)
        ax.set_xlabel("edges")
        ax.set_title(label, fontsize=10)
    # Each point's scale, above it (below the lowest it would sit on the x axis), the first
    # and last aligned inwards so that no label leaves the panel.
    ours = data[data["system"] == "ours"].dropna(subset=["sample_ms"]).sort_values("edges")
    for i, (_, point) in enumerate(ours.iterrows()):
        axes[0].annotate(f"{point['dataset'].removesuffix('-sim')} {point['scale']:g}",
                         (point["edges"], point["sample_ms"]), textcoords="offset points",
                         xytext=(0, 6), ha="left" if i == 0 else "right" if i == len(ours) - 1
                         else "center", fontsize=6.5, color="#444444")
    axes[0].legend(fontsize=8)
    axes[2].legend(fontsize=8)
    return fig


def sensitivity_bars(data: pd.DataFrame) -> Figure:
    """One panel per swept setting, on one epoch-time scale: epoch time at each value, the base
    setting in the darker colour; settings not run are named with the reason (05_sensitivity)."""
    axes_names = list(dict.fromkeys(data["axis"])) or ["(nothing swept)"]
    fig, axes = _subplots(ncols=len(axes_names), figsize=(2.6 * len(axes_names) + 0.8, 3.4),
                          sharey=True)
    for ax, axis in zip(axes, axes_names):
        points = data[data["axis"] == axis]
        ran = points[points["status"] == "run"]
        ax.set_xlabel(axis.replace("_", " "))
        if ran.empty:
            reasons = "; ".join(dict.fromkeys(points["reason"].dropna().astype(str)))
            _note(ax, textwrap.fill(f"not run: {reasons}", 26) if reasons else "nothing swept")
            ax.set_xticks([])
            ax.grid(False)
            continue
        colors = ["#0072B2" if base else "#56B4E9" for base in ran["is_base"]]
        bars = ax.bar(ran["value"].astype(str), ran["epoch_s"], 0.6, color=colors)
        ax.bar_label(bars, fmt="%.2f", fontsize=7.5, padding=1)
        ax.margins(y=0.15)
        ax.tick_params(axis="x", labelrotation=30 if axis == "fanouts" else 0)
    axes[0].set_ylabel("epoch time (s, median)")
    fig.suptitle("Sensitivity of the fused+pinned pipeline (darker bar: base setting)",
                 fontsize=11)
    return fig


def partitioned_lines(data: pd.DataFrame) -> Figure:
    """Left: epoch time vs machines, ours beside DGL. Right: bytes a rank sends per batch
    (sampling, features) vs machines; DGL runs not run are named with the reason
    (07_partitioned)."""
    fig, (left, right) = _subplots(ncols=2, figsize=(9.0, 3.8))
    ran = data[data["status"] == "run"]
    colors = {"ours": PIPELINE_COLORS["fused+pinned"], "dgl": PIPELINE_COLORS["dgl"]}
    names = {"dgl": "DistDGL"}
    for system, group in ran.groupby("system", sort=False):
        group = group.sort_values("machines")
        left.plot(group["machines"], group["epoch_s"], marker="o",
                  label=names.get(system, system), color=colors.get(system))
    ours = ran[ran["system"] == "ours"].sort_values("machines")
    for column, label, color in (("sampling_bytes_per_batch", "sampling", "#0072B2"),
                                 ("feature_bytes_per_batch", "features", "#E69F00")):
        right.plot(ours["machines"], ours[column] / 2**20, marker="o", label=f"ours: {label}",
                   color=color)
    machines = sorted(data["machines"].unique())
    for ax in (left, right):
        ax.set_xticks(machines, [str(m) for m in machines])
        ax.set_xlabel("machines (simulated on one host)")
        ax.legend(fontsize=8)
    left.set_ylim(bottom=0)
    right.set_ylim(bottom=0)
    left.set_ylabel("epoch time (s, median)")
    left.set_title("Epoch time vs machines")
    right.set_ylabel("MB sent per batch by a rank")
    right.set_title("Traffic vs machines (ours; DistDGL's is not counted)", fontsize=9)
    missing = data[data["status"] != "run"]
    if not missing.empty:
        _footer(fig, "not run: " + "; ".join(
            f"{names.get(s, s)}, {m} machines ({r})"
            for s, m, r in zip(missing["system"], missing["machines"], missing["reason"])))
    return fig


def projection_lines(data: pd.DataFrame, gpu_not_measured: str) -> Figure:
    """04_scaling's projection: one panel per source of gnnrepro.experiments.projection_rows
    (the CPU-rank check, each GPU machine), epoch time against world size per pipeline,
    measured solid with filled markers and projected dashed with open ones, each projection
    beside a measurement labelled with its error. Without a GPU source a panel says
    `gpu_not_measured`."""
    sources = list(dict.fromkeys(data["source"]))
    gpu_sources = [s for s in sources if s.startswith("GPUs")]
    panels = sources + ([] if gpu_sources else [None])
    fig, axes = _subplots(ncols=len(panels), figsize=(4.6 * len(panels), 3.9))
    for ax, source in zip(axes, panels):
        if source is None:
            _note(ax, textwrap.fill(gpu_not_measured, 40))
            ax.set_title("GPUs: projected from measured parts")
            ax.set_axis_off()
            continue
        rows = data[data["source"] == source]
        for (pipeline, kind), group in rows.groupby(["pipeline", "kind"], sort=False):
            group = group.sort_values("world_size")
            projected = kind == "projected"
            color = PIPELINE_COLORS.get(pipeline)
            ax.plot(group["world_size"], group["epoch_s"], marker="o", color=color,
                    linestyle="--" if projected else "-",
                    markerfacecolor="white" if projected else color,
                    label=f"{pipeline} ({kind})")
            if projected:
                for _, r in group.iterrows():
                    if pd.notna(r["error"]):
                        ax.annotate(f"{r['error']:+.0%}" if abs(r["error"]) >= 0.005 else "0%", (r["world_size"], r["epoch_s"]),
                                    textcoords="offset points", xytext=(4, 4), fontsize=7,
                                    color=color)
        sizes = sorted(rows["world_size"].unique())
        cores = rows.groupby("world_size")["cores_per_rank"].first()
        ax.set_xscale("log", base=2)
        ax.set_xticks(sizes, [f"{s}\n({cores[s]:g} core{'' if cores[s] == 1 else 's'} each)"
                              if pd.notna(cores[s]) else str(s) for s in sizes])
        ax.minorticks_off()
        ax.set_ylim(bottom=0)
        gpu = source.startswith("GPUs")
        ax.set_xlabel("world size (GPUs; >1 projected)" if gpu else
                      "world size (CPU processes)")
        ax.set_ylabel("epoch time (s)")
        ax.set_title(textwrap.fill(source, 48), fontsize=9)
        ax.legend(fontsize=7)
    _footer(fig, "dashed: projected from measured parts (gnnrepro.distributed.projection); "
                 "labels: projected / measured - 1 where k ranks ran. The paper's multi-GPU "
                 "ratios are over DGL's pipeline: not drawn here.")
    return fig
