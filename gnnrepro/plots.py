"""The paper's figures in one style: large enough type for print, colour-blind-safe colours
(Okabe-Ito) that stay distinct in greyscale through value labels, axes labelled with units,
and the paper's values marked in black, dashed.

Every function takes an experiment's tidy data (gnnrepro.experiments) and returns a Figure;
`save` writes it as .png and .pdf atomically. Nothing here picks a backend, so the functions
work inline in Jupyter and headless (Agg).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from gnnrepro.atomic import write_atomic
from gnnrepro.experiments.labels import figure_label
from gnnrepro.experiments.params import Params

__all__ = ["STYLE", "end_to_end_bars", "gpu_bars", "growth_lines", "partitioned_lines", "pipeline_alone_bars",
           "save", "save_figure", "scaling_lines", "sensitivity_bars", "speedup_bars",
           "stage_bars", "storage_lines", "timeline"]

_OKABE_ITO = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#56B4E9", "#CC79A7", "#F0E442",
              "#000000", "#999999"]
PIPELINE_COLORS = {"dgl": "#D55E00", "dgl-native": "#CC79A7", "graphbolt": "#009E73",
                   "pyg": "#F0E442", "reference": "#999999", "fused": "#56B4E9",
                   "fused+pinned": "#0072B2"}
SAMPLER_COLORS = {"dgl-unfused": "#D55E00", "dgl-fused": "#E69F00", "graphbolt": "#009E73",
                  "pyg": "#F0E442", "reference": "#999999",
                  "fused": "#0072B2"}
STAGE_COLORS = {"sample": "#0072B2", "extract": "#E69F00", "copy": "#F0E442",
                "forward": "#009E73", "backward": "#CC79A7", "wait": "#BBBBBB"}
PAPER = {"color": "black", "linestyle": "--", "linewidth": 1.3}

STYLE = {
    "figure.figsize": (6.4, 3.6),
    "figure.dpi": 110,
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.fontsize": 8.5,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "axes.prop_cycle": mpl.cycler(color=_OKABE_ITO),
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "axes.grid.axis": "y",
    "axes.axisbelow": True,
    "grid.alpha": 0.35,
    "legend.frameon": False,
    "pdf.fonttype": 42,  # TrueType in the PDF: text stays text in print and in editors
    "ps.fonttype": 42,
}


def _subplots(ncols: int = 1, nrows: int = 1, **kwargs) -> tuple[Figure, np.ndarray]:
    with mpl.rc_context(STYLE):
        fig, axes = plt.subplots(nrows, ncols, layout="constrained", squeeze=False, **kwargs)
    return fig, axes.ravel()


def _stage_color(stage: str) -> str:
    return STAGE_COLORS.get(stage, "#777777")


def _mark_paper(ax: Axes, value: float, text: str) -> None:
    """The paper's value as a dashed black horizontal line with its label."""
    ax.axhline(value, **PAPER, label=text, zorder=3)


def _note(ax: Axes, text: str) -> None:
    """A message in the middle of an empty panel (what was not run, and why)."""
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", wrap=True,
            fontsize=9, color="#444444")


#: Bars whose values span more than this ratio are drawn on a log scale (a peer 100x slower
#: would otherwise flatten every other bar).
LOG_SCALE_RATIO = 30.0


def _log_scale_if_wide(ax: Axes, values: Sequence[float]) -> None:
    """A log y-axis when the positive finite `values` span more than LOG_SCALE_RATIO."""
    positive = [v for v in values if v > 0 and np.isfinite(v)]
    if positive and max(positive) / min(positive) > LOG_SCALE_RATIO:
        ax.set_yscale("log")


def _grouped_bars(ax: Axes, groups: Sequence[str], series: dict[str, Sequence[float]],
                  colors: dict[str, str], fmt: str) -> None:
    """Bars of each series side by side within each group, each labelled with its value."""
    width = 0.8 / max(len(series), 1)
    x = np.arange(len(groups))
    for i, (name, values) in enumerate(series.items()):
        bars = ax.bar(x + (i - (len(series) - 1) / 2) * width, values, width, label=name,
                      color=colors.get(name), edgecolor="white", linewidth=0.5)
        ax.bar_label(bars, fmt=fmt, fontsize=7.5, padding=1)
    ax.set_xticks(x, groups)
    _log_scale_if_wide(ax, [v for values in series.values() for v in values])


