"""`bench typed-disk`: a typed model trained from the disk store and from mmap, each in its own
process, on igbh-sim's float16 feature files; what the result records."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gnnrepro.bench import typed_disk

ROOT = Path(__file__).resolve().parents[1]


def test_both_stores_train_and_the_result_says_how(tmp_path: Path) -> None:
    out = tmp_path / "typed-disk.json"
    env = dict(os.environ, GNNREPRO_DATA=str(tmp_path / "data"))
    run = subprocess.run([sys.executable, "-m", "gnnrepro", "bench", "typed-disk", "--scale",
                          "0.001", "--steps", "3", "--baseline-steps", "2", "--batch-size",
                          "256", "--eval-ids", "64", "--threads", "1", "--out", str(out)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    result = json.loads(out.read_text())
    p = result["params"]
    assert (p["dataset"], p["model"], p["fanouts"], p["batch_size"]) == (
        "igbh-sim", "rgcn", [10, 5], 256)
    assert p["feature_bytes"] == sum(n * 1024 * 2 for n in
                                     result["dataset"]["num_nodes"].values())
    assert set(result["stores"]) == {"disk", "mmap"}
    disk, mmap = result["stores"]["disk"], result["stores"]["mmap"]
    assert (disk["steps"], mmap["steps"]) == (3, 2)
    assert disk["bytes_read"] > 0 and "TypedFeatureStore" in disk["store"]
    for r in (disk, mmap):
        assert r["step_s_after_first"] > 0 and r["peak_rss_bytes"] > 0
        assert r["eval_ids"] == 64 and 0 <= r["test_acc"] <= 1
        assert 0 < r["test_majority_acc"] <= 1
    assert "disk" in run.stdout and "peak_rss_GB" in run.stdout


def test_bad_arguments_name_themselves() -> None:
    with pytest.raises(ValueError, match="model"):
        typed_disk.measure(model="gat")
    with pytest.raises(ValueError, match="stores"):
        typed_disk.measure(stores=["lmdb"])
