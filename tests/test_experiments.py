"""gnnrepro.experiments and gnnrepro.plots without running a benchmark: parameter validation,
the results store (hash, reuse, force, atomic writes), the table writers, and the notebook
experiments and figures on stand-in benchmarks that return the benchmarks' documented shapes."""
from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
import math
import os
from pathlib import Path

import matplotlib
import pandas as pd
import pytest
import torch
import yaml

import gnnrepro
from gnnrepro import experiments, plots
from gnnrepro.experiments import paper
from gnnrepro.atomic import write_atomic, write_text_atomic
from gnnrepro.config.machine import resolve_workers
from gnnrepro.env import source_hash
from gnnrepro.experiments.params import Params, from_namespace, runnable_world_sizes
from gnnrepro.experiments.sensitivity import NO_CUDA, NO_STREAMS
from gnnrepro.experiments.store import Store, param_hash
from gnnrepro.experiments.tables import format_cell, to_latex, to_markdown, write_table
from gnnrepro.pipeline import STAGES

matplotlib.use("Agg")
PARAMS_DIR = Path(__file__).resolve().parent.parent / "notebooks" / "params"


def leftovers(directory: Path) -> list[Path]:
    """Temp files an atomic write would leave behind if it were not atomic."""
    return [p for p in directory.rglob("*") if p.name.endswith(".tmp")]


# --- parameters ---------------------------------------------------------------------------

def test_defaults_validate_and_match_default_yaml():
    defaults = Params.from_mapping({})
    from_yaml = Params.from_mapping(yaml.safe_load((PARAMS_DIR / "default.yaml").read_text()))
    assert from_yaml == defaults
    assert defaults.device in ("cpu", "cuda")
    assert Path(defaults.out_dir).is_absolute()


@pytest.mark.parametrize("name", ["smoke.yaml", "paper.yaml", "products.yaml"])
def test_shipped_parameter_files_validate(name):
    values = yaml.safe_load((PARAMS_DIR / name).read_text())
    assert Params.from_mapping(values).dataset == values["dataset"]


def test_unknown_parameters_are_named_with_suggestions():
    with pytest.raises(ValueError, match=r"unknown parameter\(s\): 'epoch' \(did you mean "
                                         r"'epochs'\?\), 'zzz'.*Known parameters: dataset"):
        Params.from_mapping({"epoch": 2, "zzz": 1})


@pytest.mark.parametrize("values, error, message", [
    ({"batch_size": True}, TypeError, "batch_size must be an int"),
    ({"batch_size": "12"}, TypeError, "batch_size must be an int"),
    ({"batch_size": 0}, ValueError, "batch_size must be >= 1"),
    ({"scale": 0}, ValueError, "scale must be a finite number > 0"),
    ({"scale": "big"}, TypeError, "scale must be a number"),
    ({"fanouts": [10, -2]}, ValueError, r"fanouts\[1\] must be >= -1"),
    ({"fanouts": []}, ValueError, "fanouts must not be empty"),
    ({"gpus": [1, 1]}, ValueError, "gpus has duplicates"),
    ({"dataset": "cora"}, ValueError, "dataset must be one of products-sim"),
    ({"sampler_device": "gpu"}, ValueError, "sampler_device must be one of cpu, cuda, uva"),
    ({"worker_kind": "fiber"}, ValueError, "worker_kind must be one of thread, process"),
    ({"sweep_placements": ["cpu"]}, ValueError, "sweep_placements.0. must be"),
    ({"device": "tpu"}, ValueError, "device must be 'auto'"),
    ({"device": "cuda:x"}, ValueError, "device must be 'auto'"),
    ({"force": 1}, TypeError, "force must be a bool"),
    ({"redraw": "yes"}, TypeError, "redraw must be a bool"),
    ({"force": True, "redraw": True}, ValueError, "force .* and redraw .* exclude each other"),
    ({"sweep_fanouts": [[5, 5], 3]}, TypeError, r"sweep_fanouts\[1\] must be a list"),
    ({"hetero_dataset": "products-sim"}, ValueError,
     "hetero_dataset must be a typed dataset, one of mag-sim, igbh-sim, ogbn-mag"),
    ({"hetero_dataset": None}, TypeError, "hetero_dataset must be a dataset name"),
    ({"hetero_fanouts": []}, ValueError, "hetero_fanouts must not be empty"),
    ({"hetero_fanouts": [[25, 20], [25, 20]]}, ValueError, "hetero_fanouts has duplicates"),
    ({"hetero_hidden": 0}, ValueError, "hetero_hidden must be >= 1"),
    ({"hetero_scale": -1}, ValueError, "hetero_scale must be a finite number > 0"),
])
def test_bad_values_name_the_parameter(values, error, message):
    with pytest.raises(error, match=message):
        Params.from_mapping(values)


def test_values_are_normalised():
    p = Params.from_mapping({"fanouts": "15,10,-1", "scale": 1, "out_dir": "some/where",
                             "root": "~/ogb"})
    assert p.fanouts == [15, 10, -1] and p.scale == 1.0 and isinstance(p.scale, float)
    assert p.out_dir == str(Path(gnnrepro.__file__).resolve().parents[1] / "some/where")
    assert p.root == str(Path.home() / "ogb")
    assert p.figures_dir.parent == Path(p.out_dir) / "figures"  # changed parameters


def test_device_auto_and_unavailable_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert Params.from_mapping({"device": "auto"}).device == "cpu"
    with pytest.raises(ValueError, match="'cuda' but this machine has 0 CUDA device"):
        Params.from_mapping({"device": "cuda"})
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert Params.from_mapping({"device": "auto"}).device == "cuda"
    assert Params.from_mapping({"device": "cuda:1"}).device == "cuda:1"
    with pytest.raises(ValueError, match="'cuda:2' but this machine has 2"):
        Params.from_mapping({"device": "cuda:2"})


def test_world_sizes_split_by_what_the_machine_has(monkeypatch):
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    runnable, reasons = runnable_world_sizes([1, 2, 4, 8], "cuda")
    assert runnable == [1, 2]
    assert reasons == {4: "needs 4 GPUs (one per rank); this machine has 2",
                       8: "needs 8 GPUs (one per rank); this machine has 2"}
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    runnable, reasons = runnable_world_sizes([1, 4], "cpu")
    assert runnable == [1] and "needs 4 CPU cores" in reasons[4] and "device is cpu" in reasons[4]


