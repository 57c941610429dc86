"""`python -m gnnrepro bench end-to-end` on a tiny graph: structure, not speed."""
from __future__ import annotations

import json

import pytest
import torch

from gnnrepro.__main__ import main
from gnnrepro.bench.end_to_end import epochs_to_reach, format_table
from gnnrepro.pipeline import STAGES
from helpers import require_dgl

ARGS = ["bench", "end-to-end", "--scale", "0.002", "--fanouts", "4,3", "--batch-size", "64",
        "--epochs", "2", "--threads", "1", "--hidden", "16"]


pytestmark = pytest.mark.usefixtures("bench_env")


def test_bench_end_to_end_writes_side_by_side_json(tmp_path, capsys):
    require_dgl()
    out = tmp_path / "train.json"
    assert main(ARGS + ["--pipelines", "dgl,fused,fused+pinned", "--timeline-batches", "2",
                        "--workers", "1", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert list(result["pipelines"]) == ["dgl", "fused", "fused+pinned"]
    for name, r in result["pipelines"].items():
        assert len(r["epochs_s"]) == 2 and r["epoch_s"] == r["epochs_s"][1], name
        assert set(r["stages"]) == set(STAGES)
        assert all(r["stages"][s]["work_s"] > 0 for s in STAGES), name
        assert 0 <= r["val_acc"] <= 1 and 0 <= r["test_acc"] <= 1
        assert r["peak_rss_bytes"] > 2**20
        assert {s["batch"] for s in r["timeline"]} == {0, 1}
    assert result["pipelines"]["fused+pinned"]["stages"]["sample"]["exposed_s"] is None
    assert result["params"]["resolved"]["fused+pinned"]["workers"] == 1
    assert result["speedup_vs_dgl"]["dgl"] == 1.0
    assert result["speedup_vs_dgl"]["fused"] == pytest.approx(
        result["pipelines"]["dgl"]["epoch_s"] / result["pipelines"]["fused"]["epoch_s"])
    # One round: its ratio is the pooled one.
    assert result["speedup_vs_dgl_rounds"]["fused"] == [
        pytest.approx(result["speedup_vs_dgl"]["fused"])]
    # Same batches, same initial weights: the overlapped pipeline trains the identical model.
    assert result["pipelines"]["fused"]["loss"] == result["pipelines"]["fused+pinned"]["loss"]
    assert result["dataset"]["num_train"] > 0 and result["env"]["versions"]["torch"]
    assert "fused+pinned" in capsys.readouterr().out


def test_bench_end_to_end_compares_dgls_whole_stack_and_counts_epochs_to_a_target(tmp_path,
                                                                                  capsys):
    require_dgl()
    out = tmp_path / "train.json"
    assert main(ARGS + ["--pipelines", "dgl,dgl-native,fused", "--target-acc", "0.05",
                        "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["params"]["model"] == {"dgl": "GraphSAGE-mean",
                                         "dgl-native": "DGL SAGEConv-mean",
                                         "fused": "GraphSAGE-mean"}
    native = result["speedup_vs_dgl_native"]
    assert native["dgl-native"] == 1.0
    assert native["fused"] == pytest.approx(
        result["pipelines"]["dgl-native"]["epoch_s"] / result["pipelines"]["fused"]["epoch_s"])
    for r in result["pipelines"].values():
        accs = r["val_acc_epochs"]
        assert len(accs) == 2 and all(0 <= a <= 1 for a in accs)
        assert accs[-1] == r["val_acc"]  # the last epoch's evaluation is the final one
        assert r["epochs_to_target"] == epochs_to_reach(accs, 0.05)
    table = capsys.readouterr().out
    assert "vs native" in table and "to 0.05" in table


def test_a_dgl_users_model_on_dgls_loader_and_on_ours(tmp_path):
    """--model dgl-sage: DGL's example model on both loaders, from the same initial weights;
    the model starts the same, so the first epoch's loss differs only through the batches."""
    require_dgl()
    out = tmp_path / "train.json"
    assert main(ARGS + ["--pipelines", "dgl-native,fused+pinned", "--model", "dgl-sage",
                        "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["params"]["model"] == {"dgl-native": "DGL SAGEConv-mean",
                                         "fused+pinned": "DGL SAGEConv-mean"}
    assert result["params"]["model_option"] == "dgl-sage"
    assert set(result["speedup_vs_dgl_native"]) == {"dgl-native", "fused+pinned"}
    with pytest.raises(ValueError, match="model must be one of"):
        from gnnrepro.bench.end_to_end import measure
        from gnnrepro.config import TrainConfig
        measure(TrainConfig(), model="gat")


def test_a_pyg_users_model_on_ours(tmp_path):
    pytest.importorskip("torch_geometric")
    out = tmp_path / "train.json"
    assert main(ARGS + ["--pipelines", "fused+pinned", "--model", "pyg-sage",
                        "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["params"]["model"] == {"fused+pinned": "PyG SAGEConv-mean"}
    assert 0 <= result["pipelines"]["fused+pinned"]["test_acc"] <= 1


def test_epochs_to_reach_counts_the_first_epoch_at_or_above_the_target():
    assert epochs_to_reach([0.2, 0.5, 0.4, 0.7], 0.5) == 2
    assert epochs_to_reach([0.2, None, 0.6], 0.6) == 3
    assert epochs_to_reach([0.2, 0.3], 0.9) is None
    assert epochs_to_reach([], 0.1) is None


@pytest.mark.parametrize("bad", ["0", "1.5", "x"])
def test_bench_end_to_end_rejects_a_bad_target_accuracy(bad, capsys):
    with pytest.raises(SystemExit):
        main(ARGS + ["--target-acc", bad])
    assert "target_acc" in capsys.readouterr().err


@pytest.mark.parametrize("bad, error", [(1.5, ValueError), (0, ValueError), (True, TypeError)])
def test_measure_names_a_bad_target_accuracy(bad, error):
    from gnnrepro.bench.end_to_end import measure
    from gnnrepro.config import TrainConfig
    with pytest.raises(error, match="target_acc"):
        measure(TrainConfig(), target_acc=bad)


def test_bench_end_to_end_repeats_alternate_the_order_and_pool(tmp_path):
    out = tmp_path / "train.json"
    assert main(ARGS + ["--pipelines", "reference,fused", "--repeats", "2", "--epochs", "1",
                        "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["params"]["round_orders"] == [["reference", "fused"], ["fused", "reference"]]
    assert result["speedup_vs_dgl"] == {} and result["speedup_vs_dgl_rounds"] == {}
    for r in result["pipelines"].values():
        assert len(r["epochs_s"]) == 2  # one epoch per round; all epochs count when only one


def test_bench_end_to_end_failures_raise_with_the_cause(capsys):
    """Bad options stop at argparse with the setting's own message; a run that fails in its
    child raises naming the pipeline, with the child's traceback."""
    for option, value, message in (("--pipelines", "fused,nope", "subset of"),
                                   ("--workers", "-1", "workers must be >= 0"),
                                   ("--fanouts", "4,-2", "fanouts[1] must be >= -1")):
        with pytest.raises(SystemExit):
            main(ARGS + [option, value])
        assert message in capsys.readouterr().err, option
    if torch.cuda.is_available():
        pytest.skip("feature_source='uva' runs where CUDA exists")
    uva = ARGS + ["--pipelines", "fused", "--feature-source", "uva"]
    with pytest.raises(RuntimeError, match="(?s)pipeline 'fused'.*raised: .*"
                                           "feature_source='uva' needs a CUDA device"):
        main(["--debug", *uva])
    capsys.readouterr()
    assert main(uva) == 2  # the child's ValueError is a usage error: its line, no traceback
    err = capsys.readouterr().err
    assert "pipeline 'fused'" in err and "feature_source='uva' needs a CUDA device" in err
    lines = err.strip().splitlines()  # progress lines, then the error and its hint
    assert "Traceback" not in err and lines[-2].startswith("python -m gnnrepro: error: ")


def test_format_table_explains_a_wait_above_the_work():
    stages = {s: {"work_s": 1.0, "exposed_s": 0.5} for s in STAGES}
    row = {"epoch_s": 3.0, "stages": stages, "test_acc": 0.8, "peak_rss_bytes": 2**30}
    result = {"pipelines": {"dgl": row}, "speedup_vs_dgl": {"dgl": 1.0}}
    assert format_table(result).splitlines()[-1] == \
        "w/e: seconds of work / seconds the loop waited for it, per epoch"
    stages["extract"] = {"work_s": 0.1, "exposed_s": 0.2}
    assert "; dgl extract: the wait includes the loader's own time" in format_table(result)