def stage_bars(data: pd.DataFrame) -> Figure:
    """Stacked bars of each pipeline's per-epoch stage work (01_stage_breakdown's data), the
    epoch time as a black tick: work above the tick ran overlapped with other work."""
    fig, (ax,) = _subplots()
    pipelines = list(dict.fromkeys(data["pipeline"]))
    x = np.arange(len(pipelines))
    bottom = np.zeros(len(pipelines))
    for stage in dict.fromkeys(data["stage"]):
        work = (data[data["stage"] == stage].set_index("pipeline")["work_s"]
                .reindex(pipelines).fillna(0).to_numpy())
        ax.bar(x, work, 0.6, bottom=bottom, label=stage, color=_stage_color(stage),
               edgecolor="white", linewidth=0.5)
        bottom += work
    per_pipeline = data.groupby("pipeline").first().reindex(pipelines)
    ax.scatter(x, per_pipeline["epoch_s"], marker="_", s=900, color="black", linewidths=2,
               label="epoch time", zorder=4)
    front = data[data["stage"].isin(["sample", "extract"])].groupby("pipeline")["share_of_work"]
    for xi, pipeline in enumerate(pipelines):
        ax.annotate(f"{100 * front.sum().get(pipeline, 0):.0f}% sample+extract",
                    (xi, max(bottom[xi], per_pipeline["epoch_s"].iloc[xi])),
                    xytext=(0, 4), textcoords="offset points", ha="center", fontsize=8)
    ax.set_xticks(x, pipelines)
    ax.set_xlabel("pipeline")
    ax.set_ylabel("work per epoch (s)")
    ax.set_title("Where an epoch's time goes")
    ax.margins(y=0.15)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig


def speedup_bars(data: pd.DataFrame, paper_speedup: float) -> Figure:
    """Left: ms per batch of every sampler per dataset. Right: the fused sampler's speedup
    over each other sampler, with the paper's speedup over DGL marked (02_sampling_speedup)."""
    fig, (left, right) = _subplots(ncols=2, figsize=(9.6, 3.8))
    datasets = list(dict.fromkeys(data["dataset"]))
    samplers = list(dict.fromkeys(data["sampler"]))

    def series(column: str, names: list[str]) -> dict[str, list[float]]:
        table = data.pivot(index="dataset", columns="sampler", values=column)
        return {s: table.loc[datasets, s].tolist() for s in names}

    _grouped_bars(left, datasets, series("ms_per_batch", samplers), SAMPLER_COLORS, "%.3g")
    left.set_ylabel("time per batch (ms, median)")
    left.set_title("Sampling time per mini-batch")
    left.legend(fontsize=8)
    others = [s for s in samplers if s != "fused"]
    _grouped_bars(right, datasets, series("fused_speedup", others), SAMPLER_COLORS, "%.2fx")
    right.axhline(1.0, color="#777777", linewidth=0.8)
    _mark_paper(right, paper_speedup, f"paper: {paper_speedup:.2f}x vs DGL")
    right.set_ylabel("fused sampler's speedup (x)")
    right.set_title("Fused sampling vs each sampler")
    right.legend(fontsize=8)
    for ax in (left, right):
        ax.set_xlabel("dataset")
        ax.margins(y=0.15)
    return fig


