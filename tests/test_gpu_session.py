"""The GPU session (benchmarks/gpu_session.py) rehearsed where there is no GPU (its `--dry-run`:
test_gpu_session_dry_run.py): a step past its time is stopped with its process group and
later steps are skipped, never waited on; without a GPU (and without --dry-run) it refuses
before building; modules come from carried wheels only; its parsers read what pytest and
compute-sanitizer print."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from helpers import load_script

ROOT = Path(__file__).resolve().parents[1]


def _session_module():
    return load_script(ROOT / "benchmarks" / "gpu_session.py")


def test_a_dataset_no_step_waited_for_is_stopped_and_not_counted_as_failed(tmp_path) -> None:
    """As after a failed build with `--steps pyg`: the build's failure is the session's, the
    background dataset it never used is not; a dataset that a step waited for keeps its status."""
    session = _session_module()
    s = session.Session(tmp_path / "out", dry_run=True, deadline_s=60, env=dict(os.environ))
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                               start_new_session=True)
    s.report["steps"]["dataset"] = {"status": "running", "ok": False, "seconds": 0.0}
    session.settle_dataset(s, sleeper)
    assert sleeper.poll() is not None, "still running"
    assert s.report["steps"]["dataset"] == {"status": "not used: no step waited for it",
                                            "ok": True, "seconds": 0.0}
    failed = {"status": "failed: exit 1", "ok": False, "seconds": 3.0}
    s.report["steps"]["dataset"] = dict(failed)
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()
    session.settle_dataset(s, finished)
    assert s.report["steps"]["dataset"] == failed
    session.settle_dataset(s, None)


def test_a_step_past_its_time_is_stopped_and_later_ones_skipped(tmp_path: Path) -> None:
    session = _session_module()
    s = session.Session(tmp_path / "out", dry_run=True, deadline_s=8.0, env=dict(os.environ))
    marker = tmp_path / "child.pid"
    start = time.monotonic()
    # A shell that starts a child of its own: the whole group must go, not only the shell.
    step = s.run("sleeper", ["bash", "-c", f"sleep 60 & echo $! > {marker}; wait"],
                 timeout_s=2.5)
    assert time.monotonic() - start < 15
    assert step["status"].startswith("timed out") and not step["ok"]
    child = int(marker.read_text())
    with pytest.raises(ProcessLookupError):
        for _ in range(50):  # the SIGTERM reaches it at once; reaping may take a moment
            os.kill(child, 0)
            time.sleep(0.1)
    late = s.run("late", [sys.executable, "-c", "print('never')"], timeout_s=60.0,
                 reserve_s=6.0)
    assert late["status"].startswith("skipped:") and "deadline" in late["status"]
    report = json.loads((tmp_path / "out" / "session.json").read_text())
    assert set(report["steps"]) == {"sleeper", "late"}


def test_refuses_without_a_gpu_before_building(tmp_path: Path) -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the refusal is not what runs here")
    run = subprocess.run([sys.executable, "benchmarks/gpu_session.py", "--out",
                          str(tmp_path / "out")], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 2
    assert "no usable GPU here" in run.stderr and "--dry-run" in run.stderr
    assert "Traceback" not in run.stderr and not (tmp_path / "out").exists()


def _wheel(tmp_path: Path, name: str) -> Path:
    """A wheel of a one-module package `name`, built offline."""
    src = tmp_path / "src"
    (src / name).mkdir(parents=True)
    (src / name / "__init__.py").write_text("VALUE = 42\n")
    (src / "pyproject.toml").write_text(
        f'[project]\nname = "{name}"\nversion = "1.0"\n'
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n')
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-index",
                    "--no-build-isolation", "-w", str(wheels), str(src)], check=True,
                   timeout=300)
    return wheels


def test_missing_modules_come_from_the_carried_wheels_only(tmp_path: Path) -> None:
    session = _session_module()
    name = "gnnrepro_offline_probe"
    wheels = _wheel(tmp_path, name)
    site = tmp_path / "site"
    try:
        status = session.install_missing(["json", name, "no_such_module_anywhere"], wheels,
                                         site)
        assert status == {"json": "present", name: "installed",
                          "no_such_module_anywhere": "missing"}
        assert (site / name / "__init__.py").exists()
    finally:
        if str(site) in sys.path:
            sys.path.remove(str(site))
        sys.modules.pop(name, None)


def test_parsers_read_pytest_and_the_sanitizer() -> None:
    session = _session_module()
    log = ("....F\n=== short test summary info ===\nFAILED tests/x.py::t - boom\n"
           "1 failed, 222 passed, 60 skipped, 2 errors in 23.40s\n")
    assert session.pytest_counts(log) == {"failed": 1, "passed": 222, "skipped": 60,
                                          "errors": 2}
    assert session.pytest_counts("no summary") == {}
    # Under the sanitizer its own summary follows pytest's (as on the H100): pytest's counts.
    sanitized = ("....  [100%]\n124 passed, 149 deselected in 9.60s\n"
                 "========= ERROR SUMMARY: 0 errors\n")
    assert session.pytest_counts(sanitized) == {"passed": 124, "deselected": 149}
    assert session.pytest_counts("==== 3 passed in 1.20s (0:00:01) ====") == {"passed": 3}
    assert session.sanitizer_findings("========= ERROR SUMMARY: 3 errors\n", "memcheck") == 3
    assert session.sanitizer_findings("========= RACECHECK SUMMARY: 0 hazards displayed "
                                      "(0 errors, 0 warnings)", "racecheck") == 0
    assert session.sanitizer_findings("cut short", "memcheck") is None
    refused = ("========= COMPUTE-SANITIZER\n========= Error: Device not supported\n"
               "RuntimeError: CUDA error: unknown error (error 999)")
    assert session.sanitizer_refused(refused)
    assert not session.sanitizer_refused("========= ERROR SUMMARY: 0 errors")


def test_merged_ladder_keeps_every_rung() -> None:
    session = _session_module()

    def rung(name: str, epoch_s: float) -> dict:
        return {"params": {"pipelines": [name], "scale": 1.0}, "env": {"gpu": "G"},
                "pipelines": {name: {"epoch_s": epoch_s}}, "benchmark": "end-to-end"}
    ladder = session.merge_rungs(None, rung("reference", 20.0))
    ladder = session.merge_rungs(ladder, rung("fused+pinned", 4.0))
    assert ladder["params"]["pipelines"] == ["reference", "fused+pinned"]
    assert {n: p["epoch_s"] for n, p in ladder["pipelines"].items()} == \
        {"reference": 20.0, "fused+pinned": 4.0}
    assert set(ladder["rungs"]) == {"reference", "fused+pinned"}
    ladder = session.merge_rungs(ladder, rung("fused", 3.0), "fused@gpu")
    assert ladder["pipelines"]["fused@gpu"] == {"epoch_s": 3.0}
    assert ladder["params"]["pipelines"][-1] == "fused@gpu"


def test_gpu_rows_name_their_machine_or_say_not_measured(tmp_path: Path) -> None:
    from gnnrepro import plots
    from gnnrepro.experiments import gpu_results
    assert gpu_results.stored_gpu_sessions(tmp_path) == []
    for table in (gpu_results.gpu_sampling([]), gpu_results.gpu_end_to_end([]),
                  gpu_results.gpu_copy([])):
        assert table["machine"].tolist() == [gpu_results.NOT_MEASURED]
    fig = plots.gpu_bars(gpu_results.gpu_end_to_end([]), "pipeline", "speedup", "x", "title",
                         "run make gpu-session")
    assert any(gpu_results.NOT_MEASURED in t.get_text() for t in fig.axes[0].texts)
    # A rehearsal's session is no GPU result; a GPU session's rows carry its machine.
    rehearsal = tmp_path / "dry"
    rehearsal.mkdir()
    (rehearsal / "session.json").write_text(json.dumps({"dry_run": True, "machine": {}}))
    gpu = tmp_path / "gpu-x"
    gpu.mkdir()
    (gpu / "session.json").write_text(json.dumps({
        "dry_run": False, "commit": "abc1234",
        "machine": {"gpu": "Some GPU", "runtime": "firecracker", "torch": "2.11"}}))
    (gpu / "end-to-end.json").write_text(json.dumps({"pipelines": {
        "fused+pinned": {"epoch_s": 2.0, "test_acc": 0.8},
        "reference": {"epoch_s": 8.0, "test_acc": 0.8}}}))
    sessions = gpu_results.stored_gpu_sessions(tmp_path)
    assert [s.folder.name for s in sessions] == ["gpu-x"]
    rows = gpu_results.gpu_end_to_end(sessions)
    assert rows["pipeline"].tolist() == ["reference", "fused+pinned"]
    assert rows["speedup"].tolist() == [1.0, 4.0]
    assert rows["machine"].iloc[0] == "Some GPU (firecracker, torch 2.11, abc1234)"
    assert gpu_results.gpu_sampling(sessions)["machine"].tolist() == [gpu_results.NOT_MEASURED]
    assert "PyG" not in gpu_results.readme_block(sessions)  # no own-model-pyg.json: no row
    (gpu / "own-model-pyg.json").write_text(json.dumps({  # the peer failed: said, no ratio
        "pipelines": {"fused": {"epoch_s": 2.0}}, "peers": {},
        "peers_not_run": {"pyg": "Traceback ...\nRuntimeError: Not compiled with CUDA\n"}}))
    row = [line for line in gpu_results.readme_block(sessions).splitlines() if "PyG" in line]
    assert len(row) == 1 and "not run: RuntimeError: Not compiled with CUDA |" in row[0]
    assert "x**" not in row[0]
    (gpu / "own-model-pyg.json").write_text(json.dumps({
        "pipelines": {"fused": {"epoch_s": 2.0}}, "peers": {"pyg": {"epoch_s": 11.0}}}))
    row = [line for line in gpu_results.readme_block(sessions).splitlines() if "PyG" in line]
    assert len(row) == 1 and "**5.5x**" in row[0] and "own-model-pyg.json" in row[0]
    assert "without pyg-lib" in row[0] and "test accuracy" not in row[0]
    (gpu / "own-model-pyg.json").write_text(json.dumps({  # both evaluated on the same ids
        "pipelines": {"fused": {"epoch_s": 2.0, "test_acc": 0.71,
                                "eval_counts": {"val": 900, "test": 20000}}},
        "peers": {"pyg": {"epoch_s": 11.0, "test_acc": 0.7}}}))
    row = [line for line in gpu_results.readme_block(sessions).splitlines() if "PyG" in line]
    assert "same 20,000 ids: ours 0.710, PyG's 0.700" in row[0]


def test_a_session_stored_as_it_came_back_is_read_from_its_archive(tmp_path: Path) -> None:
    import tarfile

    from gnnrepro.experiments import gpu_results
    runner = load_script(ROOT / "benchmarks" / "gpu_runner.py")
    assert runner.ARCHIVE == gpu_results.RESULTS_ARCHIVE
    gpu = tmp_path / "gpu-y"
    (tmp_path / "kept").mkdir()
    gpu.mkdir()
    (gpu / "session.json").write_text(json.dumps({
        "dry_run": False, "commit": "def5678", "machine": {"gpu": "Other GPU"}}))
    (tmp_path / "kept" / "end-to-end.json").write_text(json.dumps({"pipelines": {
        "fused+pinned": {"epoch_s": 1.0}, "fused": {"epoch_s": 2.0},
        "reference": {"epoch_s": 3.0}}}))
    with tarfile.open(gpu / gpu_results.RESULTS_ARCHIVE, "w:gz") as tar:
        tar.add(tmp_path / "kept" / "end-to-end.json", arcname="end-to-end.json")
    [session] = gpu_results.stored_gpu_sessions(tmp_path)
    assert session.result("end-to-end")["pipelines"]["reference"]["epoch_s"] == 3.0
    assert session.result("placements") is None
    assert gpu_results.gpu_end_to_end([session])["speedup"].tolist() == [1.0, 1.5, 3.0]
    assert "gpu-y/results.tar.gz)" in gpu_results.readme_block([session])


def pure_wheel(folder: Path, name: str) -> Path:
    """A minimal pure-Python wheel of an empty package `name` in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-0.0.1-py3-none-any.whl"
    info = f"{name}-0.0.1.dist-info"
    files = {f"{name}/__init__.py": "",
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.0.1\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                              "Tag: py3-none-any\n"}
    files[f"{info}/RECORD"] = "".join(f"{f},,\n" for f in [*files, f"{info}/RECORD"])
    with zipfile.ZipFile(path, "w") as wheel:
        for member, text in files.items():
            wheel.writestr(member, text)
    return path


