"""benchmarks/sampler_threads.py (run on the lent GPU machines, issue 49 item 6) on a tiny
scale here: one timing per thread count, the typed op on the CPU, JSON with its environment."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_it_writes_a_timing_per_thread_count(tmp_path) -> None:
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "sampler_threads.py"), "--out",
         str(tmp_path / "out"), "--scale", "0.01", "--threads", "1,2", "--batches", "2",
         "--passes", "1"], capture_output=True, text=True, timeout=300,
        env=os.environ | {"GNNREPRO_DATA": str(tmp_path / "data"), "GNNREPRO_PROGRESS": "off"})
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads((tmp_path / "out" / "sampler-threads.json").read_text())
    assert set(result["homogeneous"]) == {"1", "2"}
    assert all(ms > 0 for ms in result["homogeneous"].values())
    assert result["typed"]["cpu"] > 0 and "env" in result
