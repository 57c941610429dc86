"""Figures that compare pipelines and samplers on one machine: where an epoch's time goes
(01_stage_breakdown), sampling speed (02_sampling_speedup), end to end, the pipeline alone and
its timeline (03_end_to_end), the stored GPU results beside the paper's (02, 03), and all three
on a typed graph (09_heterogeneous).
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from gnnrepro.plots.style import (PIPELINE_COLORS, SAMPLER_COLORS, _grouped_bars,
                                  _log_scale_if_wide, _mark_paper, _not_run_footer, _note,
                                  _stage_color, _subplots)

__all__ = ["end_to_end_bars", "gpu_bars", "heterogeneous_bars", "pipeline_alone_bars",
           "speedup_bars", "stage_bars", "timeline"]


def stage_bars(data: pd.DataFrame, not_run: Mapping[str, str] | None = None) -> Figure:
    """Stacked bars of each pipeline's per-epoch stage work (01_stage_breakdown's data), the
    epoch time as a black tick: work above the tick ran overlapped with other work; what
    `not_run` left out is named under the panel."""
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
    _not_run_footer(fig, not_run)
    return fig


def speedup_bars(data: pd.DataFrame, paper_speedup: float,
                 not_run: Mapping[str, str] | None = None) -> Figure:
    """Left: ms per batch of every sampler per dataset. Right: the fused sampler's speedup
    over each other sampler, with the paper's speedup over DGL marked where DGL's sampler is
    among them (02_sampling_speedup); what `not_run` left out is named under the panels."""
    fig, (left, right) = _subplots(ncols=2, figsize=(9.6, 3.8))
    datasets = list(dict.fromkeys(data["dataset"]))
    samplers = list(dict.fromkeys(data["sampler"]))

    def series(column: str, names: list[str]) -> dict[str, list[float]]:
        table = data.pivot(index="dataset", columns="sampler", values=column)
        return {s: table.loc[datasets, s].tolist() for s in names}

    spread = ({s: (low, high) for s, low, high in zip(
        samplers, series("ms_p10", samplers).values(), series("ms_p90", samplers).values())}
        if {"ms_p10", "ms_p90"} <= set(data) else None)
    _grouped_bars(left, datasets, series("ms_per_batch", samplers), SAMPLER_COLORS, "%.3g",
                  spread)
    left.set_ylabel("time per batch (ms, median; bars: p10-p90)")
    left.set_title("Sampling time per mini-batch")
    left.legend(fontsize=8)
    others = [s for s in samplers if s != "fused"]
    with_dgl = "dgl-unfused" in samplers  # the paper's ratio is over DGL's, not the others
    _grouped_bars(right, datasets, series("fused_speedup", others), SAMPLER_COLORS, "%.2fx",
                  marks=(1.0, paper_speedup) if with_dgl else (1.0,))
    right.axhline(1.0, color="#777777", linewidth=0.8)
    if with_dgl:
        _mark_paper(right, paper_speedup, f"paper: {paper_speedup:.2f}x vs DGL")
    right.set_ylabel("fused sampler's speedup (x)")
    right.set_title("Fused sampling vs each sampler")
    right.legend(fontsize=8)
    for ax in (left, right):
        ax.set_xlabel("dataset")
        ax.margins(y=0.15)
    _not_run_footer(fig, not_run, *([] if with_dgl else [
        f"the paper's {paper_speedup:.2f}x is over DGL's sampler: not drawn"]))
    return fig


def weighted_bars(data: pd.DataFrame) -> Figure:
    """Left: ms per batch of each sampler, uniform and per weight distribution. Right: each
    sampler's weighted time over its own uniform time, the issue's 1.5x bound marked
    (02_sampling_speedup)."""
    fig, (left, right) = _subplots(ncols=2, figsize=(9.6, 3.8))
    kinds = sorted(dict.fromkeys(data["weights"]), key=lambda k: k != "uniform")
    samplers = sorted(dict.fromkeys(data["sampler"]), key=lambda s: s != "fused")

    def series(column: str, groups: list[str]) -> dict[str, list[float]]:
        table = data.pivot(index="weights", columns="sampler", values=column)
        return {s: table.loc[groups, s].tolist() for s in samplers}

    spread = {s: (low, high) for s, low, high in zip(
        samplers, series("ms_p10", kinds).values(), series("ms_p90", kinds).values())}
    _grouped_bars(left, kinds, series("ms_per_batch", kinds), SAMPLER_COLORS, "%.3g", spread)
    left.set_ylabel("time per batch (ms, median; bars: p10-p90)")
    left.set_title("Sampling time per mini-batch")
    weighted = [k for k in kinds if k != "uniform"]
    _grouped_bars(right, weighted, series("cost_vs_uniform", weighted), SAMPLER_COLORS, "%.2fx",
                  marks=(1.0, 1.5))
    right.axhline(1.0, color="#777777", linewidth=0.8)
    _mark_paper(right, 1.5, "issue 51's bound for ours: 1.5x")
    right.set_ylabel("time over the same sampler's uniform (x)")
    right.set_title("What the weights cost each sampler")
    for ax, room in ((left, 0.3), (right, 0.6)):  # room above the bars for the legend
        ax.set_xlabel("weights")
        ax.legend(fontsize=8, loc="upper left")
        ax.margins(y=room)
    return fig


def gpu_bars(data: pd.DataFrame, category: str, value: str, ylabel: str, title: str,
             note: str, paper: tuple[float, str] | None = None,
             footnote: str | None = None) -> Figure:
    """Stored GPU results (gnnrepro.experiments.gpu_results): `value` per `category`, bars
    grouped by machine, `paper` (value, text) marked where given (only beside ratios over
    what the paper's are over); where none is stored the panel says `note` (`data`'s machine
    column holds NOT_MEASURED and nothing else). `footnote` goes under the panel."""
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
                      {n: table.loc[machines, n].tolist() for n in names}, colors, "%.3gx",
                      marks=(1.0, paper[0]) if paper else (1.0,))
        ax.axhline(1.0, color="#777777", linewidth=0.8)
        if paper:
            _mark_paper(ax, *paper)
        ax.legend(fontsize=8)
        ax.margins(y=0.15)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    _not_run_footer(fig, None, *([footnote] if footnote else []))
    return fig


def _pipeline_pair(data: pd.DataFrame, left: tuple[str, str, str, str],
                   right: tuple[str, str, str, str],
                   spread: tuple[pd.Series, pd.Series] | None = None
                   ) -> tuple[Figure, Axes, Axes]:
    """Two bar panels over the pipelines; each side is (column, label format, y label,
    title). The right one is a speedup: bars from 1x, a line marks it. `spread`: (low,
    high) of the left column over the rounds, drawn as error bars."""
    fig, axes = _subplots(ncols=2, figsize=(9.0, 3.6))
    pipelines = data["pipeline"].tolist()
    colors = [PIPELINE_COLORS.get(p) for p in pipelines]
    for ax, (column, fmt, ylabel, title) in zip(axes, (left, right)):
        values = data[column]
        if ax is axes[1]:  # a speedup: bars from 1x, up for faster and down for slower
            bars = ax.bar(pipelines, values - 1.0, 0.6, bottom=1.0, color=colors)
            ax.bar_label(bars, labels=[fmt % v for v in values], fontsize=8, padding=1)
        else:
            error = (None if spread is None else
                     [(values - spread[0]).clip(lower=0), (spread[1] - values).clip(lower=0)])
            bars = ax.bar(pipelines, values, 0.6, color=colors, yerr=error, capsize=3,
                          error_kw={"elinewidth": 0.8, "ecolor": "#333333"})
            ax.bar_label(bars, fmt=fmt, fontsize=8, padding=2)
        _log_scale_if_wide(ax, values.tolist(), marks=(1.0,) if ax is axes[1] else ())
        ax.set_xlabel("pipeline")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.margins(y=0.15)
    axes[1].axhline(1.0, color="#777777", linewidth=0.8)
    return fig, axes[0], axes[1]


def _baseline(data: pd.DataFrame) -> str:
    """What the speedups in `data` are over: DGL's pipeline, or without DGL our reference."""
    return "reference" if "speedup_vs_reference" in data else "dgl"