def test_from_namespace_takes_names_defined_after_the_snapshot(capsys):
    namespace = {"experiments": experiments, "_private": 1}
    before = set(namespace)
    namespace |= {"epochs": 2, "_ih": []}
    assert from_namespace(namespace, before).epochs == 2
    assert "epochs = 2" in capsys.readouterr().out
    namespace["bogus"] = 1
    with pytest.raises(ValueError, match="unknown parameter.*'bogus'"):
        from_namespace(namespace, before)


def test_from_namespace_prints_a_bad_parameter_first(capsys):
    namespace: dict = {}
    with pytest.raises(ValueError, match="batch_size"):
        from_namespace(namespace | {"batch_size": -5}, set())
    assert capsys.readouterr().err.startswith("Parameter error: batch_size")


def test_default_parameters_write_figures_in_figures(tmp_path):
    assert Params.from_mapping({"out_dir": str(tmp_path)}).figures_dir == tmp_path / "figures"
    forced = Params.from_mapping({"out_dir": str(tmp_path), "force": True})
    assert forced.figures_dir == tmp_path / "figures"  # re-measuring measures the same thing


def test_other_parameters_never_write_over_the_default_figures(tmp_path):
    base = {"out_dir": str(tmp_path)}
    small = Params.from_mapping(base | {"scale": 0.002, "epochs": 1})
    assert small.changed() == {"scale": 0.002, "epochs": 1}
    folder = small.figures_dir
    assert folder.parent == tmp_path / "figures" and folder.name.startswith("products-sim-0.002-")
    assert Params.from_mapping(base | {"scale": 0.002, "epochs": 1}).figures_dir == folder
    assert Params.from_mapping(base | {"scale": 0.002, "epochs": 2}).figures_dir != folder
    named = Params.from_mapping(base | {"scale": 0.002, "figures_name": "mine"})
    assert named.figures_dir == tmp_path / "figures" / "mine"
    asked = Params.from_mapping(base | {"scale": 0.002, "figures_name": ""})
    assert asked.figures_dir == tmp_path / "figures"
    for name in ("smoke", "products", "paper", "larger-than-memory"):
        shipped = yaml.safe_load((PARAMS_DIR / f"{name}.yaml").read_text())
        assert Params.from_mapping(shipped | base).figures_dir == tmp_path / "figures" / name
    default = yaml.safe_load((PARAMS_DIR / "default.yaml").read_text())
    assert Params.from_mapping(default | base).figures_dir == tmp_path / "figures"
    assert Params.from_mapping(default | base | {"root": str(tmp_path)}).changed() == {}
    assert Params().changed() == {}  # 'auto' and its resolved device are the same choice


@pytest.mark.parametrize("bad", ["../x", "a/b", ".", "..", "sp ace", 3])
def test_figures_name_is_one_plain_folder(bad):
    with pytest.raises(TypeError if bad == 3 else ValueError, match="figures_name"):
        Params.from_mapping({"figures_name": bad})


def test_figure_label_names_dataset_scale_machine_date_and_commit(tmp_path):
    params = Params.from_mapping({"out_dir": str(tmp_path), "scale": 0.002})
    record = {"env": {"cpu": "AMD EPYC", "cpu_count": 2, "gpu": None},
              "created": "2026-11-25T21:00:00+00:00", "code": {"git_commit": "2ff166c0123"}}
    assert experiments.figure_label(params, record) == \
        "products-sim scale 0.002 · AMD EPYC (2 cores) · 2026-11-25 · 2ff166c"
    record["env"] |= {"gpu": "NVIDIA H100", "gpu_count": 8}
    label = experiments.figure_label(params, record, scales=[0.05, 1.0])
    assert label.startswith("products-sim scale 0.05, 1 · AMD EPYC (2 cores), 8x NVIDIA H100")
    ogb = Params.from_mapping({"out_dir": str(tmp_path), "dataset": "ogbn-products"})
    assert experiments.figure_label(ogb, record).startswith("ogbn-products · AMD EPYC")
    growth = experiments.figure_label(ogb, record, scales=[0.05])  # 08 measures products-sim
    assert growth.startswith("products-sim scale 0.05 · ")
    big = experiments.figure_label(params, record, scales=[1.0], dataset="igb-sim")
    assert big.startswith("igb-sim scale 1 · ")  # 06's larger-than-memory part
    typed = experiments.figure_label(params, record, dataset="ogbn-mag")  # 09: no scale
    assert typed.startswith("ogbn-mag · AMD EPYC")


def test_a_saved_figure_carries_its_label(tmp_path):
    fig, ax = matplotlib.pyplot.subplots()
    ax.plot([0, 1], [0, 1])
    plots.save(fig, tmp_path / "f", "products-sim scale 0.002 · test machine")
    plots.save(fig, tmp_path / "f", "products-sim scale 0.002 · test machine")  # once only
    assert [t.get_text() for t in fig.texts] == ["products-sim scale 0.002 · test machine"]
    assert (tmp_path / "f.png").stat().st_size > 1000
    matplotlib.pyplot.close(fig)


def _storage_rows(cap: str, mmap_bound: object, mmap_reached: object = "True") -> pd.DataFrame:
    """06's tidy rows as read back from a stored CSV (lower_bound, cap_reached may be text)."""
    rows = [{"store": "memory", "budget": math.nan, "rows_per_s": 1e7, "epoch_s": 1.0,
             "speedup_vs_mmap": 1e4, "cap": "none", "cap_reason": None,
             "lower_bound": "False", "error": None},
            {"store": "disk", "budget": 0.1, "rows_per_s": 1e5, "epoch_s": 10.0,
             "speedup_vs_mmap": 500.0, "cap": cap, "cap_reason": "no memory cgroup",
             "lower_bound": "False", "error": None},
            {"store": "mmap", "budget": math.nan, "rows_per_s": 200.0, "epoch_s": 900.0,
             "speedup_vs_mmap": 1.0, "cap": cap, "cap_reason": "no memory cgroup",
             "cap_reached": mmap_reached, "lower_bound": mmap_bound, "error": None},
            {"store": "lmdb", "budget": 0.1, "error": "not run: no disk", "lower_bound": False,
             "cap_reason": None}]
    return pd.DataFrame(rows)


def _texts(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in (*ax.texts, ax.title)]


