"""`bench storage` on a tiny products-sim: a store whose child runs past its time limit is
killed and reported as a lower bound, and the other stores' results are still written; a run
without a memory cgroup says it was uncapped, and why."""
from __future__ import annotations

import functools
import json
import os
import time
from pathlib import Path

import pytest

from gnnrepro.__main__ import main
from gnnrepro.bench import memory_cap, storage

pytestmark = pytest.mark.usefixtures("bench_env")

TESTS = Path(__file__).resolve().parent
#: The stuck mmap child's time limit: well past a tiny store's start (about 3 s here), so it is
#: killed inside its first gather.
LIMIT = 15.0
TINY = ["--scale", "0.002", "--fanouts", "4,3", "--batch-size", "64", "--batches", "2",
        "--epochs", "1", "--train-batches", "1", "--threads", "1"]


def test_a_store_past_its_time_limit_is_a_lower_bound_and_the_others_are_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(storage, "CHILD", "stuck_store_child")  # its mmap never gathers
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(TESTS), *filter(None, [os.environ.get("PYTHONPATH")])]))
    monkeypatch.setattr(storage, "measure",
                        functools.partial(storage.measure, timeout_s=LIMIT, ceiling=False))
    monkeypatch.setattr(memory_cap, "CGROUP_FS", tmp_path / "no-cgroups")  # none here
    out = tmp_path / "storage.json"
    assert main(["bench", "storage", *TINY, "--stores", "memory,mmap", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    memory, mmap = result["stores"]["memory"], result["stores"]["mmap"]
    assert "error" not in memory and "lower_bound" not in memory and memory["rows_identical"]
    assert memory["rows_per_s"] > 0 and memory["train"]["epoch_s"] > 0
    assert mmap["lower_bound"] is True and mmap["timeout_s"] == LIMIT
    assert mmap["timed_out_in"] == "gather" and "error" not in mmap
    epoch = mmap["epochs"][-1]  # killed in its first batch: rows/s at most that batch's rows
    assert epoch["complete"] is False and epoch["batches"] == 0 and epoch["rows"] == 0
    assert 0 < epoch["store_seconds"] < LIMIT and 0 < epoch["seconds"] < LIMIT
    assert mmap["rows_per_s"] == epoch["rows_per_s"] > 0
    assert memory["speedup_vs_mmap"] == pytest.approx(memory["rows_per_s"] / mmap["rows_per_s"])
    assert "train" not in mmap and mmap["rows_identical"]  # no batch compared differed
    why = "no memory cgroup: neither"
    assert result["memory_cap"]["mode"] == "none" and why in result["memory_cap"]["reason"]
    assert mmap["cap"]["mode"] == "none" and why in mmap["cap"]["reason"]
    assert memory["cap"] == {"mode": "none"}  # uncapped by design: the upper bound
    assert mmap["cap"]["file_resident_at_start_bytes"] >= 0  # counted after the drop
    table = storage.format_table(result)
    assert f"stopped after {LIMIT:.0f} s in gather" in table and "uncapped: no memory" in table


def test_a_store_stopped_in_training_or_before_its_store_opened() -> None:
    now = time.time()
    opened = {"store": "lmdb", "cap": {"mode": "none"}, "open_s": 0.1,
              "epochs": [{"epoch": 0, "batches": 2, "rows": 100, "rows_per_s": 50.0}],
              "rows_identical": True}
    lines = [{"progress": "result", "time": now - 9, "result": opened, "next": "train"},
             {"progress": "step", "time": now - 4, "batches": 4, "batches_done": 1,
              "seconds": 3.0}]
    r = storage._timed_out("lmdb", lines, 30.0)
    assert r["lower_bound"] is True and r["timeout_s"] == 30.0 and r["timed_out_in"] == "train"
    assert r["epochs"] == opened["epochs"] and r["rows_identical"]  # its gathers: as measured
    # 3 s for a step and at least 4 s in the second: at least 7 s / 2 steps for each of 4
    assert r["train"]["epoch_s_at_least"] == pytest.approx(7.0 / 2 * 4, abs=0.5)
    assert r["train"]["batches"] == 4 and r["train"]["batches_done"] == 1
    assert storage._timed_out("lmdb", [], 30.0) == {
        "store": "lmdb", "error": "timed out after 30 s, before its store was open"}


def _drops_pages_here(directory: Path) -> bool:
    """Whether this file system lets a file's cached pages be dropped (tmpfs does not)."""
    from gnnrepro.bench.child_process import drop_page_cache, resident_bytes
    probe = directory / "probe.bin"
    probe.write_bytes(os.urandom(1 << 16))
    os.sync()
    drop_page_cache(probe)
    return resident_bytes(probe) == 0


def test_no_capped_store_starts_with_its_file_cached(tmp_path: Path) -> None:
    """Once the dense feature file exists the dataset's features are a mapping of it; the
    parent drops its dataset before the stores run, so the drop before each capped child
    leaves none of the file cached (at e5635fd all of it was: mmap read at memory speed)."""
    if not _drops_pages_here(Path(os.environ["GNNREPRO_DATA"]).parent):
        pytest.skip("this file system keeps a file's pages cached (tmpfs?)")
    for _ in range(2):  # the first run writes features.gnnf, the second loads through it
        result = storage.measure(dataset="products-sim", scale=0.002, fanouts=[4, 3],
                                 batch_size=64, batches=2, epochs=1, train_batches=1,
                                 threads=1, stores=["mmap"], train=False, ceiling=False)
    cap = result["stores"]["mmap"]["cap"]
    assert cap["file_resident_at_start_bytes"] == 0, cap