def end_to_end_bars(data: pd.DataFrame, paper_speedup: float,
                    not_run: Mapping[str, str] | None = None) -> Figure:
    """Left: epoch time per pipeline. Right: speedup over DGL, the paper's marked; without
    DGL over our reference pipeline, and the paper's (over DGL) not drawn beside it
    (03_end_to_end). What `not_run` left out is named under the panels."""
    baseline = _baseline(data)
    spread = ((data["epoch_s_p10"], data["epoch_s_p90"]) if "epoch_s_p10" in data else None)
    fig, _, right = _pipeline_pair(
        data, ("epoch_s", "%.3g", "epoch time (s, median; bars: p10-p90 of the epochs)",
               "Training epoch time"),
        (f"speedup_vs_{baseline}", "%.2fx", f"speedup over {baseline} (x)",
         "End-to-end speedup"), spread)
    if baseline == "dgl":
        _mark_paper(right, paper_speedup, f"paper: {paper_speedup:.2f}x")
        right.legend(loc="upper left")
    _not_run_footer(fig, not_run, *([] if baseline == "dgl" else [
        f"speedups over our reference pipeline; the paper's {paper_speedup:.2f}x is over "
        "DGL's: not drawn"]))
    return fig


def pipeline_alone_bars(data: pd.DataFrame, step_note: str,
                        not_run: Mapping[str, str] | None = None) -> Figure:
    """Left: batches per second each pipeline delivers with no model (or a stand-in step).
    Right: speedup over DGL's DataLoader, without DGL over our reference pipeline
    (03_end_to_end, "the pipeline alone")."""
    baseline = _baseline(data)
    batches = data["batches_per_s"] * data["epoch_s"]  # an epoch's
    fig, _, _ = _pipeline_pair(
        data, ("batches_per_s", "%.1f", "batches / s (median; bars: min-max of the rounds)",
               "The pipeline alone"),
        (f"speedup_vs_{baseline}", "%.2fx", f"speedup over {baseline}'s loader (x)",
         "Loader speedup"),
        (batches / data["epoch_s_max"], batches / data["epoch_s_min"]))
    # under the panels: in one it would sit on a bar's label
    _not_run_footer(fig, not_run, step_note)
    return fig