def test_the_pyg_step_installs_only_a_wheel_that_loads_and_wraps_the_peer_python(
        tmp_path: Path, monkeypatch) -> None:
    """Without torch_sparse and without its wheel the step says why; a wheel that does not
    install or load is named, not run; with torch_sparse there, the peer's Python is a wrapper
    that runs this Python with the install folder on its path."""
    peer = load_script(ROOT / "benchmarks" / "gpu_pyg_peer.py")
    notes: list[str] = []
    session = SimpleNamespace(env=dict(os.environ), note=notes.append)
    monkeypatch.setattr(peer.importlib.util, "find_spec", lambda name: None)
    monkeypatch.setattr(peer, "PEER_SITE", tmp_path / "site")
    why = peer.install_torch_sparse(session, sys.executable, tmp_path / "empty")
    assert why.startswith("skipped: torch_sparse is not installed") and "gpu-pyg-wheels" in why
    assert peer.pyg_peer_env(session, sys.executable, why) == why
    broken = tmp_path / "wheels"
    broken.mkdir()
    (broken / "torch_sparse-0.6.18-cp312-cp312-linux_x86_64.whl").write_bytes(b"not a zip")
    why = peer.install_torch_sparse(session, sys.executable, broken)
    assert why.startswith("skipped: torch_scatter is not installed"), why  # torch-sparse needs it
    (broken / "torch_scatter-2.1.2-cp312-cp312-linux_x86_64.whl").write_bytes(b"not a zip")
    (broken / "scipy-1.0-py3-none-any.whl").write_bytes(b"not a zip")
    why = peer.install_torch_sparse(session, sys.executable, broken)
    assert why.startswith("skipped: installing torch-sparse failed"), why
    assert all(name in notes[-1] for name in ("torch_sparse-0.6.18", "torch_scatter", "scipy"))
    loads_not = tmp_path / "no-ops"
    for name in ("torch_sparse", "torch_scatter", "scipy"):  # install; torch_sparse has no op
        pure_wheel(loads_not, name)
    why = peer.install_torch_sparse(session, sys.executable, loads_not)
    assert why.startswith("skipped: the torch-sparse wheel does not load"), why
    assert (tmp_path / "site" / "torch_sparse" / "__init__.py").exists()
    monkeypatch.setattr(peer, "PEERS", tmp_path / "peers")
    env = peer.pyg_peer_env(session, sys.executable, "present")
    assert env["GNNREPRO_PEERS"] == str(tmp_path / "peers")
    shown = subprocess.run([str(tmp_path / "peers" / "pyg" / "bin" / "python"), "-c",
                            "import sys; print(sys.executable); print(sys.path)"],
                           capture_output=True, text=True, check=True).stdout
    assert sys.executable in shown and str(peer.PEER_SITE) in shown
    assert peer.pyg_args(["--scale", "1.0"], True)[-4:] == ["--sampler-device", "cuda",
                                                           "--feature-source", "device"]
    assert "--peers" in peer.pyg_args([], False) and "cuda" not in peer.pyg_args([], False)
