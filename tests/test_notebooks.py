"""The notebooks behind `make figures`: each runs through papermill with
notebooks/params/smoke.yaml into a temp dir and writes sane numbers, tables and figures; the
committed notebooks carry no outputs, declare every parameter with help, and reject parameters
they do not declare."""
from __future__ import annotations

import importlib.util
import math
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
import yaml

from gnnrepro.baselines.dgl_import import dgl_available
from gnnrepro.experiments.params import Params
from helpers import require_dgl

papermill = pytest.importorskip("papermill")  # the notebooks extra
nbformat = pytest.importorskip("nbformat")

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = ["01_stage_breakdown", "02_sampling_speedup", "03_end_to_end", "04_scaling",
             "05_sensitivity", "06_storage", "07_partitioned", "08_scale_growth",
             "09_heterogeneous", "10_link_prediction"]
NEEDS_DGL = {"01_stage_breakdown", "02_sampling_speedup", "03_end_to_end", "04_scaling",
             "10_link_prediction"}
FIGURES = {"03_end_to_end": ["03_end_to_end", "03_end_to_end_timeline", "03_pipeline_alone"]}


def load_generator():
    """notebooks/make_notebooks.py (a script, not a package module)."""
    spec = importlib.util.spec_from_file_location("make_notebooks",
                                                  NOTEBOOK_DIR / "make_notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Where the smoke runs write figures/ and results/; the kernels build their datasets in a
    private cache and find no peers' environments, so the peers are listed as not run (they
    inherit the environment)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GNNREPRO_DATA", str(tmp_path_factory.mktemp("data")))
        mp.setenv("GNNREPRO_PEERS", str(tmp_path_factory.mktemp("no-peers")))
        yield tmp_path_factory.mktemp("out")


def execute(name: str, out_dir: Path, **extra) -> Path:
    """Run notebook `name` with the smoke parameters (+ extra); return the executed copy."""
    values = yaml.safe_load((NOTEBOOK_DIR / "params" / "smoke.yaml").read_text())
    executed = out_dir / "executed" / f"{name}.ipynb"
    executed.parent.mkdir(parents=True, exist_ok=True)
    papermill.execute_notebook(str(NOTEBOOK_DIR / f"{name}.ipynb"), str(executed),
                               parameters=values | {"out_dir": str(out_dir)} | extra,
                               kernel_name="python3", progress_bar=False)
    return executed


def stored_data(out_dir: Path, name: str) -> pd.DataFrame:
    """The tidy CSV the notebook stored under results/<name>/<hash>/ (exactly one)."""
    runs = list((out_dir / "results" / name).glob("*/run.json"))
    assert len(runs) == 1, runs
    return pd.read_csv(runs[0].parent / "data.csv")


def check_outputs(out_dir: Path, name: str) -> None:
    figures = out_dir / "figures" / "smoke"  # smoke.yaml's figures_name
    for stem in FIGURES.get(name, [name]):
        for ext in (".png", ".pdf"):
            assert (figures / f"{stem}{ext}").stat().st_size > 1000, stem + ext
    for ext in (".csv", ".md", ".tex"):
        assert (figures / f"{name}{ext}").stat().st_size > 0, name + ext
    assert r"\toprule" in (figures / f"{name}.tex").read_text()
    assert not [p for p in out_dir.rglob("*.tmp")], "an atomic write left a temp file"


def check_accuracy(values: pd.Series) -> None:
    assert values.between(0, 1).all(), values.tolist()