def test_storage_figure_names_a_cap_that_did_not_hold_and_marks_bounds():
    capped = plots.storage_lines(_storage_rows("cgroup-v1", "True"), 0.1, None, 392)
    texts = _texts(capped)
    assert any("memory capped (cgroup-v1)" in t for t in texts)
    assert any("at least 500x mmap" in t for t in texts)  # mmap stopped at its time limit
    assert "> 900" in texts and "10" in texts  # only the bounded bar carries ">"
    uncapped = plots.storage_lines(_storage_rows("none", "False"), 0.1, None, 392)
    texts = _texts(uncapped)
    assert any("NOT capped: no memory cgroup" in t for t in texts)
    assert any("not a result" in t for t in texts) and not any("500x" in t for t in texts)
    assert not any(t.startswith("> ") for t in texts)
    # capped, but mmap never reached its limit (its file cached outside its cgroup)
    unbound = plots.storage_lines(_storage_rows("cgroup-v1", "False", "False"), 0.1, None, 392)
    texts = _texts(unbound)
    assert any("cap NOT reached by mmap" in t for t in texts)
    assert not any("500x" in t for t in texts)
    matplotlib.pyplot.close("all")


def test_a_saved_notebook_figure_writes_its_record_beside_it(tmp_path):
    params = Params(out_dir=str(tmp_path), figures_name="t")
    fig, ax = matplotlib.pyplot.subplots()
    record = {"env": {"cpu": "test cpu", "cpu_count": 2}, "created": "2026-11-27",
              "params": {"scale": 0.002}, "reused": True, "path": "/somewhere",
              "timeline": [1, 2]}
    paths = plots.save_figure(fig, params, record, "fig")
    saved = json.loads((params.figures_dir / "fig.json").read_text())
    assert params.figures_dir / "fig.json" in paths and (params.figures_dir / "fig.png").exists()
    label = experiments.figure_label(params, record)
    assert saved == {"env": {"cpu": "test cpu", "cpu_count": 2}, "created": "2026-11-27",
                     "params": {"scale": 0.002},  # nothing that changes between equal runs
                     "label": label}  # and the label drawn in its corner
    assert label.startswith("products-sim scale 0.05 · test cpu (2 cores) · 2026-11-27")
    matplotlib.pyplot.close(fig)


# --- store --------------------------------------------------------------------------------

def test_param_hash_is_stable_order_independent_and_keyed_by_code():
    key = {"b": [1, 2], "a": 1.5, "c": None}
    fixed = param_hash("demo", key, code="0123456789abcdef")
    canonical = ('{"code":"0123456789abcdef","name":"demo","params":{"a":1.5,"b":[1,2],'
                 '"c":null}}')  # the documented recipe: canonical JSON, SHA-256, 16 digits
    assert fixed == hashlib.sha256(canonical.encode()).hexdigest()[:16]
    assert param_hash("demo", dict(reversed(key.items())), code="0123456789abcdef") == fixed
    assert param_hash("demo", key | {"a": 2.5}, code="0123456789abcdef") != fixed
    assert param_hash("other", key, code="0123456789abcdef") != fixed
    assert param_hash("demo", key, code="fedcba9876543210") != fixed  # other code
    assert param_hash("demo", key) == param_hash("demo", key, code=source_hash())


def test_source_hash_follows_the_code(tmp_path, monkeypatch):
    """Results are keyed by the code under gnnrepro/ and csrc/: a change there is a new key,
    a change elsewhere (docs) is not."""
    import shutil
    from gnnrepro import env
    root = Path(env.__file__).resolve().parents[1]
    copy = tmp_path / "checkout"
    shutil.copytree(root / "gnnrepro", copy / "gnnrepro",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    shutil.copytree(root / "csrc", copy / "csrc")
    env_copy = copy / "gnnrepro" / "env.py"

    def hash_of_copy() -> str:
        spec = __import__("importlib.util").util.spec_from_file_location("env_copy", env_copy)
        module = __import__("importlib.util").util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.source_hash()

    first = hash_of_copy()
    assert first == source_hash.__wrapped__()  # same files, same hash (uncached)
    (copy / "README.md").write_text("docs change nothing")
    assert hash_of_copy() == first
    with open(copy / "csrc" / "ops.cpp", "a") as f:
        f.write("// a change in the C++\n")
    assert hash_of_copy() != first


def test_store_reuses_unless_forced(tmp_path):
    calls = []

    def compute():
        calls.append(1)
        return pd.DataFrame({"name": ["a", "512"], "x": [1.5, float("nan")], "n": [1, 2]}), \
            {"note": "hi"}

    store = Store(tmp_path)
    data, meta = store.cached("exp", {"k": 1}, compute)
    assert len(calls) == 1 and meta["reused"] is False and meta["note"] == "hi"
    assert meta["params"] == {"k": 1} and meta["experiment"] == "exp"
    assert meta["env"]["git_commit"] is not None and meta["env"]["versions"]["pandas"]
    directory = tmp_path / "exp" / param_hash("exp", {"k": 1})
    assert meta["path"] == str(directory)
    assert json.loads((directory / "run.json").read_text())["hash"] == directory.name
    again, meta2 = Store(tmp_path).cached("exp", {"k": 1}, compute)
    assert len(calls) == 1 and meta2["reused"] is True
    pd.testing.assert_frame_equal(again, data)
    assert again["name"].tolist() == ["a", "512"]  # text stays text after the CSV round trip
    Store(tmp_path).cached("exp", {"k": 2}, compute)
    assert len(calls) == 2
    assert meta["code"]["source_hash"] == source_hash()
    assert not leftovers(tmp_path)


def test_force_remeasures_once_per_figures_run(tmp_path, monkeypatch):
    """make figures gives all its notebooks one run id: a forced result shared by several
    notebooks is measured once in that run, and again in the next."""
    calls = []

    def compute():
        calls.append(1)
        return pd.DataFrame({"x": [len(calls)]}), {}

    monkeypatch.setenv("GNNREPRO_FIGURES_RUN", "run-0")
    Store(tmp_path).cached("exp", {"k": 1}, compute)
    assert len(calls) == 1
    monkeypatch.setenv("GNNREPRO_FIGURES_RUN", "run-1")
    for _ in range(2):  # two notebooks in the same run, both forcing
        data, meta = Store(tmp_path).cached("exp", {"k": 1}, compute, force=True)
        assert meta["run_id"] == "run-1"
    assert len(calls) == 2 and data["x"].tolist() == [2]
    monkeypatch.setenv("GNNREPRO_FIGURES_RUN", "run-2")
    Store(tmp_path).cached("exp", {"k": 1}, compute, force=True)
    assert len(calls) == 3


def test_forced_memo_runs_each_key_once_per_run(tmp_path, monkeypatch):
    monkeypatch.setenv("GNNREPRO_FIGURES_RUN", "one-run")
    calls = []
    for _ in range(3):
        assert Store(tmp_path).memo("bench", {"a": 1}, lambda: calls.append(1) or {"v": 1},
                                    force=True) == {"v": 1}
    assert len(calls) == 1
    Store(tmp_path).memo("bench", {"a": 1}, lambda: calls.append(1) or {"v": 1})
    assert len(calls) == 1


def test_interrupted_compute_leaves_no_result(tmp_path):
    def boom():
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        Store(tmp_path).cached("exp", {"k": 1}, boom)
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]
    data, meta = Store(tmp_path).cached("exp", {"k": 1},
                                        lambda: (pd.DataFrame({"x": [1]}), {}))
    assert meta["reused"] is False and data["x"].tolist() == [1]


