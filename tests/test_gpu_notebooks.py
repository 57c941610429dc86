"""The notebooks on a machine without DGL, as on the lent GPU machines: the GPU notebook
session's `--dry-run` (benchmarks/gpu_notebooks.py) runs notebooks 01-04 through papermill with
DGL hidden, and their tables list DGL's rows as not run with every ratio over our reference
pipeline, never beside the paper's; and the parts it is made of."""
from __future__ import annotations

import importlib.util
import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pandas as pd
import pytest
import yaml

from gnnrepro import plots
from gnnrepro.baselines.dgl_import import HIDE_DGL, dgl_missing
from gnnrepro.experiments import gpu_results, measurements
from gnnrepro.experiments.params import Params
from gnnrepro.experiments.tables import with_not_run

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ["01_stage_breakdown", "02_sampling_speedup", "03_end_to_end", "04_scaling"]


def _module(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _csv(tar: tarfile.TarFile, name: str) -> pd.DataFrame:
    return pd.read_csv(io.BytesIO(tar.extractfile(f"gpu-dry-run/{name}.csv").read()))


def test_dry_run_runs_the_notebooks_without_dgl(tmp_path: Path) -> None:
    pytest.importorskip("papermill")  # the notebooks extra
    out = tmp_path / "out"
    env = dict(os.environ, GNNREPRO_DATA=str(tmp_path / "data"),
               GNNREPRO_PEERS=str(tmp_path / "no-peers"))
    run = subprocess.run([sys.executable, "benchmarks/gpu_notebooks.py", "--dry-run", "--out",
                          str(out), "--root-out", str(tmp_path), "--notebooks",
                          ",".join(NOTEBOOKS), "--wheels", str(tmp_path / "none")],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert {p.name for p in out.iterdir()} == {"session.json", "session.log", "figures.tar.gz"}
    report = json.loads((out / "session.json").read_text())
    assert list(report["steps"]) == ["dataset", "build", *(f"notebook-{n}" for n in NOTEBOOKS)]
    assert all(step["ok"] for step in report["steps"].values()), report["steps"]
    assert report["figures_folder"] == "figures/gpu-dry-run"
    with tarfile.open(out / "figures.tar.gz") as tar:
        names = set(tar.getnames())
        assert {f"gpu-dry-run/notebooks/{n}.ipynb" for n in NOTEBOOKS} <= names
        assert {f"gpu-dry-run/{n}.png" for n in NOTEBOOKS} <= names
        assert any(n.startswith("gpu-dry-run/data/03_end_to_end/") for n in names)
        ladder = _csv(tar, "03_end_to_end").set_index("pipeline")
        sampling = _csv(tar, "02_sampling_speedup").set_index("sampler")
        scaling = _csv(tar, "04_scaling")
        alone = _csv(tar, "03_pipeline_alone").set_index("pipeline")
        stages = _csv(tar, "01_stage_breakdown").set_index("pipeline")
    hidden = f"not run: DGL is hidden from this process ({HIDE_DGL}=1)"
    assert ladder.index.tolist() == ["reference", "fused", "fused+pinned", "dgl", "dgl-native"]
    assert ladder.loc[["dgl", "dgl-native"], "status"].eq(hidden).all()
    assert ladder.loc[["fused", "fused+pinned"], "speedup vs reference (x)"].gt(0).all()
    assert not {"paper (x)", "speedup vs dgl (x)"} & set(ladder.columns)
    assert alone.loc["dgl", "status"] == hidden and "paper (x)" not in alone.columns
    assert stages.loc["dgl-native", "status"] == hidden
    assert sampling.loc[["dgl-unfused", "dgl-fused"], "status"].eq(hidden).all()
    assert "paper (x)" not in sampling  # the paper's 1.52x is over DGL's sampler
    assert "speedup vs reference (x)" in scaling and "paper (x)" not in scaling
    assert scaling["reason"].iloc[-1].startswith("dgl: ")


def test_without_dgl_the_reference_takes_dgls_place(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(HIDE_DGL, "1")
    assert "hidden" in dgl_missing()
    names, not_run = measurements.on_this_machine(measurements.LADDER)
    assert names == ("reference", "fused", "fused+pinned")
    assert set(not_run) == {"dgl", "dgl-native"}
    names, not_run = measurements.on_this_machine(("dgl-fused", "fused"), baseline=None)
    assert names == ("fused",) and set(not_run) == {"dgl-fused"}
    assert measurements.speedups_over({"fused": 1.0, "reference": 3.0}) == (
        "reference", {"fused": 3.0, "reference": 1.0})
    assert measurements.speedups_over({"fused": 1.0, "reference": 3.0, "dgl": 2.0})[0] == "dgl"
    assert measurements.ladder_order(["fused+pinned", "pyg", "reference", "fused"]) == [
        "reference", "fused", "fused+pinned", "pyg"]


def test_with_not_run_appends_a_row_per_name_with_its_reason() -> None:
    table = pd.DataFrame({"pipeline": ["fused"], "epoch (s)": [1.5]})
    assert with_not_run(table, "pipeline", {}) is table
    both = with_not_run(table, "pipeline", {"dgl": "no DGL"})
    assert both["pipeline"].tolist() == ["fused", "dgl"]
    assert both["status"].tolist() == ["run", "not run: no DGL"]
    assert pd.isna(both.at[1, "epoch (s)"])


def test_the_gpu_ladder_draws_the_paper_only_over_dgls_pipeline() -> None:
    rows = pd.DataFrame({"machine": ["H200"] * 2, "pipeline": ["reference", "fused+pinned"],
                         "speedup": [1.0, 7.0]})
    for paper in (None, (1.8, "paper: 1.80x vs DGL")):
        fig = plots.gpu_bars(rows, "pipeline", "speedup", "x", "title", "note", paper=paper,
                             footnote=None if paper else "over our reference")
        labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
        assert ("paper: 1.80x vs DGL" in labels) == (paper is not None)
        assert any("over our reference" in t.get_text() for t in fig.texts) == (paper is None)


def test_a_gpu_session_over_the_reference_carries_no_paper_ratio(tmp_path: Path) -> None:
    result = {"pipelines": {name: {"epoch_s": s, "test_acc": 0.8} for name, s in
                            (("reference", 20.0), ("fused+pinned", 4.0))}}
    (tmp_path / "end-to-end.json").write_text(json.dumps(result))
    session = gpu_results.GpuSession(tmp_path, {"machine": {"gpu": "H200"}})
    rows = gpu_results.gpu_end_to_end([session]).set_index("pipeline")
    assert rows.at["fused+pinned", "speedup"] == 5.0 and rows["baseline"].eq("reference").all()
    assert rows["paper_speedup"].isna().all()  # the paper's 1.80x is over DGL's pipeline


def test_machine_slug_names_the_gpu() -> None:
    slug = _module("gpu_notebooks").machine_slug
    assert slug("NVIDIA H100 80GB HBM3") == "h100" and slug("NVIDIA H200") == "h200"
    assert slug(None) == "unknown" and slug("  ") == "unknown" and slug("A100/x") == "a100x"


def test_the_gpu_parameters_are_valid_notebook_parameters() -> None:
    values = yaml.safe_load((ROOT / "notebooks" / "params" / "gpu.yaml").read_text())
    params = Params.from_mapping(values | {"device": "cpu"})  # cuda needs a GPU to resolve
    assert values["device"] == "cuda" and params.scale >= 0.25 and params.train_repeats == 1


def test_install_lacking_installs_only_what_python_lacks(tmp_path: Path) -> None:
    install_lacking = _module("gpu_machine").install_lacking
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "pytest-0.0.1-py3-none-any.whl").write_bytes(b"")  # present: left alone
    (wheels / "no_such_dist-1.0-py3-none-any.whl").write_bytes(b"not a wheel")
    status = install_lacking(wheels, tmp_path / "site")
    assert status == {"pytest": "present", "no-such-dist": "missing"}
    assert install_lacking(tmp_path / "absent", tmp_path / "site") == {}