def check_values(out_dir: Path, name: str) -> None:
    """The stored numbers are measurements: positive times, finite speedups, accuracies."""
    if name == "01_stage_breakdown":
        data = stored_data(out_dir, name)
        assert set(data["pipeline"]) == {"dgl", "dgl-native", "fused", "fused+pinned"}
        assert (data["work_s"] > 0).all() and (data["epoch_s"] > 0).all()
        assert data.groupby("pipeline")["share_of_work"].sum().round(6).eq(1).all()
    elif name == "02_sampling_speedup":
        data = stored_data(out_dir, name)
        assert set(data["sampler"]) == {"dgl-unfused", "dgl-fused", "reference", "fused"}
        assert (data["ms_per_batch"] > 0).all() and (data["edges_per_s"] > 0).all()
        assert data["fused_speedup"].map(math.isfinite).all()
        assert (data.loc[data["sampler"] == "fused", "fused_speedup"] == 1).all()
        assert data.set_index("sampler").at["dgl-unfused", "paper_speedup"] == 1.52
        assert data.loc[data["sampler"] != "dgl-unfused", "paper_speedup"].isna().all()
        temporal = stored_data(out_dir, "02_temporal_sampling").set_index("sampler")
        assert set(temporal.index) == {"uniform", "disjoint", "temporal-all", "temporal",
                                       "temporal-last", "temporal-exclude",
                                       "temporal-weighted"}
        assert temporal.at["uniform", "cost_vs_uniform"] == 1 and (temporal["edges"] > 0).all()
        # every edge a candidate: disjoint sampling's picks, so as many edges
        assert temporal.at["temporal-all", "edges"] == temporal.at["disjoint", "edges"]
    elif name == "03_end_to_end":
        data = stored_data(out_dir, name)
        assert data["pipeline"].tolist() == ["dgl", "dgl-native", "fused", "fused+pinned"]
        assert (data["epoch_s"] > 0).all() and data["speedup_vs_dgl"].map(math.isfinite).all()
        assert data.set_index("pipeline").at["dgl-native", "speedup_vs_dgl_native"] == 1.0
        reached = data["epochs_to_target"].dropna()
        assert (reached >= 1).all() and reached.map(float.is_integer).all()
        check_accuracy(data["val_acc"])
        check_accuracy(data["test_acc"])
        alone = stored_data(out_dir, f"{name}_pipeline_alone")
        assert alone["pipeline"].tolist() == ["dgl", "fused", "fused+pinned"]
        assert (alone["batches_per_s"] > 0).all()
        assert (alone["epoch_s_min"] <= alone["epoch_s"]).all()
        assert alone.set_index("pipeline").at["dgl", "speedup_vs_dgl"] == 1.0
    elif name == "04_scaling":
        table = (pd.read_csv(out_dir / "figures" / "smoke" / "04_scaling.csv")
                 .set_index("world size"))
        assert table.index.tolist() == [1, 64]
        assert table.at[1, "status"] == "run" and table.at[1, "dgl epoch (s)"] > 0
        assert math.isfinite(table.at[1, "speedup vs dgl (x)"])
        assert table.at[64, "status"] == "not run" and "needs 64" in table.at[64, "reason"]
        ran = stored_data(out_dir, name).query("status == 'run'")
        check_accuracy(ran["test_acc"])
        projection = pd.read_csv(out_dir / "figures" / "smoke" / "04_scaling_projection.csv")
        assert set(projection["kind"]) == {"measured", "projected"}  # the stored CPU check
        assert (out_dir / "figures" / "smoke" / "04_scaling_projection.png").exists()
    elif name == "05_sensitivity":
        data = stored_data(out_dir, name)
        ran = data[data["status"] == "run"]
        assert set(ran["axis"]) == {"batch_size", "fanouts", "workers", "placement"}
        assert (ran["epoch_s"] > 0).all() and (ran["seeds_per_s"] > 0).all()
        check_accuracy(ran["test_acc"])
        assert (data.loc[data["axis"] == "streams", "status"] == "not run").all()
    elif name == "06_storage":
        data = stored_data(out_dir, name)
        assert set(data["store"]) == {"memory", "disk", "mmap", "lmdb"}
        assert data["error"].isna().all(), data["error"].tolist()
        assert data["rows_identical"].all() and (data["rows_per_s"] > 0).all()
        assert (data.loc[data["store"] == "disk", "budget"].sort_values().tolist()
                == [0.02, 0.05, 0.10])
    elif name == "07_partitioned":
        data = stored_data(out_dir, name)
        ours = data[data["system"] == "ours"].set_index("machines")
        assert ours.index.tolist() == [1, 2] and (ours["epoch_s"] > 0).all()
        assert ours["blocks_identical"].astype(bool).all()
        assert ours.at[1, "feature_bytes_per_batch"] == 0 < ours.at[2, "feature_bytes_per_batch"]
        check_accuracy(ours["test_acc"])
        dgl = data[data["system"] == "dgl"]
        assert (dgl["status"] == "run").sum() + dgl["reason"].notna().sum() == len(dgl) == 2
    elif name == "08_scale_growth":
        everything = stored_data(out_dir, name)
        data = everything[everything["dataset"] == "products-sim"]
        assert sorted(set(data["scale"])) == [0.002, 0.003]
        assert set(data["system"]) == {"ours", "dgl"} and len(data) == 4
        bigger = data.sort_values("scale").groupby("system")["edges"].apply(list)
        assert all(small < large for small, large in bigger)
        for column in ("sample_ms", "loader_batches_per_s", "epoch_s", "peak_rss_gb"):
            assert (data[column] > 0).all(), column
        check_accuracy(data["test_acc"])
        if dgl_available():  # 03 ran before it: at the notebooks' own scale, 01-03's run
            ladder = stored_data(out_dir, "03_end_to_end").set_index("pipeline")
            own = data[data["scale"] == 0.002].set_index("system")
            assert own.at["ours", "epoch_s"] == ladder.at["fused+pinned", "epoch_s"]
            assert own.at["dgl", "epoch_s"] == ladder.at["dgl", "epoch_s"]
        papers = everything[everything["dataset"] == "papers-sim"].set_index("system")
        assert papers.index.tolist() == ["ours", "dgl"] and (papers["sample_ms"] > 0).all()
        assert papers.at["ours", "features"] == "disk" and papers.at["ours", "epoch_s"] > 0
        assert papers.at["ours", "peak_rss_gb"] > 0 and math.isnan(papers.at["dgl", "epoch_s"])
        assert "sampled on" in papers.at["ours", "eval_methods"]
    elif name == "09_heterogeneous":  # DGL's rows run where DGL imports, else say why not
        data = stored_data(out_dir, name)
        sampling = data[data["part"] == "sampling"]
        assert sampling["fanouts"].unique().tolist() == ["4,3", "2,2,2"]
        ran = sampling[sampling["status"] == "run"]
        assert set(ran["name"]) == ({"dgl-unfused", "dgl-fused", "fused"} if dgl_available()
                                    else {"fused"})
        assert (ran["ms_per_batch"] > 0).all() and (ran["edges"] > 0).all()
        assert (ran.loc[ran["name"] == "fused", "fused_speedup"] == 1).all()
        pipelines = data[data["part"] == "pipeline"].set_index("name")
        assert pipelines.index.tolist()[:2] == ["dgl", "fused+pinned"]
        ours = pipelines.loc["fused+pinned"]
        assert ours["epoch_s"] > 0 and ours["batches_per_s"] > 0 and ours["fanouts"] == "4,3"
        trained = pipelines.loc[["dgl", "fused+pinned"]]
        check_accuracy(trained.loc[trained["status"] == "run", "test_acc"])
        assert (pipelines.loc["dgl", "status"] == "run") == dgl_available()
        peers = pipelines.iloc[2:]  # the pipeline alone only; a peer not set up says why
        assert set(peers.index) == {"graphbolt", "pyg"}
        assert all(p["batches_per_s"] > 0 if p["status"] == "run" else bool(p["reason"])
                   for _, p in peers.iterrows())
    elif name == "10_link_prediction":
        for stored in (name, "10_link_prediction_typed"):  # citation-sim, then mag-sim's cites
            data = stored_data(out_dir, stored).set_index("pipeline")
            assert sorted(data.index) == ["dgl", "fused"] and (data["s_per_step"] > 0).all()
            assert data["val_mrr"].between(0, 1).all() and data["test_mrr"].between(0, 1).all()
            assert data.at["fused", "speedup"] == pytest.approx(
                data.at["dgl", "s_per_step"] / data.at["fused", "s_per_step"])


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs_with_smoke_parameters(name, out_dir):
    if name in NEEDS_DGL:
        require_dgl()
    executed = nbformat.read(execute(name, out_dir), as_version=4)
    assert any(cell.get("outputs") for cell in executed.cells if cell.cell_type == "code")
    if name in ("02_sampling_speedup", "03_end_to_end"):  # no peers set up: listed, with how
        printed = "".join(out.get("text", "") for cell in executed.cells
                          for out in cell.get("outputs", []))
        assert "graphbolt: not run - not set up" in printed and "make peers" in printed
    check_outputs(out_dir, name)
    check_values(out_dir, name)


