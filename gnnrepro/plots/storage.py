"""The feature stores' figures (06_storage): data larger than the memory the stores may use,
and larger than the machine's.
"""
from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

from gnnrepro.plots.style import PAPER, STORE_COLORS, _note, _plain_log_ticks, _subplots

__all__ = ["disk_training_bars", "storage_lines"]


def _cap_state(data: pd.DataFrame) -> tuple[bool, str]:
    """(whether the memory cap held for every capped store and bound the baselines, the
    words for the figure). A baseline (mmap, lmdb) that never reached its cap read its file
    from pages cached outside its cgroup: not a capped measurement."""
    capped = data[data["store"] != "memory"]
    modes = set(capped["cap"].dropna()) if "cap" in capped else set()
    if modes and "none" not in modes:
        baselines = capped[capped["store"].isin(["mmap", "lmdb"])]
        reached = (baselines["cap_reached"].astype(str) if "cap_reached" in baselines
                   else pd.Series(dtype=str))
        unbound = sorted(baselines["store"][reached.eq("False")])
        if unbound:
            return False, (f"cap NOT reached by {', '.join(unbound)} (file cached outside "
                           f"its cgroup): not a capped measurement")
        return True, "memory capped (" + ", ".join(sorted(modes)) + ")"
    reasons = capped["cap_reason"].dropna() if "cap_reason" in capped else pd.Series([])
    why = f": {reasons.iloc[0]}" if len(reasons) else ""
    return False, f"NOT capped{why} - the stores may read from the page cache"


def storage_lines(data: pd.DataFrame, budget: float, ceiling_rows_per_s: float | None,
                  gids_speedup: float) -> Figure:
    """Left: rows/s per store (the disk store per memory budget, the others as lines; a store
    stopped at its time limit drawn dotted and labelled "at most") and the device's ceiling at
    one request per row. Right: end-to-end epoch time per store (log), the disk store's at
    `budget`, with its speedup over mmap beside GIDS's. A cap that did not hold is named in
    both titles and no speedup is claimed (06_storage)."""
    fig, (left, right) = _subplots(ncols=2, figsize=(10.0, 4.2))
    ok = data[data["error"].isna()] if "error" in data else data
    held, cap_words = _cap_state(ok)
    # a column read back from the stored CSV may hold the strings "True"/"False"
    bounded = (ok["lower_bound"].astype(str).eq("True") if "lower_bound" in ok
               else pd.Series(False, index=ok.index))
    disk = ok[ok["store"] == "disk"].sort_values("budget")
    left.plot(disk["budget"] * 100, disk["rows_per_s"] / 1e6, marker="o",
              color=STORE_COLORS["disk"], label="disk (hot + cache budget)")
    for name in ("memory", "mmap", "lmdb"):
        row = ok[ok["store"] == name]
        if len(row):
            bound = bool(bounded[row.index[0]])
            left.axhline(float(row["rows_per_s"].iloc[0]) / 1e6, color=STORE_COLORS[name],
                         linestyle=":" if name == "memory" or bound else "-",
                         label=name + (" (at most: stopped at its time limit)" if bound else ""))
    if ceiling_rows_per_s:
        left.axhline(ceiling_rows_per_s / 1e6, **PAPER,
                     label="device: 1 random read per row (fio)")
    left.set_yscale("log")
    left.set_xlabel("hot set + cache (% of the feature file)")
    left.set_ylabel("M rows/s (log)")
    warn = {} if held else {"color": "#b00000"}  # a failed measurement, named in red
    left.set_title("Gather throughput, " + cap_words, fontsize=9, **warn)
    # below the panel: a legend inside would cover the lines it names
    left.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize=7)
    bars = ok[(ok["store"] != "disk") | (ok["budget"] == budget)].dropna(subset=["epoch_s"])
    if len(bars):
        b = right.bar(bars["store"], bars["epoch_s"], 0.6,
                      color=[STORE_COLORS.get(x) for x in bars["store"]])
        right.bar_label(b, labels=[("> " if bounded[i] else "") + f"{v:.3g}"
                                   for i, v in zip(bars.index, bars["epoch_s"])],
                        fontsize=8, padding=1)
        right.set_yscale("log")  # seconds to hours: a linear axis reads the fast ones as 0
        right.margins(y=0.25)
        speedup = bars.loc[bars["store"] == "disk", "speedup_vs_mmap"]
        mmap_bound = bool(bounded[ok.index[ok["store"] == "mmap"]].any())
        if not held:
            right.set_title("Epoch time - not a result: the cap did not hold", fontsize=9,
                            **warn)
        elif len(speedup) and pd.notna(speedup.iloc[0]):
            right.set_title(f"Epoch time (disk: {'at least ' if mmap_bound else ''}"
                            f"{float(speedup.iloc[0]):.3g}x mmap's rows/s; GIDS: "
                            f"{gids_speedup:.0f}x)", fontsize=9)
    else:
        _note(right, "no end-to-end epoch was run")
    right.set_ylabel("epoch time (s, log)")
    right.set_xlabel("feature store")
    for ax in (left, right):
        _plain_log_ticks(ax)
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
        ax.bar_label(bars, labels=[("" if r else "> ") + _short(v)
                                   for v, r in zip(ok[column], run)], fontsize=8, padding=1)
        ax.set_yscale("log")
        _plain_log_ticks(ax)
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
    if len(missing):  # under the axis: a note in the panel would sit on a bar
        right.set_xlabel("feature store (not run: " + ", ".join(missing["store"]) + ")")
    return fig


def _short(value: float) -> str:
    """3 significant digits, thousands as k and millions as M (no 5.22e+04)."""
    for scale, suffix in ((1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g}{suffix}"
    return f"{value:.3g}"