def gpu_bars(data: pd.DataFrame, category: str, value: str, paper_value: float,
             paper_text: str, ylabel: str, title: str, note: str) -> Figure:
    """Stored GPU results (gnnrepro.experiments.gpu_results): `value` per `category`, bars
    grouped by machine, the paper's value marked; where none is stored the panel says so
    (`data`'s machine column holds NOT_MEASURED and nothing else)."""
    fig, (ax,) = _subplots(figsize=(6.8, 3.6))
    measured = data[data[value].notna()]
    if measured.empty:
        _note(ax, f"{data['machine'].iloc[0] if len(data) else 'GPU: not measured'}\n{note}")
        ax.set_xticks([])
        ax.set_yticks([])
    else:
        machines = list(dict.fromkeys(measured["machine"]))
        names = list(dict.fromkeys(measured[category]))
        table = measured.pivot(index="machine", columns=category, values=value)
        colors = {**SAMPLER_COLORS, **PIPELINE_COLORS}
        _grouped_bars(ax, [m.split(" (")[0] for m in machines],
                      {n: table.loc[machines, n].tolist() for n in names}, colors, "%.3gx")
        ax.axhline(1.0, color="#777777", linewidth=0.8)
        _mark_paper(ax, paper_value, paper_text)
        ax.legend(fontsize=8)
        ax.margins(y=0.15)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    return fig


def _pipeline_pair(data: pd.DataFrame, left: tuple[str, str, str, str],
                   right: tuple[str, str, str, str]) -> tuple[Figure, Axes, Axes]:
    """Two bar panels over the pipelines; each side is (column, label format, y label,
    title). The right one is a speedup: a line marks 1x."""
    fig, axes = _subplots(ncols=2, figsize=(9.0, 3.6))
    pipelines = data["pipeline"].tolist()
    colors = [PIPELINE_COLORS.get(p) for p in pipelines]
    for ax, (column, fmt, ylabel, title) in zip(axes, (left, right)):
        bars = ax.bar(pipelines, data[column], 0.6, color=colors)
        ax.bar_label(bars, fmt=fmt, fontsize=8, padding=1)
        _log_scale_if_wide(ax, data[column].tolist())
        ax.set_xlabel("pipeline")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.margins(y=0.15)
    axes[1].axhline(1.0, color="#777777", linewidth=0.8)
    return fig, axes[0], axes[1]


def end_to_end_bars(data: pd.DataFrame, paper_speedup: float) -> Figure:
    """Left: epoch time per pipeline. Right: speedup over DGL, the paper's marked
    (03_end_to_end)."""
    fig, _, right = _pipeline_pair(
        data, ("epoch_s", "%.3g", "epoch time (s, median)", "Training epoch time"),
        ("speedup_vs_dgl", "%.2fx", "speedup over dgl (x)", "End-to-end speedup"))
    _mark_paper(right, paper_speedup, f"paper: {paper_speedup:.2f}x")
    right.legend(loc="upper left")
    return fig


def pipeline_alone_bars(data: pd.DataFrame, step_note: str) -> Figure:
    """Left: batches per second each pipeline delivers with no model (or a stand-in step).
    Right: speedup over DGL's DataLoader (03_end_to_end, "the pipeline alone")."""
    fig, left, _ = _pipeline_pair(
        data, ("batches_per_s", "%.1f", "batches / s delivered (median)", "The pipeline alone"),
        ("speedup_vs_dgl", "%.2fx", "speedup over dgl's loader (x)", "Loader speedup"))
    _note(left, step_note)
    return fig


def _lane_order(lanes: pd.Series) -> list[str]:
    """Producers (loader, workers, streams) first, in order of appearance; the trainer last."""
    seen = list(dict.fromkeys(lanes))
    return sorted(seen, key=lambda lane: lane == "trainer")  # stable: order kept otherwise