def test_a_sweep_cut_midway_and_run_again_measures_only_what_had_not_finished(tmp_path,
                                                                             monkeypatch):
    """`make figures` stopped in the middle of a notebook's sweep (Ctrl-C in its third run),
    then run again (a new run id, as each `make figures` has): the two finished runs are
    reused as stored, only the rest is measured, and the sweep's results are those of the
    finished runs plus the new ones."""
    measured = []

    def sweep(cut_at: int | None) -> list[dict]:
        out = []
        for point in range(4):
            def run(point: int = point) -> dict:
                if point == cut_at:
                    raise KeyboardInterrupt
                measured.append(point)
                return {"point": point, "seconds": len(measured) * 0.5}
            out.append(Store(tmp_path).memo("bench", {"point": point}, run))
        return out

    monkeypatch.setenv("GNNREPRO_FIGURES_RUN", "figures-1")
    with pytest.raises(KeyboardInterrupt):
        sweep(cut_at=2)
    assert measured == [0, 1]
    monkeypatch.setenv("GNNREPRO_FIGURES_RUN", "figures-2")
    again = sweep(cut_at=None)
    assert measured == [0, 1, 2, 3]  # the finished two were not measured again
    assert again == [{"point": 0, "seconds": 0.5}, {"point": 1, "seconds": 1.0},
                     {"point": 2, "seconds": 1.5}, {"point": 3, "seconds": 2.0}]
    assert not leftovers(tmp_path)


def test_atomic_write_keeps_the_old_file_when_interrupted(tmp_path):
    path = write_text_atomic(tmp_path / "a.txt", "old")

    def partial(tmp: Path) -> None:
        tmp.write_text("half of the ne")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_atomic(path, partial)
    assert path.read_text() == "old" and not leftovers(tmp_path)
    assert write_text_atomic(path, "new").read_text() == "new"


# --- tables -------------------------------------------------------------------------------

def test_table_writers(tmp_path):
    table = pd.DataFrame({"pipe_line": ["dgl", "fused+pinned"], "time (s)": [1.23456, 0.5],
                          "share %": [float("nan"), 7], "n": [3, 4]})
    paths = write_table(table, tmp_path / "t01", caption="Times & shares_1")
    assert [p.name for p in paths] == ["t01.csv", "t01.md", "t01.tex"]
    pd.testing.assert_frame_equal(pd.read_csv(paths[0]), table)
    md = paths[1].read_text().splitlines()
    assert md[0] == "| pipe_line | time (s) | share % | n |"
    assert md[1] == "| --- | ---: | ---: | ---: |"
    assert md[2] == "| dgl | 1.23 | - | 3 |" and md[3] == "| fused+pinned | 0.500 | 7.00 | 4 |"
    tex = paths[2].read_text()
    for piece in (r"\begin{tabular}{lrrr}", r"\toprule", r"\midrule", r"\bottomrule",
                  r"pipe\_line & time (s) & share \% & n \\", r"dgl & 1.23 & - & 3 \\",
                  r"\caption{Times \& shares\_1}", r"\label{tab:t01}"):
        assert piece in tex, piece
    assert to_markdown(table, digits=4).splitlines()[2] == "| dgl | 1.235 | - | 3 |"
    assert [format_cell(v) for v in (8493.65, 0.012345, 0.0, True, "x", None)] == \
        ["8494", "0.0123", "0.0", "True", "x", "-"]
    assert to_latex(table, "c", "l").count(r"\\") == 3
    assert not leftovers(tmp_path)


# --- experiments and figures on stand-in benchmarks --------------------------------------

def fake_end_to_end(config, *, dataset, scale, root, pipelines, repeats,
                    timeline_batches, target_acc=None, model=None) -> dict:
    """gnnrepro.bench.end_to_end.measure's documented result, with made-up but plausible
    numbers."""
    result = {"params": {"dataset": dataset, "batch_size": config.batch_size,
                         "fanouts": list(config.fanouts)},
              "dataset": {"name": dataset, "num_nodes": 1000, "num_edges": 9000,
                          "num_train": 100}, "pipelines": {}, "speedup_vs_dgl": {}, "env": {}}
    workers = config.workers
    for i, name in enumerate(pipelines):
        epoch = 2.0 / (1 + i) * (1 + 64 / config.batch_size) * (1 + 0.1 * workers)
        work = {"sample": 0.4 * epoch, "extract": 0.3 * epoch, "forward": 0.2 * epoch,
                "backward": 0.1 * epoch}
        spans = []
        for b in range(timeline_batches):
            t = 50.0 + 0.1 * b
            spans += [{"batch": b, "stage": "sample", "lane": "worker 0", "start": t,
                       "end": t + 0.04},
                      {"batch": b, "stage": "extract", "lane": "worker 0", "start": t + 0.04,
                       "end": t + 0.07},
                      {"batch": b, "stage": "forward", "lane": "trainer", "start": t + 0.1,
                       "end": t + 0.15},
                      {"batch": b, "stage": "backward", "lane": "trainer",
                       "start": t + 0.15, "end": t + 0.19}]
        result["pipelines"][name] = {
            "epoch_s": epoch, "epochs_s": [epoch * 2] + [epoch] * (config.epochs - 1),
            "stages": {s: {"work_s": w, "exposed_s": None if workers else w}
                       for s, w in work.items()},
            "wait_s": 0.1, "val_acc": 0.6, "test_acc": 0.55, "peak_rss_bytes": 2**30,
            "seeds_per_s": 100 / epoch, "timeline": spans,
            "val_acc_epochs": [0.3 + 0.1 * i] * config.epochs,
            "epochs_to_target": None if target_acc is None or 0.3 + 0.1 * i < target_acc
            else 1}
    result["params"]["target_acc"] = target_acc
    for base in ("dgl", "dgl-native"):
        key = "speedup_vs_" + base.replace("-", "_")
        time = result["pipelines"].get(base, {}).get("epoch_s")
        result[key] = {n: time / r["epoch_s"] for n, r in result["pipelines"].items()
                       } if time else {}
    return result


