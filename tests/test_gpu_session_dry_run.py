"""The GPU session's `--dry-run` (benchmarks/gpu_session.py) where there is no GPU: it runs every
step and writes every file; `--steps` runs only the named steps and what they need. Apart from
test_gpu_session.py: no step here is bound in seconds, so this file runs beside the others (the
Makefile's SERIAL_TESTS)."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from gnnrepro.experiments.gpu_results import GpuSession

ROOT = Path(__file__).resolve().parents[1]
FILES = {"session.json", "session.log", "results.tar.gz"}
MEASUREMENTS = {"placements.json", "copy-overlap.json", "end-to-end.json", "h2d.json",
                "temporal-sampling.json", "sampler-threads.json"}


@pytest.fixture(scope="module")
def data_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """One dataset cache for this file's sessions: each builds its dataset step from it, as a
    second call within one loan does, rather than generating the same data again."""
    return dict(os.environ, GNNREPRO_DATA=str(tmp_path_factory.mktemp("data")))


def test_dry_run_runs_every_step_and_writes_every_file(tmp_path: Path,
                                                      data_env: dict[str, str]) -> None:
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "benchmarks/gpu_session.py", "--dry-run", "--out",
                          str(out), "--commit", "abc1234", "--wheels", str(tmp_path / "none"),
                          "--pyg-wheels", str(tmp_path / "none")],
                         cwd=ROOT, env=data_env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    pyg_ran = importlib.util.find_spec("torch_sparse") is not None  # else no wheel to install
    assert {p.name for p in out.iterdir()} == FILES  # at most 8 come back
    with tarfile.open(out / "results.tar.gz") as tar:
        assert set(tar.getnames()) == MEASUREMENTS | ({"own-model-pyg.json"} if pyg_ran
                                                      else set())
    report = json.loads((out / "session.json").read_text())
    stored = GpuSession(out, report)  # read as a stored session is
    assert report["dry_run"] and report["commit"] == "abc1234" and report["scale"] == 0.002
    steps = report["steps"]
    names = list(steps)
    assert names[:7] == ["dataset", "build", "tests-gpu", "memcheck", "racecheck", "placements",
                         "copy-overlap"]
    assert names[-5:] == ["h2d", "mlperf-rgat", "own-model-pyg", "temporal-sampling",
                          "sampler-threads"]
    assert len(names) >= 15 and all(name.startswith("end-to-end-") for name in names[7:-5])
    temporal = stored.result("temporal-sampling")  # every contender, on the CPU here
    assert temporal["params"]["sampler_device"] == "cpu"
    assert set(temporal["samplers"]) == {"uniform", "disjoint", "temporal-all", "temporal",
                                         "temporal-last", "temporal-exclude",
                                         "temporal-weighted"}
    threads = stored.result("sampler-threads")  # both relabels and the read rate per count
    assert set(threads["relabel"]) == set(threads["random_reads"]) == {"1", "2"}
    assert all(ms > 0 for both in threads["relabel"].values() for ms in both.values())
    mlperf = report["mlperf_rgat"]  # the preset ran, on igbh-sim, with its own settings
    assert mlperf["params"]["model"] == "rgat-mlperf" and mlperf["params"]["batch_size"] == 1024
    assert mlperf["params"]["fanouts"] == [5, 10, 15] and mlperf["dataset"]["name"] == "igbh-sim"
    assert report["figures"]["mlperf_rgat"]["steps"] == 1
    if not pyg_ran:
        assert steps["own-model-pyg"]["status"].startswith("skipped: torch_sparse is not "
                                                            "installed")
    assert all(step["ok"] for step in steps.values()), steps
    assert steps["memcheck"]["status"] == "skipped: no CUDA device"
    assert steps["build"]["errors_reach_python"] is True
    assert report["figures"]["tests_gpu"]["passed"] > 0
    placements = stored.result("placements")
    assert set(placements["samplers"]) == {"fused-cpu", "unfused-cpu"}
    # The headline figures are read as a stored GPU session's: none on the CPU, the ladder's
    # epochs against its baseline.
    assert report["figures"]["sampling"][0]["machine"] == "GPU: not measured"
    rungs = {row["pipeline"]: row for row in report["figures"]["end_to_end"]}
    base = report["figures"]["end_to_end"][0]["baseline"]  # DGL's pipeline where DGL imports
    assert base in ("dgl", "reference") and rungs[base]["speedup"] == 1.0
    assert rungs["fused+pinned"]["speedup"] > 0
    ladder = stored.result("end-to-end")
    assert stored.result("nothing-such") is None
    assert {"reference", "fused", "fused+pinned"} <= set(ladder["pipelines"])
    assert sorted(ladder["params"]["pipelines"]) == sorted(ladder["rungs"])
    log = (out / "session.log").read_text()
    assert "== placements" in log and "passed" in log


def test_steps_runs_only_the_named_steps_with_what_they_need(tmp_path: Path,
                                                            data_env: dict[str, str]) -> None:
    out = tmp_path / "out"
    command = [sys.executable, "benchmarks/gpu_session.py", "--dry-run", "--out", str(out),
               "--pyg-wheels", str(tmp_path / "none")]
    wrong = subprocess.run(command + ["--steps", "pyg,sanitiser"], cwd=ROOT, env=data_env,
                           capture_output=True, text=True, timeout=120)
    assert wrong.returncode == 2 and "--steps: ['sanitiser'] not among" in wrong.stderr
    assert not out.exists()
    run = subprocess.run(command + ["--steps", "pyg"], cwd=ROOT, env=data_env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    report = json.loads((out / "session.json").read_text())
    assert report["steps_asked"] == ["pyg"]
    assert list(report["steps"]) == ["dataset", "build", "own-model-pyg"]
    assert report["steps"]["dataset"]["ok"] and report["steps"]["build"]["ok"]


def test_the_ranks_window_runs_alone_and_keeps_its_results(tmp_path: Path,
                                                           data_env: dict[str, str]) -> None:
    """`--steps ranks,projection` (issue 49 items 3 and 4's window): the build, the rank
    equivalence and the projection of k ranks beside the k ranks it can run, rehearsed with
    CPU ranks over gloo."""
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "benchmarks/gpu_session.py", "--dry-run", "--out",
                          str(out), "--steps", "ranks,projection"], cwd=ROOT, env=data_env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    report = json.loads((out / "session.json").read_text())
    assert list(report["steps"]) == ["dataset", "build", "rank-equivalence",
                                     "scaling-projection"]
    session = GpuSession(out, report)
    rows = session.result("rank-equivalence")["rows"]
    assert [r["world_size"] for r in rows] == [1, 2, 2] and rows[1]["ranks_identical"]
    assert rows[2]["data"] == "own copy per rank"
    assert rows[1]["relative_difference"] <= 1e-5
    projected = session.result("scaling-projection")["rows"]
    assert [(r["pipeline"], r["world_size"]) for r in projected] == [("fused+pinned", 1),
                                                                      ("fused+pinned", 2)]
    for row in projected:  # every k ran here: each projection has its measured epoch
        assert row["epoch_s"] > 0 and row["measured_epoch_s"] > 0
        assert row["error"] == pytest.approx(row["epoch_s"] / row["measured_epoch_s"] - 1)
