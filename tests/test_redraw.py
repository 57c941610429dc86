"""make figures REDRAW=1: figures drawn from results that other (older) code measured, where
this code has none, naming both commits; everything else measured as usual. In a fresh
checkout, from the results committed beside the figures."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import matplotlib
import matplotlib.pyplot
import pandas as pd
import pytest

from gnnrepro import experiments, plots
from gnnrepro.env import source_hash
from gnnrepro.experiments.archive import archive_dir, archive_result
from gnnrepro.experiments.params import Params
from gnnrepro.experiments.store import Store

matplotlib.use("Agg")


def _as_if_measured_by_older_code(store: Store, name: str, key: dict, commit: str,
                                  created: str) -> Path:
    """Move this code's stored result of (name, key) to another hash, as older code keyed
    it, and stamp it with that code's commit and date."""
    directory = store.directory(name, key)
    older = directory.with_name(commit[:16])
    shutil.move(directory, older)
    record = json.loads((older / "run.json").read_text())
    record |= {"hash": older.name, "created": created,
               "code": {"git_commit": commit, "source_hash": "0" * 16}}
    (older / "run.json").write_text(json.dumps(record))
    return older


def _counting(calls: list[int], **meta: str):
    """An experiment's compute that counts its calls in `calls` and returns the count."""
    def compute():
        calls.append(1)
        return pd.DataFrame({"x": [len(calls)]}), dict(meta)
    return compute


def _one_older_result(tmp_path: Path, commit: str, created: str):
    """A store holding one result of ("exp", {"k": 1}) as if `commit` had measured it, and
    the counting compute that made it."""
    calls: list[int] = []
    compute = _counting(calls)
    store = Store(tmp_path)
    store.cached("exp", {"k": 1}, compute)
    _as_if_measured_by_older_code(store, "exp", {"k": 1}, commit, created)
    return store, calls, compute


def test_redraw_draws_from_the_newest_result_of_the_same_parameters(tmp_path):
    calls: list[int] = []
    compute = _counting(calls, note="measured")
    store = Store(tmp_path)
    for commit, created in (("a" * 40, "2026-11-20T00:00:00+00:00"),
                            ("b" * 40, "2026-11-25T00:00:00+00:00")):
        store.cached("exp", {"k": 1}, compute)
        _as_if_measured_by_older_code(store, "exp", {"k": 1}, commit, created)
    assert len(calls) == 2

    data, record = store.cached("exp", {"k": 1}, compute, redraw=True)
    assert len(calls) == 2, "a redraw must not measure what is stored"
    assert data["x"].tolist() == [2] and record["reused"] is True  # the newer of the two
    assert record["code"]["git_commit"] == "b" * 40 and record["note"] == "measured"
    assert record["redrawn_by"]["source_hash"] == source_hash()
    assert Path(record["path"]).name == ("b" * 40)[:16]

    params = Params.from_mapping({"out_dir": str(tmp_path), "scale": 0.002})
    label = experiments.figure_label(params, record)
    assert label.split(" · ")[-2] == "bbbbbbb" and label.endswith("drawn by "
                                                                  + str(record["redrawn_by"]
                                                                        ["git_commit"])[:7])


def test_without_redraw_or_a_stored_match_it_measures(tmp_path):
    store, calls, compute = _one_older_result(tmp_path, "c" * 40, "2026-11-20T00:00:00")
    _, record = store.cached("exp", {"k": 1}, compute)  # other code's result is not reused
    assert len(calls) == 2 and "redrawn_by" not in record
    _, record = store.cached("exp", {"k": 2}, compute, redraw=True)  # other parameters
    assert len(calls) == 3 and record["reused"] is False and "redrawn_by" not in record
    (tmp_path / "exp" / ("c" * 16) / "run.json").write_text("{torn")  # unreadable: skipped
    shutil.rmtree(store.directory("exp", {"k": 1}))
    _, record = store.cached("exp", {"k": 1}, compute, redraw=True)
    assert len(calls) == 4 and record["reused"] is False


def test_redraw_prefers_this_codes_own_result_and_excludes_force(tmp_path):
    store, calls, compute = _one_older_result(tmp_path, "d" * 40, "2030-01-01T00:00:00")
    store.cached("exp", {"k": 1}, compute)  # this code's own, older by its date
    data, record = store.cached("exp", {"k": 1}, compute, redraw=True)
    assert len(calls) == 2 and data["x"].tolist() == [2] and "redrawn_by" not in record
    with pytest.raises(ValueError, match="force .* and redraw .* exclude each other"):
        store.cached("exp", {"k": 1}, compute, force=True, redraw=True)


def _draw(params: Params, record: dict, stem: str) -> None:
    """A notebook's figure of `record` saved the way the notebooks save theirs."""
    fig, _ = matplotlib.pyplot.subplots()
    plots.save_figure(fig, params, record, stem)
    matplotlib.pyplot.close(fig)


def test_a_fresh_checkout_redraws_from_the_results_committed_beside_the_figures(tmp_path):
    params = Params(out_dir=str(tmp_path), figures_name="t")
    calls: list[int] = []
    compute = _counting(calls, note="measured")
    data, record = params.store().cached("exp", {"k": 1}, compute)
    _draw(params, record, "fig")
    archived = archive_dir(params.figures_dir) / "exp" / record["hash"]
    for file in ("run.json", "data.csv"):  # the stored result, verbatim
        assert (archived / file).read_bytes() == (Path(record["path"]) / file).read_bytes()

    shutil.rmtree(params.results_dir)  # a fresh checkout: results/ is not committed
    _, measured = params.store().cached("exp", {"k": 1}, compute)
    assert len(calls) == 2 and measured["reused"] is False, \
        "without a redraw a committed result is never taken for this machine's"
    shutil.rmtree(params.results_dir)
    redraw = Params(out_dir=str(tmp_path), figures_name="t", redraw=True)
    again, redrawn = redraw.store().cached("exp", {"k": 1}, compute, redraw=True)
    assert len(calls) == 2, "a redraw from the archive must not measure"
    pd.testing.assert_frame_equal(again, data)
    assert Path(redrawn["path"]) == archived and redrawn["note"] == "measured"
    kept = (archived / "run.json").read_bytes()
    _draw(redraw, redrawn, "fig")  # drawn again from the archived copy itself: kept as is
    assert (archived / "run.json").read_bytes() == kept
    assert sorted(p.name for p in archived.iterdir()) == ["data.csv", "run.json"]


def test_the_archive_keeps_only_what_the_folders_figures_draw_from(tmp_path):
    params = Params(out_dir=str(tmp_path), figures_name="t")
    store = params.store()
    _, first = store.cached("exp", {"k": 1}, _counting([]))
    _, other = store.cached("other", {"k": 1}, _counting([]))
    _draw(params, first, "fig")
    _draw(params, first, "fig_timeline")  # a second figure of the same result
    _draw(params, other, "other")
    _, second = store.cached("exp", {"k": 2}, _counting([]))  # new parameters, one figure
    _draw(params, second, "fig")
    archive = archive_dir(params.figures_dir)
    assert {p.name for p in (archive / "exp").iterdir()} == {first["hash"], second["hash"]}
    _draw(params, second, "fig_timeline")  # now no figure draws from the first
    assert {p.name for p in (archive / "exp").iterdir()} == {second["hash"]}
    assert {p.name for p in (archive / "other").iterdir()} == {other["hash"]}
    assert archive_result({"experiment": "exp", "hash": "x", "path": str(tmp_path / "none")},
                          params.figures_dir) is None  # no stored result: nothing to keep