@pytest.fixture
def fake_train(monkeypatch) -> list[dict]:
    """Stands in for gnnrepro.bench.end_to_end.measure; returns its calls' arguments (the
    config's fields and the keywords)."""
    from gnnrepro.bench import end_to_end
    calls: list[dict] = []

    def measure(config, **kw):
        calls.append(config.to_dict() | kw)
        return fake_end_to_end(config, **kw)
    monkeypatch.setattr(end_to_end, "measure", measure)
    return calls


@pytest.fixture
def params(tmp_path) -> Params:
    values = yaml.safe_load((PARAMS_DIR / "smoke.yaml").read_text())
    return Params.from_mapping(values | {"out_dir": str(tmp_path), "device": "cpu",
                                         "workers": 1})


def saved(fig, stem: Path) -> list[Path]:
    paths = plots.save(fig, stem)
    matplotlib.pyplot.close(fig)
    assert all(p.stat().st_size > 1000 for p in paths)
    return paths


def test_stage_breakdown_and_end_to_end_share_one_run(fake_train, params):
    data, meta = experiments.stage_breakdown(params)
    ladder = ["dgl", "dgl-native", "fused", "fused+pinned"]
    assert len(fake_train) == 1 and fake_train[0]["pipelines"] == ladder
    assert fake_train[0]["target_acc"] == params.target_acc
    assert fake_train[0]["timeline_batches"] == params.timeline_batches
    assert fake_train[0]["repeats"] == params.train_repeats
    assert set(data["stage"]) == set(STAGES) and (data["work_s"] > 0).all()
    assert data["exposed_s"].isna().all()  # workers: the wait cannot be split
    table = experiments.stage_table(data)
    assert table["pipeline"].tolist() == ladder
    assert table["sample+extract (% of work)"].tolist() == pytest.approx([70] * 4)

    e2e, meta = experiments.end_to_end(params)
    assert len(fake_train) == 1, "03 must reuse 01's training run"
    assert e2e.set_index("pipeline").at["fused+pinned", "paper_speedup"] == \
        paper.END_TO_END_SPEEDUP
    assert e2e["speedup_vs_dgl"].tolist() == pytest.approx([1, 2, 3, 4])
    assert e2e["speedup_vs_dgl_native"].tolist() == pytest.approx([0.5, 1, 1.5, 2])
    reached = [None if 0.3 + 0.1 * i < params.target_acc else 1 for i in range(4)]
    assert [None if pd.isna(v) else v for v in e2e["epochs_to_target"]] == reached
    assert meta["target_acc"] == params.target_acc
    spans = experiments.timeline_frame(meta)
    assert len(spans) == 4 * params.timeline_batches * 4 and spans["start_s"].min() == 0
    e2e_table = experiments.end_to_end_table(e2e)
    assert e2e_table["peak RSS (MiB)"].tolist() == [1024] * 4
    assert "epochs to target acc" in e2e_table and "speedup vs dgl-native (x)" in e2e_table

    figures = params.figures_dir
    saved(plots.stage_bars(data), figures / "01_stage_breakdown")
    saved(plots.end_to_end_bars(e2e, paper.END_TO_END_SPEEDUP), figures / "03_end_to_end")
    saved(plots.timeline(spans), figures / "03_end_to_end_timeline")
    saved(plots.timeline(spans.iloc[:0]), figures / "empty_timeline")
    assert not leftovers(Path(params.out_dir))


def fake_typed_sampling(**kw) -> dict:
    """gnnrepro.bench.typed_sampling.measure's documented result, with made-up numbers: DGL's
    samplers 3x and 2x the fused sampler's time."""
    ms = 2.0 * len(kw["fanouts"])
    slower = {"dgl-unfused": 3.0, "dgl-fused": 2.0, "fused": 1.0}
    return {"params": {"target": "paper", "num_nodes": {"paper": 3682},
                       "num_edges": {"paper/cites/paper": 27081}},
            "samplers": {s: {"ms_per_batch": ms * slower[s], "ms_p10": 0.9 * ms * slower[s],
                             "ms_p90": 1.2 * ms * slower[s], "edges": 900.0,
                             "input_nodes": 400.0} for s in kw["samplers"]}}


def fake_loader(**kw) -> dict:
    """gnnrepro.bench.loader.measure's documented result: DGL's loader 4x slower than ours;
    of the peers asked, GraphBolt ran (2x slower than ours) and PyG's environment is not set
    up."""
    epoch = {"dgl": 4.0, "fused+pinned": 1.0, "graphbolt": 2.0}
    ran = [*kw["pipelines"], *(p for p in kw.get("peers", []) if p == "graphbolt")]
    return {"params": {"step_ms": kw["step_ms"]},
            "pipelines": {p: {"epoch_s": epoch[p], "batches_per_s": 50 / epoch[p],
                              "epoch_s_min": 0.9 * epoch[p], "epoch_s_max": 1.1 * epoch[p]}
                          for p in ran},
            "speedup_vs_dgl": ({p: epoch["dgl"] / epoch[p] for p in ran}
                               if "dgl" in kw["pipelines"] else {}),
            "peers_not_run": {p: "not set up" for p in kw.get("peers", []) if p == "pyg"}}