def test_unknown_parameter_fails_with_a_clear_message(tmp_path):
    with pytest.raises(papermill.PapermillExecutionError,
                       match=r"unknown parameter\(s\): 'epoch' \(did you mean 'epochs'\?\)"):
        execute("04_scaling", tmp_path, epoch=2)
    assert not (tmp_path / "figures").exists()


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_committed_notebook_is_clean_and_generated(name):
    path = NOTEBOOK_DIR / f"{name}.ipynb"
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata.kernelspec.name == "python3"
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert all(not cell.outputs and cell.execution_count is None for cell in code)
    tagged = [cell for cell in nb.cells if "parameters" in cell.metadata.get("tags", [])]
    assert len(tagged) == 1
    assert path.read_text() == load_generator().render(name), \
        "stale notebook: run .venv/bin/python notebooks/make_notebooks.py"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_parameter_is_declared_with_help(name):
    declared = papermill.inspect_notebook(str(NOTEBOOK_DIR / f"{name}.ipynb"))
    assert sorted(declared) == sorted(Params.names())
    assert all(p["help"] for p in declared.values())
    # The parameters the notebook's result depends on come first, then the others' (accepted
    # so that one file serves all) under a comment that says this notebook ignores them.
    generator = load_generator()
    used = set(generator.USED[name]) | set(generator.OUTPUT)
    assert used <= set(Params.names()) and len(used) < len(declared)
    names = list(declared)
    assert set(names[:len(used)]) == used
    assert generator.OTHERS_NOTE in generator.parameters_source(name)