def timeline(spans: pd.DataFrame) -> Figure:
    """Each pipeline's first batches as bars over time on one time axis, one row per lane
    (loader, workers, copy streams, trainer), coloured by stage: bars on different lanes at
    the same time ran at once (03_end_to_end's timeline)."""
    pipelines = list(dict.fromkeys(spans["pipeline"])) or ["(none)"]
    lanes_per = {p: _lane_order(spans.loc[spans["pipeline"] == p, "lane"]) for p in pipelines}
    heights = [max(len(lanes), 1) for lanes in lanes_per.values()]
    fig, axes = _subplots(nrows=len(pipelines), figsize=(9.0, 1.0 + 0.45 * sum(heights)),
                          sharex=True, gridspec_kw={"height_ratios": heights})
    if spans.empty:
        _note(axes[0], "no timeline recorded (timeline_batches is 0)")
        return fig
    stages = list(dict.fromkeys(spans["stage"]))
    for ax, pipeline in zip(axes, pipelines):
        lanes = lanes_per[pipeline]
        mine = spans[spans["pipeline"] == pipeline]
        for y, lane in enumerate(lanes):
            for stage, group in mine[mine["lane"] == lane].groupby("stage", sort=False):
                ax.broken_barh(list(zip(group["start_s"], group["end_s"] - group["start_s"])),
                               (y - 0.35, 0.7), facecolors=_stage_color(stage),
                               edgecolor="white", linewidth=0.3)
        ax.set_yticks(range(len(lanes)), lanes)
        ax.set_ylim(len(lanes) - 0.5, -0.5)
        ax.set_title(pipeline, loc="left", fontsize=10)
        ax.grid(axis="x", alpha=0.35)
        ax.grid(axis="y", visible=False)
    axes[-1].set_xlabel("time since the pipeline's first span (s)")
    handles = [Patch(color=_stage_color(s), label=s) for s in stages]
    fig.legend(handles=handles, loc="outside upper center", ncols=len(stages))
    return fig


def scaling_lines(data: pd.DataFrame, paper_speedups: dict[int, float],
                  ranks_are: str = "GPUs") -> Figure:
    """Left: epoch time vs world size per pipeline. Right: speedup over DGL per world size
    with the paper's marked; world sizes not run are named with the reason (04_scaling).
    `ranks_are` names what a rank is, for the axis label."""
    fig, (left, right) = _subplots(ncols=2, figsize=(9.0, 3.8))
    sizes = sorted(data["world_size"].unique())
    ran = data[data["status"] == "run"]
    for pipeline, group in ran.groupby("pipeline", sort=False):
        group = group.sort_values("world_size")
        left.plot(group["world_size"], group["epoch_s"], marker="o", label=pipeline,
                  color=PIPELINE_COLORS.get(pipeline))
        if pipeline != "dgl":
            right.plot(group["world_size"], group["speedup_vs_dgl"], marker="o",
                       label=f"{pipeline} (measured)", color=PIPELINE_COLORS.get(pipeline))
    paper_sizes = sorted(paper_speedups)
    right.plot(paper_sizes, [paper_speedups[s] for s in paper_sizes], marker="x",
               markersize=8, label="paper", **PAPER)
    right.axhline(1.0, color="#777777", linewidth=0.8)
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(set(sizes) | set(paper_sizes)),
                      [str(s) for s in sorted(set(sizes) | set(paper_sizes))])
        ax.minorticks_off()
        ax.set_xlabel(f"world size ({ranks_are})")
    left.set_ylabel("epoch time (s, median)")
    left.set_title("Epoch time vs world size")
    right.set_ylabel("speedup over dgl (x)")
    right.set_title("Speedup at each world size")
    right.legend(fontsize=8)
    missing = data[data["status"] != "run"].drop_duplicates("world_size")
    if ran.empty:
        reasons = "; ".join(dict.fromkeys(missing["reason"].astype(str)))
        _note(left, f"not run: {reasons}")
    else:
        left.legend(fontsize=8)
        if not missing.empty:  # below the panels, outside the layout, wrapped to the width
            fig.text(0.01, -0.02, "not run: " + "; ".join(
                f"{s} ({r})" for s, r in zip(missing["world_size"], missing["reason"])),
                va="top", fontsize=7.5, color="#444444", wrap=True)
    return fig


