"""`python -m gnnrepro bench loader` on a tiny graph: structure, not speed."""
from __future__ import annotations

import json

import pytest
from helpers import require_dgl

from gnnrepro.__main__ import main

ARGS = ["bench", "loader", "--scale", "0.002", "--fanouts", "4,3", "--batch-size", "64",
        "--threads", "1", "--rounds", "2"]


pytestmark = pytest.mark.usefixtures("bench_env")


def test_bench_loader_delivers_the_same_batches_side_by_side(tmp_path, capsys):
    require_dgl()
    out = tmp_path / "loader.json"
    assert main(ARGS + ["--pipelines", "dgl,fused,fused+pinned", "--step-ms", "2",
                        "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    runs = result["pipelines"]
    assert list(runs) == ["dgl", "fused", "fused+pinned"]
    assert len({r["batches"] for r in runs.values()}) == 1  # the same batches per epoch
    batches = runs["dgl"]["batches"]
    for name, r in runs.items():
        assert len(r["epochs_s"]) == 2 and r["epoch_s_min"] <= r["epoch_s"] <= r["epoch_s_max"]
        assert r["epoch_s_min"] >= batches * 0.002, name  # the stand-in step ran per batch
        assert r["batches_per_s"] == pytest.approx(batches / r["epoch_s"])
    assert result["speedup_vs_dgl"]["dgl"] == 1.0
    assert result["params"]["step_ms"] == 2.0 and "standing in" in result["params"]["step_note"]
    assert sorted(map(sorted, result["params"]["round_orders"])) == [sorted(runs)] * 2
    assert "2.0 ms busy-wait" in capsys.readouterr().out
    # with a step on the trainer's core, workers resolve as for training
    from gnnrepro.config import resolve_workers
    assert result["params"]["resolved"]["fused+pinned"]["workers"] == resolve_workers(None, "cpu")


def test_the_pipeline_alone_gives_fused_pinned_a_worker_per_thread(tmp_path):
    out = tmp_path / "loader.json"
    assert main(["bench", "loader", "--scale", "0.002", "--fanouts", "4,3", "--batch-size",
                 "64", "--threads", "2", "--rounds", "1", "--pipelines", "fused,fused+pinned",
                 "--out", str(out)]) == 0
    resolved = json.loads(out.read_text())["params"]["resolved"]
    assert resolved["fused+pinned"]["workers"] == 2 and resolved["fused"]["workers"] == 0


def test_bench_loader_rejects_bad_options(capsys):
    for option, value in (("--step-ms", "-1"), ("--rounds", "0"), ("--pipelines", "x")):
        with pytest.raises(SystemExit):
            main(ARGS + [option, value])
        assert option.lstrip("-").replace("-", "_") in capsys.readouterr().err or \
            option == "--pipelines"
