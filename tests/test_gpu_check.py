"""The offline GPU check's parts that run without a GPU: it refuses at once and clearly where
there is none, installs missing packages from carried wheels only (no index), and lists the
steps it must skip for missing packages with the reason."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _gpu_check():
    spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "benchmarks/gpu_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_offline_check_refuses_without_a_gpu_before_building(tmp_path: Path) -> None:
    gpu_check = _gpu_check()
    if gpu_check.refusal() is None:
        pytest.skip("this machine has a GPU: the refusal is not what runs here")
    build_log = gpu_check.LOGS / "build.log"
    before = build_log.stat().st_mtime if build_log.exists() else None
    run = subprocess.run([sys.executable, "benchmarks/gpu_check.py", "--offline", "--wheels",
                          str(tmp_path), "--out", str(tmp_path / "out.json")], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    assert "no usable GPU here" in run.stderr and "Traceback" not in run.stderr
    assert not (tmp_path / "out.json").exists()
    assert (build_log.stat().st_mtime if build_log.exists() else None) == before


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


def test_missing_packages_come_from_the_carried_wheels_only(tmp_path: Path) -> None:
    gpu_check = _gpu_check()
    name = "gnnrepro_offline_probe"
    wheels = _wheel(tmp_path, name)
    site = tmp_path / "site"
    try:
        status = gpu_check.install_missing(["json", name, "no_such_module_anywhere"], wheels,
                                           site)
        assert status == {"json": "present", name: "installed",
                          "no_such_module_anywhere": "missing"}
        assert (site / name / "__init__.py").exists()
    finally:
        if str(site) in sys.path:
            sys.path.remove(str(site))
        sys.modules.pop(name, None)


def test_steps_whose_packages_are_missing_are_skipped_with_the_reason() -> None:
    gpu_check = _gpu_check()
    names = [name for name, _, _ in gpu_check.steps()]
    skipped = gpu_check.skipped_steps(names, {"pytest": "missing", "psutil": "present"})
    assert skipped == {"tests-gpu": "needs pytest", "memcheck": "needs pytest",
                       "racecheck": "needs pytest"}
    assert gpu_check.skipped_steps(names, {"pytest": "installed"}) == {}