def growth_lines(data: pd.DataFrame) -> Figure:
    """Four panels against the graph's edges (log-log), ours and DGL's (08_scale_growth):
    sampling time per batch (the same work per batch at every scale: a rising line is cache
    and memory cost), the pipeline alone in batches/s, the epoch time and the peak memory, the
    last two beside a dashed line growing as the edges do (from ours at the smallest scale)."""
    fig, axes = _subplots(ncols=4, figsize=(13.0, 3.4))
    panels = [("sample_ms", "sampling (ms per batch)", False),
              ("loader_batches_per_s", "pipeline alone (batches/s)", False),
              ("epoch_s", "epoch (s)", True), ("peak_rss_gb", "peak memory (GB)", True)]
    colors = {"ours": PIPELINE_COLORS["fused+pinned"], "dgl": PIPELINE_COLORS["dgl"]}
    for ax, (column, label, with_work) in zip(axes, panels):
        for system, group in data.groupby("system", sort=False):
            group = group.sort_values("edges")
            ax.plot(group["edges"], group[column], marker="o", label=system,
                    color=colors.get(system))
        if with_work:
            ours = data[data["system"] == "ours"].sort_values("edges")
            first = ours.iloc[0]
            ax.plot(ours["edges"], first[column] * ours["edges"] / first["edges"],
                    label="grows as the edges", **{**PAPER, "color": "#777777"})
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("edges")
        ax.set_title(label, fontsize=10)
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
            _note(ax, f"not run:\n{reasons}" if reasons else "nothing swept")
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
    for system, group in ran.groupby("system", sort=False):
        group = group.sort_values("machines")
        left.plot(group["machines"], group["epoch_s"], marker="o", label=system,
                  color=colors.get(system))
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
    left.set_ylabel("epoch time (s, median)")
    left.set_title("Epoch time vs machines")
    right.set_ylabel("MB sent per batch by a rank")
    right.set_title("Traffic vs machines")
    missing = data[data["status"] != "run"]
    if not missing.empty:
        fig.text(0.01, -0.02, "not run: " + "; ".join(
            f"{s}, {m} machines ({r})" for s, m, r in zip(missing["system"],
                                                         missing["machines"],
                                                         missing["reason"])),
                 va="top", fontsize=7.5, color="#444444", wrap=True)
    return fig


STORE_COLORS = {"memory": "#009E73", "disk": "#0072B2", "mmap": "#D55E00", "lmdb": "#CC79A7",
                "mmap-random": "#E69F00"}


def storage_lines(data: pd.DataFrame, budget: float, ceiling_rows_per_s: float | None,
                  gids_speedup: float) -> Figure:
    """Left: rows/s per store (the disk store per memory budget, the others as lines) and the
    device's ceiling at one request per row. Right: end-to-end epoch time per store, the
    disk store's at `budget`, with its speedup over mmap beside GIDS's (06_storage)."""
    fig, (left, right) = _subplots(ncols=2, figsize=(9.0, 3.6))
    ok = data[data["error"].isna()] if "error" in data else data
    disk = ok[ok["store"] == "disk"].sort_values("budget")
    left.plot(disk["budget"] * 100, disk["rows_per_s"] / 1e6, marker="o",
              color=STORE_COLORS["disk"], label="disk (hot + cache budget)")
    for name in ("memory", "mmap", "lmdb"):
        row = ok[ok["store"] == name]
        if len(row):
            left.axhline(float(row["rows_per_s"].iloc[0]) / 1e6, color=STORE_COLORS[name],
                         linestyle=":" if name == "memory" else "-", label=name)
    if ceiling_rows_per_s:
        left.axhline(ceiling_rows_per_s / 1e6, **PAPER,
                     label="device: 1 random read per row (fio)")
    left.set_yscale("log")
    left.set_xlabel("hot set + cache (% of the feature file)")
    left.set_ylabel("M rows/s (log)")
    left.set_title("Gather throughput, memory capped")
    left.legend(loc="best")
    bars = ok[(ok["store"] != "disk") | (ok["budget"] == budget)].dropna(subset=["epoch_s"])
    if len(bars):
        b = right.bar(bars["store"], bars["epoch_s"], 0.6,
                      color=[STORE_COLORS.get(x) for x in bars["store"]])
        right.bar_label(b, fmt="%.1f", fontsize=8, padding=1)
        right.margins(y=0.15)
        speedup = bars.loc[bars["store"] == "disk", "speedup_vs_mmap"]
        if len(speedup) and pd.notna(speedup.iloc[0]):
            right.set_title(f"Epoch time (disk: {float(speedup.iloc[0]):.1f}x mmap's rows/s; "
                            f"GIDS: {gids_speedup:.0f}x)", fontsize=9)
    else:
        _note(right, "no end-to-end epoch was run")
    right.set_ylabel("epoch time (s)")
    right.set_xlabel("feature store")
    return fig


