"""Writing a figure: .png and .pdf, atomically, labelled with what it shows and where it was
measured.
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from gnnrepro.atomic import write_atomic, write_json_atomic
from gnnrepro.experiments.archive import archive_result
from gnnrepro.experiments.labels import figure_label
from gnnrepro.experiments.params import Params

__all__ = ["save", "save_figure"]

_LABEL_GID = "gnnrepro-figure-label"
#: Record keys left out of a figure's committed JSON: whether it was reused and where it is
#: stored change between identical runs, and the timeline's spans are its own figure's data.
_NOT_COMMITTED = ("reused", "path", "timeline")
#: Under the corner label of a figure that names fused+pinned and was measured on the CPU:
#: there the name means nothing (gnnrepro.config.machine.check_placement).
CPU_PINNED_NOTE = ("measured on the CPU: fused+pinned pins nothing and copies on no CUDA "
                   "stream (its slots are plain shared memory)")


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
    by gnnrepro.experiments.figure_label(params, record, scales, dataset), and its record
    (the stored run.json: parameters, versions, hardware, what it drew from; less
    _NOT_COMMITTED, plus the label drawn) as stem.json, so the figure's provenance is
    committed with it; and the stored result itself into the folder's archive
    (gnnrepro.experiments.archive), so a fresh checkout can redraw it. A figure of the CPU
    that names fused+pinned says, under the label, that nothing was pinned
    (CPU_PINNED_NOTE)."""
    label = figure_label(params, record, scales, dataset)
    device = (record.get("params") or {}).get("device", params.device)
    if str(device) == "cpu" and _names(fig, "fused+pinned"):
        label += "\n" + CPU_PINNED_NOTE
    paths = save(fig, params.figures_dir / stem, label)
    record_path = params.figures_dir / f"{stem}.json"
    kept = {k: v for k, v in record.items() if k not in _NOT_COMMITTED} | {"label": label}
    write_json_atomic(record_path, json.loads(json.dumps(kept, default=str)))
    archived = archive_result(record, params.figures_dir)
    return [*paths, record_path, *([archived] if archived else [])]


def _names(fig: Figure, name: str) -> bool:
    """Whether `name` is written on `fig`: a title, tick label, legend entry or text."""
    texts = [t.get_text() for t in fig.texts]  # the suptitle is one of them
    for ax in fig.axes:
        texts += [ax.get_title(), ax.get_xlabel(), ax.get_ylabel()]
        texts += [t.get_text() for t in (*ax.get_xticklabels(), *ax.get_yticklabels(), *ax.texts)]
        legend = ax.get_legend()
        if legend is not None:
            texts += [t.get_text() for t in legend.get_texts()]
    return any(name in text for text in texts)