@pytest.fixture
def fake_hetero(monkeypatch, fake_train) -> dict[str, list[dict]]:
    """Stands in for the three benchmarks of 09_heterogeneous; returns their calls' arguments
    by benchmark (a loader's and a training run's with their config's fields)."""
    from gnnrepro.bench import loader, typed_sampling
    calls: dict[str, list[dict]] = {"sampling": [], "loader": [], "train": fake_train}

    def sample(**kw):
        calls["sampling"].append(kw)
        return fake_typed_sampling(**kw)

    def load(config, **kw):
        calls["loader"].append(config.to_dict() | kw)
        return fake_loader(**kw)
    monkeypatch.setattr(typed_sampling, "measure", sample)
    monkeypatch.setattr(loader, "measure", load)
    return calls


def test_heterogeneous_measures_every_fanout_list_and_both_loaders(fake_hetero, params):
    data, meta = experiments.heterogeneous(params)
    sampled = fake_hetero["sampling"]
    assert [kw["fanouts"] for kw in sampled] == params.hetero_fanouts == [[4, 3], [2, 2, 2]]
    for kw in sampled:
        assert (kw["dataset"], kw["scale"], kw["batch_size"]) == ("mag-sim", 0.005, 64)
        assert kw["samplers"] == ["dgl-unfused", "dgl-fused", "fused"]
    (loaded,), (trained,) = fake_hetero["loader"], fake_hetero["train"]
    for run in (loaded, trained):  # the typed dataset at the first fanouts, both loaders
        assert (run["dataset"], run["scale"], run["fanouts"]) == ("mag-sim", 0.005, [4, 3])
        assert run["pipelines"] == ["dgl", "fused+pinned"]
    assert loaded["peers"] == ["graphbolt", "pyg"] and loaded["rounds"] == params.loader_rounds
    assert (trained["model"], trained["hidden"]) == ("rgcn", params.hetero_hidden)
    assert trained["repeats"] == params.train_repeats and trained["epochs"] == params.epochs
    assert meta["target"] == "paper" and meta["not_run"] == {"pyg": "not set up"}
    assert meta["model"].startswith("R-GCN") and meta["hidden"] == params.hetero_hidden

    sampling = experiments.heterogeneous_sampling_table(data)
    assert sampling["fanouts"].tolist() == ["4,3"] * 3 + ["2,2,2"] * 3
    assert sampling["sampler"].tolist() == ["dgl-unfused", "dgl-fused", "fused"] * 2
    assert sampling["fused's speedup (x)"].tolist() == pytest.approx([3, 2, 1] * 2)
    table = experiments.heterogeneous_table(data).set_index("pipeline")
    assert table.index.tolist() == ["dgl", "fused+pinned", "graphbolt", "pyg"]
    assert table.at["fused+pinned", "speedup vs dgl (x)"] == pytest.approx(2)
    assert table.at["fused+pinned", "alone: speedup vs dgl (x)"] == 4
    assert table.at["dgl", "alone: batches/s"] == 12.5 and table.at["dgl", "test acc"] == 0.55
    # a peer: the pipeline alone only (its own model is not ours); one not set up says why
    assert table.at["graphbolt", "alone: batches/s"] == 25
    assert table.at["graphbolt", "alone: speedup vs dgl (x)"] == 2
    assert math.isnan(table.at["graphbolt", "epoch (s)"])
    assert table.at["graphbolt", "status"] == "run"
    assert table.at["pyg", "status"] == "not run" and table.at["pyg", "reason"] == "not set up"
    assert (table["reason"].drop("pyg") == "-").all()

    fig = plots.heterogeneous_bars(data, meta["step_note"], meta["model"])
    assert {"12\n3.00x", "8\n2.00x"} <= set(_texts(fig))  # the fused speedup over each
    middle, right = fig.axes[1], fig.axes[2]
    assert [t.get_text() for t in middle.get_xticklabels()] == ["dgl", "fused+pinned",
                                                                 "graphbolt"]
    assert [t.get_text() for t in right.get_xticklabels()] == ["dgl", "fused+pinned"]
    plots.save_figure(fig, params, meta, "09_heterogeneous",
                      **experiments.heterogeneous_label(params))
    matplotlib.pyplot.close(fig)
    label = json.loads((params.figures_dir / "09_heterogeneous.json").read_text())["label"]
    assert label.startswith("mag-sim scale 0.005 · ")
    again, meta = experiments.heterogeneous(params)
    assert meta["reused"] and [len(c) for c in fake_hetero.values()] == [2, 1, 1]
    pd.testing.assert_frame_equal(again, data)


def test_heterogeneous_without_dgl_measures_ours_and_says_why_not_dgl(fake_hetero, params,
                                                                      monkeypatch):
    module = importlib.import_module("gnnrepro.experiments.heterogeneous")
    monkeypatch.setattr(module, "_dgl_missing", lambda: "DGL is not installed")
    data, meta = experiments.heterogeneous(params)
    assert all(kw["samplers"] == ["fused"] for kw in fake_hetero["sampling"])
    assert fake_hetero["loader"][0]["pipelines"] == ["fused+pinned"]
    assert fake_hetero["train"][0]["pipelines"] == ["fused+pinned"]
    assert meta["not_run"] == dict.fromkeys(["dgl-unfused", "dgl-fused", "dgl"],
                                            "DGL is not installed") | {"pyg": "not set up"}
    missing = data[data["status"] == "not run"]
    assert missing["name"].tolist() == ["dgl-unfused", "dgl-fused"] * 2 + ["dgl", "pyg"]
    assert missing["ms_per_batch"].isna().all() and missing["epoch_s"].isna().all()
    ours = data[data["status"] == "run"]
    assert ours["name"].tolist() == ["fused", "fused", "fused+pinned", "graphbolt"]
    fig = plots.heterogeneous_bars(data, meta["step_note"], meta["model"])
    footer = [t.get_text() for t in fig.texts]
    assert any("not run: dgl-unfused, dgl-fused, dgl (DGL is not installed)" in t
               for t in footer)
    saved(fig, params.figures_dir / "09_heterogeneous")


