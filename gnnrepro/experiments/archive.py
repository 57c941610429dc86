"""The results a folder's figures were drawn from, committed beside them: <figures>/data/ holds
each drawn result as the store keeps it (<experiment>/<hash>/run.json and data.csv, copied
verbatim), so a fresh checkout, whose results/ is empty (it is not committed), can still redraw
its figures after a change to the plots (make figures REDRAW=1) without measuring again.

Only a redraw reads the archive (gnnrepro.experiments.store.Store's `archive`): `make figures`
measures as always, and never mistakes a committed result for one of this machine's.
"""
from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gnnrepro.atomic import write_atomic

__all__ = ["ARCHIVE", "archive_dir", "archive_result"]

#: The archive's folder inside a figures folder.
ARCHIVE = "data"
#: A stored result's files, run.json last: a folder without it is an incomplete result.
_FILES = ("data.csv", "run.json")


def archive_dir(figures_dir: Path) -> Path:
    """Where the results behind the figures of `figures_dir` are kept."""
    return Path(figures_dir) / ARCHIVE


def archive_result(record: Mapping[str, Any], figures_dir: Path) -> Path | None:
    """Copy the stored result a figure of `figures_dir` was drawn from (`record`: the store's
    record, whose path is its folder) into the archive, each file atomically, run.json last;
    then remove the archived results of the same experiment that no figure of the folder draws
    from any more (its figures' JSONs name experiment and hash). The copy's folder, or None
    where the record names no stored result (nothing to keep)."""
    source = Path(str(record.get("path", "")))
    name, digest = record.get("experiment"), record.get("hash")
    if not name or not digest or not all((source / f).is_file() for f in _FILES):
        return None
    target = archive_dir(figures_dir) / str(name) / str(digest)
    if source.resolve() != target.resolve():  # not already the archived copy (a redraw)
        for file in _FILES:
            write_atomic(target / file, lambda tmp, f=file: shutil.copyfile(source / f, tmp))
    drawn = _drawn_from(Path(figures_dir), str(name))
    for older in target.parent.iterdir():
        if older.is_dir() and older.name not in drawn:
            shutil.rmtree(older)
    return target


def _drawn_from(figures_dir: Path, name: str) -> set[str]:
    """The hashes of experiment `name` that the figures' JSONs in `figures_dir` name."""
    hashes = set()
    for path in figures_dir.glob("*.json"):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(record, dict) and record.get("experiment") == name:
            hashes.add(str(record.get("hash")))
    return hashes
