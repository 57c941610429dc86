"""The one style of the paper's figures: type large enough for print, colour-blind-safe
colours (Okabe-Ito) that stay distinct in greyscale through value labels, the paper's values
marked in black, dashed; and the drawing helpers the figures share.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import Formatter, FuncFormatter

__all__ = ["LOG_SCALE_RATIO", "PAPER", "PIPELINE_COLORS", "SAMPLER_COLORS", "STAGE_COLORS",
           "STORE_COLORS", "STYLE"]

_OKABE_ITO = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#56B4E9", "#CC79A7", "#F0E442",
              "#000000", "#999999"]
PIPELINE_COLORS = {"dgl": "#D55E00", "dgl-native": "#CC79A7", "graphbolt": "#009E73",
                   "pyg": "#F0E442", "reference": "#999999", "fused": "#56B4E9",
                   "fused+pinned": "#0072B2", "fused@gpu": "#E69F00"}
SAMPLER_COLORS = {"dgl-unfused": "#D55E00", "dgl-fused": "#E69F00", "graphbolt": "#009E73",
                  "pyg": "#F0E442", "reference": "#999999",
                  "fused": "#0072B2"}
STAGE_COLORS = {"sample": "#0072B2", "extract": "#E69F00", "copy": "#F0E442",
                "forward": "#009E73", "backward": "#CC79A7", "wait": "#BBBBBB"}
PAPER = {"color": "black", "linestyle": "--", "linewidth": 1.3}
STORE_COLORS = {"memory": "#009E73", "disk": "#0072B2", "mmap": "#D55E00", "lmdb": "#CC79A7",
                "mmap-random": "#E69F00"}

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


def _plain(value: float, _position: object = None) -> str:
    """A tick's number as written: 0.06, 20, 100k, 1.6B (not 6x10^-2 or 1e+06)."""
    for scale, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:g}{suffix}"
    return f"{value:g}"


def _minor(value: float, _position: object = None) -> str:
    """A log axis's minor tick labelled only at 2, 3 and 5 of each decade (enough to read an
    axis spanning less than a decade, few enough not to collide)."""
    if value <= 0:
        return ""
    lead = round(value / 10 ** math.floor(math.log10(value)), 6)
    return _plain(value) if lead in (2.0, 3.0, 5.0) else ""


#: A log axis spanning more decades than this labels its decades only: minor labels at 2, 3
#: and 5 of each would crowd into one another.
MINOR_LABEL_DECADES = 1.5


class _MinorLogLabels(Formatter):
    """_minor's labels while the axis's view spans at most MINOR_LABEL_DECADES, none beyond
    (read when drawn, so later changes of the limits count)."""

    def __call__(self, value: float, pos: int | None = None) -> str:
        lo, hi = sorted(self.axis.get_view_interval()) if self.axis is not None else (1, 1)
        if lo > 0 and math.log10(hi / lo) > MINOR_LABEL_DECADES:
            return ""
        return _minor(value)


def _plain_log_ticks(ax: Axes) -> None:
    """Plain numbers on the log axes of `ax` (call after setting the scales)."""
    for axis, scale in ((ax.xaxis, ax.get_xscale()), (ax.yaxis, ax.get_yscale())):
        if scale == "log":
            axis.set_major_formatter(FuncFormatter(_plain))
            axis.set_minor_formatter(_MinorLogLabels())


def _footer(fig: Figure, text: str) -> None:
    """A line under the panels (what was not run, what a panel's numbers mean), left-aligned
    and low enough that the corner label (saving.save, at y = 0) never overlaps it."""
    fig.text(0.01, -0.06, text, va="top", fontsize=7.5, color="#444444", wrap=True)


def _not_run_footer(fig: Figure, not_run: Mapping[str, str] | None, *notes: str) -> None:
    """`notes`, then what `not_run` left out grouped by reason ("not run: dgl, dgl-native
    (DGL is not installed)"), as the figure's footer; nothing when both are empty."""
    by_reason: dict[str, list[str]] = {}
    for name, why in (not_run or {}).items():
        by_reason.setdefault(why, []).append(name)
    missing = "; ".join(f"{', '.join(names)} ({why})" for why, names in by_reason.items())
    text = "; ".join([*notes, *([f"not run: {missing}"] if missing else [])])
    if text:
        _footer(fig, text)


#: Bars whose values span more than this ratio are drawn on a log scale (a peer 100x slower
#: would otherwise flatten every other bar).
LOG_SCALE_RATIO = 30.0


def _log_scale_if_wide(ax: Axes, values: Sequence[float], marks: Sequence[float] = ()) -> None:
    """A log y-axis, with plain tick labels, when the positive finite `values` and `marks`
    (lines drawn on the panel: 1x, the paper's value) span more than LOG_SCALE_RATIO, so a
    wide span never squashes the small bars onto the lines beside them."""
    positive = [v for v in (*values, *marks) if v > 0 and np.isfinite(v)]
    if positive and max(positive) / min(positive) > LOG_SCALE_RATIO:
        ax.set_yscale("log")
        _plain_log_ticks(ax)


def _grouped_bars(ax: Axes, groups: Sequence[str], series: dict[str, Sequence[float]],
                  colors: dict[str, str], fmt: str,
                  spread: dict[str, tuple[Sequence[float], Sequence[float]]] | None = None,
                  marks: Sequence[float] = (),
                  labels: dict[str, Sequence[str]] | None = None) -> None:
    """Bars of each series side by side within each group, each labelled with its value
    (or `labels[name]`, a text per group, where given); `spread[name]`: (low, high) per
    group, drawn as error bars; `marks`: the values of the lines the caller draws on the
    panel (they count in the choice of a log axis)."""
    width = 0.8 / max(len(series), 1)
    x = np.arange(len(groups))
    for i, (name, values) in enumerate(series.items()):
        error = None
        if spread and name in spread:
            low, high = (np.asarray(v, dtype=float) for v in spread[name])
            mid = np.asarray(values, dtype=float)
            error = [np.clip(mid - low, 0, None), np.clip(high - mid, 0, None)]
        bars = ax.bar(x + (i - (len(series) - 1) / 2) * width, values, width, label=name,
                      color=colors.get(name), edgecolor="white", linewidth=0.5, yerr=error,
                      capsize=2, error_kw={"elinewidth": 0.7, "ecolor": "#333333"})
        if labels and name in labels:
            ax.bar_label(bars, labels=labels[name], fontsize=7.5, padding=1)
        else:
            ax.bar_label(bars, fmt=fmt, fontsize=7.5, padding=1)
    ax.set_xticks(x, groups)
    _log_scale_if_wide(ax, [v for values in series.values() for v in values], marks)