def test_sensitivity_measures_the_base_point_once(fake_train, params):
    data, meta = experiments.sensitivity(params)
    assert meta["pipeline"] == "fused+pinned"
    # smoke sweeps (base: batch 64, fanouts 4,3, 1 worker, cpu/pinned): batch sizes 32 and
    # 64, fanouts 4,3, workers 0, placements cpu/pinned and uva/uva; the base point is
    # measured once for the batch, fanout and placement axes
    assert len(fake_train) == 3
    assert all(kw["pipelines"] == ["fused+pinned"] and kw["repeats"] == 1 for kw in fake_train)
    ran = data[data["status"] == "run"]
    assert len(ran) == 5 and (ran["epoch_s"] > 0).all()
    assert ran[ran["is_base"]]["epoch_s"].nunique() == 1
    streams = data[data["axis"] == "streams"]
    assert (streams["status"] == "not run").all() and (streams["reason"] == NO_STREAMS).all()
    gpu = data[(data["axis"] == "placement") & ~data["is_base"]]
    assert gpu["value"].tolist() == ["uva/uva"] and (gpu["reason"] == NO_CUDA).all()
    assert data.loc[data["axis"] == "fanouts", "value"].tolist() == ["4,3"]
    table = experiments.sensitivity_table(data)
    assert "64 (base)" in table["value"].tolist()
    saved(plots.sensitivity_bars(data), params.figures_dir / "05_sensitivity")

    again, meta = experiments.sensitivity(params)
    assert meta["reused"] and len(fake_train) == 3
    pd.testing.assert_frame_equal(again, data)


def test_sensitivity_resolves_workers_left_to_the_machine(fake_train, params):
    machine_workers = resolve_workers(None, "cpu")
    auto = dataclasses.replace(params, workers=None, sweep_batch_sizes=[params.batch_size],
                               sweep_workers=sorted({machine_workers, machine_workers + 1}))
    data, _ = experiments.sensitivity(auto)
    workers = data[data["axis"] == "workers"]
    assert workers.loc[workers["is_base"], "value"].tolist() == [str(machine_workers)]
    assert (data["workers"].isin([machine_workers, machine_workers + 1])).all()
    # the base point (batch, fanouts, placement, and workers at the resolved count) and the
    # other worker count: two measurements, every run with an explicit count
    assert len(fake_train) == 2 and {kw["workers"] for kw in fake_train} == {
        machine_workers, machine_workers + 1}


def test_scaling_with_the_benchmark(params, monkeypatch):
    calls = []

    def run(**kw):
        calls.append(kw)
        runs = [{"pipeline": p, "world_size": w, "epoch_s": 4.0 / w * (1.2 if p == "dgl" else 1),
                 "stages": {}, "test_acc": 0.5, "ids_per_epoch": 100,
                 "extra_rss_per_rank_bytes": None if w == 1 else 300 * 2**20,
                 "extra_data_bytes_per_rank": None if w == 1 else (2**19 if p == "dgl" else 0),
                 "dataset_bytes": 0, "skipped": None, "oversubscribed": w > 1}
                for w in kw["ranks"] for p in kw["pipelines"]]
        return {"num_train_ids": 100, "runs": runs,
                "speedup_vs_dgl": {str(w): 1.2 for w in kw["ranks"]}, "env": {}}

    from gnnrepro.bench import scaling as scaling_bench
    monkeypatch.setattr(scaling_bench, "measure", lambda config, **kw: run(**kw))
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    params = dataclasses.replace(params, gpus=[1, 2, 4])  # the cpu device: a core per rank
    data, meta = experiments.scaling(params)
    assert calls[0]["ranks"] == [1, 2] and calls[0]["pipelines"] == ("dgl", "fused+pinned")
    assert meta["ranks_are"] == "CPU processes"
    table = experiments.scaling_table(data).set_index("world size")
    assert table.at[1, "status"] == "run" and table.at[1, "speedup vs dgl (x)"] == 1.2
    assert table.at[1, "reason"] == "-" and "oversubscribed" in table.at[2, "reason"]
    assert table.at[4, "status"] == "not run" and "needs 4 CPU cores" in table.at[4, "reason"]
    assert table.at[4, "paper (x)"] == paper.SCALING_SPEEDUP[4]
    assert math.isnan(table.at[4, "dgl epoch (s)"])
    assert math.isnan(table.at[1, "fused+pinned MB per added rank"])  # nothing added at 1
    assert table.at[2, "fused+pinned MB per added rank"] == 300
    assert table.at[2, "dgl data copies MB per added rank"] == 0.5
    assert table.at[2, "fused+pinned data copies MB per added rank"] == 0
    saved(plots.scaling_lines(data, paper.SCALING_SPEEDUP, meta["ranks_are"]),
          params.figures_dir / "04_scaling")
    assert experiments.scaling(params)[1]["reused"] and len(calls) == 1


def test_log_axes_label_minor_ticks_only_where_they_do_not_crowd():
    """Plain tick labels on log axes; minor ones (2, 3, 5 of a decade) within 1.5 decades,
    none across three (08's edges axis: 100k to 1.6B)."""
    from gnnrepro.plots.style import _plain_log_ticks
    fig, (narrow, wide) = matplotlib.pyplot.subplots(ncols=2)
    for ax, hi in ((narrow, 40.0), (wide, 2e9)):
        ax.plot([10.0, hi], [1, 2])
        ax.set_xscale("log")
        ax.set_xlim(10.0, hi)
        _plain_log_ticks(ax)
    fig.canvas.draw()

    def labels(ax, minor):
        return {t.get_text() for t in ax.xaxis.get_ticklabels(minor=minor)} - {""}

    assert {"20", "30"} <= labels(narrow, True) and "10" in labels(narrow, False)
    assert labels(wide, True) == set() and {"100k", "1B"} <= labels(wide, False)
    matplotlib.pyplot.close(fig)


def test_a_speedup_panel_goes_log_when_its_lines_and_bars_span_widely():
    """02 at products size: bars of 3x to 67x over the 1x line and the paper's 1.52x span 67x,
    so the axis is log with plain labels (a linear one squashed the DGL bars onto the paper's
    line); bars of 1.1x to 2.7x stay linear."""
    rows = [{"dataset": "products-sim", "sampler": s, "ms_per_batch": ms,
             "fused_speedup": speedup}
            for s, ms, speedup in (("fused", 12.3, 1.0), ("dgl-fused", 36.8, 2.98),
                                   ("pyg", 830.0, 67.3))]
    fig = plots.speedup_bars(pd.DataFrame(rows), paper.SAMPLING_SPEEDUP)
    right = fig.axes[1]
    assert right.get_yscale() == "log"
    fig.canvas.draw()
    assert {"1", "10"} <= {t.get_text() for t in right.yaxis.get_ticklabels()}
    matplotlib.pyplot.close(fig)
    rows[2] |= {"ms_per_batch": 33.0, "fused_speedup": 2.7}
    fig = plots.speedup_bars(pd.DataFrame(rows), paper.SAMPLING_SPEEDUP)
    assert fig.axes[1].get_yscale() == "linear"
    matplotlib.pyplot.close(fig)