def disk_training_bars(data: pd.DataFrame, table_vs_memory: float,
                       gids_speedup: float) -> Figure:
    """Left: gather rows/s per store (log), the disk store's ratio to mmap beside GIDS's.
    Right: seconds per training step per store (log; "> x": a lower bound, the step was not
    run), stores not run noted (06_storage, larger than memory)."""
    fig, (left, right) = _subplots(ncols=2, figsize=(9.0, 3.6))
    ok = data[data["error"].isna()]
    colors = [STORE_COLORS.get(x) for x in ok["store"]]
    for ax, column, label in ((left, "rows_per_s", "rows gathered / s (log)"),
                              (right, "batch_s", "seconds per training step (log)")):
        bars = ax.bar(ok["store"], ok[column], 0.6, color=colors)
        run = ok["step_run"] if column == "batch_s" else [True] * len(ok)
        ax.bar_label(bars, labels=[f"{v:.3g}" if r else f"> {v:.3g}"
                                   for v, r in zip(ok[column], run)], fontsize=8, padding=1)
        ax.set_yscale("log")
        ax.set_ylabel(label)
        ax.set_xlabel("feature store")
        ax.margins(y=0.2)
    ratio = ok.loc[ok["store"] == "disk", "gather_vs_mmap"]
    title = f"Features {table_vs_memory:.3g}x memory"
    if len(ratio) and pd.notna(ratio.iloc[0]):
        title += f": disk {float(ratio.iloc[0]):.3g}x mmap (GIDS: {gids_speedup:.0f}x)"
    left.set_title(title, fontsize=9)
    right.set_title("Training steps (GraphSAGE 10,5,5, batch 1024)", fontsize=9)
    missing = data[data["error"].notna()]
    if len(missing):
        _note(right, "not run: " + ", ".join(missing["store"]))
    return fig


_LABEL_GID = "gnnrepro-figure-label"


def save(fig: Figure, stem: Path | str, label: str | None = None) -> list[Path]:
    """Write `fig` to stem.png (200 dpi) and stem.pdf (vector), each atomically; no creation
    date in the PDF, so an unchanged figure gives an unchanged file. `label` (what the figure
    shows and where it was measured: gnnrepro.experiments.figure_label) goes in the bottom
    right corner."""
    stem = Path(stem)
    if label:  # below everything (tight bounding box grows to hold it); one per figure
        for text in [t for t in fig.texts if t.get_gid() == _LABEL_GID]:
            text.remove()
        fig.text(0.995, 0.0, label, ha="right", va="top", fontsize=6, color="0.35",
                 gid=_LABEL_GID)
    paths = []
    for fmt, options in (("png", {"dpi": 200}), ("pdf", {"metadata": {"CreationDate": None}})):
        path = stem.with_name(f"{stem.name}.{fmt}")
        write_atomic(path, lambda tmp, f=fmt, o=options: fig.savefig(
            tmp, format=f, bbox_inches="tight", **o))
        paths.append(path)
    return paths


def save_figure(fig: Figure, params: Params, record: Mapping[str, Any], stem: str,
                scales: Sequence[float] | None = None, dataset: str | None = None) -> list[Path]:
    """A notebook's figure: params.figures_dir/stem.{png,pdf} (beside its tables), labelled
    by gnnrepro.experiments.figure_label(params, record, scales, dataset)."""
    return save(fig, params.figures_dir / stem, figure_label(params, record, scales, dataset))
