"""tools/figures_page.py: what the README says `make figures` costs, read from the figures'
records, each stored result counted once."""
from __future__ import annotations

import json
from pathlib import Path

from helpers import load_script

ROOT = Path(__file__).resolve().parents[1]


def _record(folder: Path, stem: str, experiment: str, digest: str, seconds: float) -> None:
    (folder / f"{stem}.json").write_text(json.dumps({
        "experiment": experiment, "hash": digest, "duration_s": seconds,
        "env": {"cpu": "Test CPU", "cpu_count": 4}}))


def test_measuring_time_counts_each_result_once_and_names_the_longest(tmp_path: Path) -> None:
    page = load_script(ROOT / "tools" / "figures_page.py")
    assert page.measuring_time(tmp_path) == "unknown: no figure in it carries a record yet"
    _record(tmp_path, "03_end_to_end", "03_end_to_end", "a1", 600.0)
    _record(tmp_path, "03_end_to_end_timeline", "03_end_to_end", "a1", 600.0)  # the same result
    _record(tmp_path, "08_scale_growth", "08_scale_growth", "b2", 1800.0)
    (tmp_path / "data").mkdir()  # the archive's records are not figures
    _record(tmp_path / "data", "run", "08_scale_growth", "c3", 9999.0)
    text = page.measuring_time(tmp_path)
    assert text.startswith("at least 40 minutes on Test CPU (4 cores), 30 of them in "
                           "08_scale_growth")