def test_a_cpu_figure_naming_fused_pinned_says_nothing_was_pinned(tmp_path):
    """fused+pinned means nothing on the CPU: such a figure says so under its corner label;
    one measured on a GPU, or one not naming it, does not."""
    from gnnrepro.plots.saving import CPU_PINNED_NOTE
    params = Params(out_dir=str(tmp_path), figures_name="t")
    record = {"env": {"cpu": "test cpu", "cpu_count": 2}, "created": "2026-11-27"}
    for device, pipelines, noted in (("cpu", ["dgl", "fused+pinned"], True),
                                     ("cuda", ["dgl", "fused+pinned"], False),
                                     ("cpu", ["dgl", "fused"], False)):
        fig, ax = matplotlib.pyplot.subplots()
        ax.bar(pipelines, [1.0, 2.0])
        plots.save_figure(fig, params, record | {"params": {"device": device}}, "fig")
        saved = json.loads((params.figures_dir / "fig.json").read_text())
        assert saved["label"].endswith("\n" + CPU_PINNED_NOTE) is noted, (device, pipelines)
        assert any(CPU_PINNED_NOTE in t.get_text() for t in fig.texts) is noted
        matplotlib.pyplot.close(fig)


def test_the_growth_figures_scale_labels_stay_inside_their_panel():
    """08: each point's scale label lies inside the sampling panel (the lowest one used to sit
    on the x axis, the last one past the right edge), for products 0.05 to 1.0 as measured."""
    measured = [(0.05, 6.19e6, 5.23, 17.0), (0.25, 3.09e7, 7.5, 21.0), (1.0, 1.24e8, 11.3, 33.8)]
    rows = [{"dataset": "products-sim", "scale": scale, "system": system, "features": "memory",
             "edges": edges, "sample_ms": ms, "loader_batches_per_s": 100.0 / ms,
             "epoch_s": edges / 4e6, "peak_rss_gb": edges / 2e7, "test_acc": 0.8}
            for scale, edges, ours, dgl in measured
            for system, ms in (("ours", ours), ("dgl", dgl))]
    fig = plots.growth_lines(pd.DataFrame(rows))
    fig.canvas.draw()
    panel = fig.axes[0].get_window_extent()
    labels = [t for t in fig.axes[0].texts if t.get_text().startswith("products")]
    assert [t.get_text() for t in labels] == ["products 0.05", "products 0.25", "products 1"]
    for text in labels:
        box = text.get_window_extent()
        assert panel.x0 <= box.x0 and box.x1 <= panel.x1, text.get_text()
        assert panel.y0 <= box.y0 and box.y1 <= panel.y1, text.get_text()
    matplotlib.pyplot.close(fig)


def test_heterogeneous_disk_is_skipped_at_scale_0_and_tabulates_each_store(tmp_path, monkeypatch):
    params = Params(out_dir=str(tmp_path))
    assert "hetero_disk_scale is 0" in experiments.heterogeneous_disk_skip_reason(params)
    asked = {}

    def measure(**kwargs):
        asked.update(kwargs)
        return {"params": {"feature_bytes": 4e9, "memory_bytes": 2e9, **kwargs},
                "dataset": {"name": "igbh-sim"},
                "stores": {"disk": {"steps": 40, "step_s_after_first": 2.0,
                                    "epoch_s_extrapolated": 7200.0, "test_acc": 0.2,
                                    "test_majority_acc": 0.01, "peak_rss_bytes": 2**31},
                           "mmap": {"error": "stopped after 1200 s", "steps": 1}}}

    module = importlib.import_module("gnnrepro.experiments.heterogeneous_disk")
    monkeypatch.setattr(module.bench, "measure", measure)
    params = Params(out_dir=str(tmp_path), hetero_disk_scale=0.5, hetero_disk_steps=7)
    assert experiments.heterogeneous_disk_skip_reason(params) is None
    data, meta = experiments.heterogeneous_disk(params)
    assert (asked["dataset"], asked["scale"], asked["steps"]) == ("igbh-sim", 0.5, 7)
    disk = data.set_index("store").loc["disk"]
    assert (disk["epoch_h"], disk["peak_rss_gb"], disk["test_acc"]) == (2.0, 2.0, 0.2)
    assert data.set_index("store").loc["mmap", "error"] == "stopped after 1200 s"
    assert (meta["feature_gb"], meta["memory_gb"]) == (4.0, 2.0)


def test_weighted_sampling_rows_and_figure(tmp_path, monkeypatch):
    asked = {}

    def measure(**kwargs):
        asked.update(kwargs)
        ms = {"fused/uniform": 2.0, "dgl-fused/uniform": 8.0, "fused/half-zero": 4.0,
              "dgl-fused/half-zero": 24.0}
        return {"params": kwargs, "peers_not_run": {"pyg": "no pyg-lib"},
                "samplers": {k: {"ms_per_batch": v, "ms_p10": v * 0.9, "ms_p90": v * 1.1}
                             for k, v in ms.items()}}

    module = importlib.import_module("gnnrepro.experiments.weighted_sampling")
    monkeypatch.setattr(module.bench, "measure", measure)
    params = Params(out_dir=str(tmp_path), scale=0.01, sampling_batches=3)
    data, meta = experiments.weighted_sampling(params)
    assert (asked["scale"], asked["batches"]) == (0.01, 3)
    rows = data.set_index(["weights", "sampler"])
    assert rows.loc[("half-zero", "dgl-fused"), "cost_vs_uniform"] == 3.0
    assert rows.loc[("half-zero", "fused"), "cost_vs_uniform"] == 2.0
    assert rows.loc[("half-zero", "dgl-fused"), "fused_speedup"] == 6.0
    assert meta["peers_not_run"] == {"pyg": "no pyg-lib"}
    fig = plots.weighted_bars(data)
    assert [ax.get_title() for ax in fig.axes] == ["Sampling time per mini-batch",
                                                   "What the weights cost each sampler"]
    matplotlib.pyplot.close(fig)