def _spread_bars(ax: Axes, rows: pd.DataFrame, column: str, low: str, high: str,
                 labels: list[str]) -> None:
    """One bar per row (its pipeline's colour) of `column`, error bars from `low` to `high`,
    each labelled with its text in `labels`."""
    values = rows[column]
    error = [(values - rows[low]).clip(lower=0), (rows[high] - values).clip(lower=0)]
    bars = ax.bar(rows["name"], values, 0.6, yerr=error, capsize=3,
                  color=[PIPELINE_COLORS.get(p) for p in rows["name"]],
                  error_kw={"elinewidth": 0.8, "ecolor": "#333333"})
    ax.bar_label(bars, labels=labels, fontsize=7.5, padding=2)
    ax.set_xlabel("pipeline")
    ax.margins(y=0.25)


def _speedup(value: float) -> str:
    """A speedup over DGL on a line of its own, or nothing where there is none (DGL's own
    row, or DGL not run)."""
    return f"\n{value:.2f}x vs dgl" if np.isfinite(value) else ""


def heterogeneous_bars(data: pd.DataFrame, step_note: str, model: str) -> Figure:
    """09_heterogeneous on a typed graph. Left: ms per batch of each typed sampler per fanout
    list (bars: p10-p90), each DGL sampler's bar labelled with the fused sampler's speedup over
    it. Middle: batches/s of the pipeline alone (bars: min-max of its rounds), labelled with
    the speedup over DGL's loader, the peers (GraphBolt, PyG) beside ours where they ran.
    Right: the epoch time of `model` (its name) on each loader that trained it (bars:
    p10-p90), labelled with the speedup and the test accuracy. What did not run is left out of
    the panels and named under them, with the pipeline alone's `step_note`."""
    fig, (left, middle, right) = _subplots(ncols=3, figsize=(13.0, 3.8))
    ran = data[data["status"] == "run"]
    sampling = ran[ran["part"] == "sampling"]
    groups = list(dict.fromkeys(data.loc[data["part"] == "sampling", "fanouts"]))
    samplers = list(dict.fromkeys(sampling["name"]))

    def column(sampler: str, name: str) -> list[float]:
        rows = sampling[sampling["name"] == sampler].set_index("fanouts")
        return rows[name].reindex(groups).tolist()

    labels = {s: ["" if np.isnan(ms) else f"{ms:.3g}" if s == "fused" else
                  f"{ms:.3g}\n{speedup:.2f}x"
                  for ms, speedup in zip(column(s, "ms_per_batch"), column(s, "fused_speedup"))]
              for s in samplers}
    _grouped_bars(left, groups, {s: column(s, "ms_per_batch") for s in samplers},
                  SAMPLER_COLORS, "%.3g",
                  {s: (column(s, "ms_p10"), column(s, "ms_p90")) for s in samplers},
                  labels=labels)
    left.set_xlabel("fanouts (every relation, input layer first)")
    left.set_ylabel("ms per batch (median; bars: p10-p90)")
    left.set_title("Sampling a batch (labels: ms, fused's speedup)", fontsize=10)
    left.margins(y=0.4)  # headroom for the two-line labels under the legend's one row
    left.legend(fontsize=8, ncols=len(samplers), loc="upper center")

    pipelines = ran[ran["part"] == "pipeline"].reset_index(drop=True)
    _spread_bars(middle, pipelines, "batches_per_s", "batches_per_s_min", "batches_per_s_max",
                 [f"{v:.1f}" + _speedup(sp) for v, sp in
                  zip(pipelines["batches_per_s"], pipelines["alone_speedup_vs_dgl"].where(
                      pipelines["name"] != "dgl"))])
    middle.set_ylabel("batches / s (median; bars: min-max)")
    middle.set_title("The pipeline alone", fontsize=10)
    trained = pipelines[pipelines["epoch_s"].notna()]  # the peers ran the pipeline alone only
    _spread_bars(right, trained, "epoch_s", "epoch_s_p10", "epoch_s_p90",
                 [f"{v:.3g} s, test {acc:.3f}" + _speedup(sp) for v, acc, sp in
                  zip(trained["epoch_s"], trained["test_acc"],
                      trained["speedup_vs_dgl"].where(trained["name"] != "dgl"))])
    right.set_ylabel("epoch time (s, median; bars: p10-p90)")
    right.set_title(f"Training epoch: {model}", fontsize=10)

    missing = data[data["status"] != "run"].drop_duplicates("name")
    _not_run_footer(fig, dict(zip(missing["name"], missing["reason"])), step_note)
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


