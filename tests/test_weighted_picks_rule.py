"""The weighted picking rule (csrc/common/weighted_picks.h) compiled on its own, without torch,
under AddressSanitizer and UBSan where the compiler has them: on random relations, well-formed
and not, the CPU op's way and the CUDA kernel's way pick the same positions, and deferring
redraws (the CPU op's third pass) changes no pick (tests/cpp/weighted_picks_check.cpp lists
what it checks). The devices' blocks are compared on a GPU in tests/gpu/test_weighted.py."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "tests" / "cpp" / "weighted_picks_check.cpp"
FLAGS = ["-std=c++20", "-O1", "-g", "-ffp-contract=off", "-Wall", "-Wextra", "-Werror"]
SANITIZERS = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"]


def _build(executable: Path) -> None:
    """Compiles the check with sanitizers, or without them where the toolchain lacks them."""
    compiler = os.environ.get("CXX") or "c++"
    with_sanitizers = subprocess.run([compiler, *FLAGS, *SANITIZERS, str(SOURCE), "-o",
                                      str(executable)], capture_output=True, text=True)
    if with_sanitizers.returncode == 0:
        return
    plain = subprocess.run([compiler, *FLAGS, str(SOURCE), "-o", str(executable)],
                           capture_output=True, text=True)
    assert plain.returncode == 0, plain.stderr


def test_cpu_and_cuda_ways_agree_and_deferral_changes_no_pick(tmp_path: Path) -> None:
    executable = tmp_path / "weighted_picks_check"
    _build(executable)
    for seed in ("1", "2"):
        run = subprocess.run([str(executable), "400", seed], capture_output=True, text=True,
                             timeout=300)
        assert run.returncode == 0, run.stderr
        summary = re.search(r"picks (\d+) deferrals (\d+)", run.stdout)
        assert summary, run.stdout
        picks, deferrals = (int(x) for x in summary.groups())
        assert picks > 100_000 and deferrals > 1_000  # the ring was exercised
