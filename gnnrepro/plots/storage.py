"""The feature stores' figures (06_storage): data larger than the memory the stores may use,
and larger than the machine's.
"""
from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

from gnnrepro.plots.style import PAPER, STORE_COLORS, _note, _subplots

__all__ = ["disk_training_bars", "storage_lines"]


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