def temporal_bars(data: pd.DataFrame) -> Figure:
    """Left: ms per batch of each contender (uniform, disjoint, temporal ones). Right: each
    one's time over uniform sampling's, the issue's 1.5x bound marked (02_sampling_speedup)."""
    fig, (left, right) = _subplots(ncols=2, figsize=(9.6, 3.8))
    names = list(data["sampler"])
    ms = data.set_index("sampler")
    spread = {"fused": (ms["ms_p10"].tolist(), ms["ms_p90"].tolist())}
    _grouped_bars(left, names, {"fused": ms["ms_per_batch"].tolist()}, SAMPLER_COLORS, "%.3g",
                  spread)
    left.set_ylabel("time per batch (ms, median; bars: p10-p90)")
    left.set_title("Sampling time per mini-batch")
    others = [n for n in names if n != "uniform"]
    _grouped_bars(right, others, {"fused": ms.loc[others, "cost_vs_uniform"].tolist()},
                  SAMPLER_COLORS, "%.2fx", marks=(1.0, 1.5))
    right.axhline(1.0, color="#777777", linewidth=0.8)
    _mark_paper(right, 1.5, "issue 51's bound: 1.5x")
    right.set_ylabel("time over uniform sampling (x)")
    right.set_title("What time and disjoint subgraphs cost")
    for ax in (left, right):
        ax.set_xlabel("sampler")
        ax.tick_params(axis="x", labelsize=8, labelrotation=30)  # seven long names side by side
        for label in ax.get_xticklabels():
            label.set_horizontalalignment("right")
        ax.margins(y=0.3)
    return fig


def link_bars(data: pd.DataFrame) -> Figure:
    """Left: seconds a training step per pipeline, per seed. Right: validation MRR per pipeline,
    per seed (10_link_prediction)."""
    fig, (left, right) = _subplots(ncols=2, figsize=(9.6, 3.8))
    seeds = [str(s) for s in sorted(dict.fromkeys(data["seed"]))]
    pipelines = sorted(dict.fromkeys(data["pipeline"]), key=lambda p: p != "fused")
    colors = {"fused": SAMPLER_COLORS["fused"], "dgl": SAMPLER_COLORS["dgl-fused"]}

    def series(column: str) -> dict[str, list[float]]:
        table = data.assign(seed=data["seed"].astype(str)).pivot(
            index="seed", columns="pipeline", values=column)
        return {p: table.loc[seeds, p].tolist() for p in pipelines}

    _grouped_bars(left, seeds, series("s_per_step"), colors, "%.3g")
    left.set_ylabel("seconds a training step (median)")
    left.set_title("Link prediction: time a step")
    _grouped_bars(right, seeds, series("val_mrr"), colors, "%.3f")
    right.set_ylabel("validation MRR (1,000 negatives a query)")
    right.set_title("The same model learns the same")
    for ax in (left, right):
        ax.set_xlabel("seed")
        ax.legend(fontsize=8, loc="upper left")
        ax.margins(y=0.3)
    return fig
