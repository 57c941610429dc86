"""`bench disk-training` on a tiny igb-sim: every store trains, evaluates and has its rows
checked against regenerated ones; an LMDB that cannot fit on the disk is listed as not run."""
from __future__ import annotations

import math

import pytest
import torch

from gnnrepro.bench import disk_training
from gnnrepro.datasets import load

pytestmark = pytest.mark.usefixtures("bench_env")

TINY = {"scale": 0.0002, "gather_batches": 2, "train_batches": 2, "baseline_gather_batches": 1,
        "baseline_train_batches": 1, "eval_ids": 64, "check_batches": 1,
        "ceiling_seconds": 0.2, "threads": 1, "hidden": 16}


def test_every_store_trains_and_returns_the_regenerated_rows() -> None:
    result = disk_training.measure(**TINY)
    stores = result["stores"]
    for name in disk_training.STORES:
        r = stores[name]
        assert "error" not in r, r
        assert r["check"] == {"rows": r["check"]["rows"], "identical": True,
                              "against": "regenerated"} and r["check"]["rows"] > 0
        assert r["train"]["batches"] == (2 if name == "disk" else 1)
        assert r["train"]["epoch_batches"] == 2  # 1,200 training ids in batches of 1024
        assert r["train"]["epoch_s_extrapolated"] == pytest.approx(2 * r["train"]["batch_s"])
        assert all(r["memory"][phase]["peak_rss_bytes"] > 0
                   for phase in ("gather", "train", "check"))
    disk = stores["disk"]
    assert 0 <= disk["gather"]["hit_rate"] <= 1 and disk["gather"]["bytes_read"] > 0
    assert 0 <= disk["train"]["test_acc"] <= 1  # evaluated through the disk store
    assert math.isnan(stores["mmap"]["train"]["test_acc"])  # baselines are not evaluated
    assert disk["gather_vs_mmap"] == pytest.approx(
        disk["gather"]["rows_per_s"] / stores["mmap"]["gather"]["rows_per_s"])
    assert result["dataset"]["name"] == "igb-sim" and result["feature_file"]["row_bytes"] == 4096
    table = disk_training.format_table(result)
    assert all(name in table for name in disk_training.STORES)


def test_a_baseline_too_slow_for_its_time_limit_reports_a_lower_bound() -> None:
    result = disk_training.measure(**TINY | {"stores": ["disk", "mmap"],
                                             "baseline_gather_batches": 3,
                                             "baseline_seconds": 1e-6})
    mmap, disk = result["stores"]["mmap"], result["stores"]["disk"]
    assert not mmap["gather"]["complete"] and mmap["gather"]["rows"] > 0  # stopped early
    assert "skipped" in mmap["train"] and mmap["train"]["batch_s_at_least"] > 1e-6
    assert disk["gather"]["complete"] and "batch_s" in disk["train"]  # the disk store: all
    assert disk["batch_vs_mmap"] == pytest.approx(mmap["train"]["batch_s_at_least"]
                                                  / disk["train"]["batch_s"])
    assert mmap["check"]["identical"] and mmap["check"]["rows"] <= 4096
    assert ">" in disk_training.format_table(result)


def test_an_lmdb_that_does_not_fit_is_listed_as_not_run(monkeypatch) -> None:
    load("igb-sim", scale=TINY["scale"])  # built before the disk looks full
    real = disk_training.shutil.disk_usage
    monkeypatch.setattr(disk_training.shutil, "disk_usage",
                        lambda p: real(p)._replace(free=10_000))
    result = disk_training.measure(**TINY | {"stores": ["lmdb"]})
    error = result["stores"]["lmdb"]["error"]
    assert error.startswith("not run: an LMDB of these rows needs at least")
    assert "8192 bytes of pages" in error  # a 4 KiB row and its header take two pages
    assert "lmdb" in disk_training.format_table(result)


@pytest.mark.parametrize("bad, error", [({"stores": ["tape"]}, "stores"),
                                        ({"budget_fraction": 1.5}, "budget_fraction")])
def test_bad_arguments_name_themselves(bad, error) -> None:
    with pytest.raises(ValueError, match=error):
        disk_training.measure(**TINY | bad)


def test_papers_sim_rows_are_checked_against_regenerated_ones() -> None:
    data = load("papers-sim", scale=2e-5)
    ids = torch.tensor([0, 5, data.graph.num_nodes - 1])
    assert torch.equal(disk_training.reference_rows(data, ids), data.features[ids])
    result = disk_training.measure(**TINY | {"dataset": "papers-sim", "scale": 2e-5,
                                             "stores": ["disk"], "batch_size": 8,
                                             "fanouts": [3, 2], "eval_ids": 16})
    disk = result["stores"]["disk"]
    assert disk["check"]["against"] == "regenerated" and disk["check"]["identical"]
    labels = data.labels[data.test_idx]
    best = int(torch.bincount(labels[labels >= 0]).max()) / int((labels >= 0).sum())
    assert data.test_idx.numel() <= 16  # every test id evaluated: the share is the split's
    assert disk["train"]["test_majority_acc"] == pytest.approx(best)
    assert result["dataset"]["name"] == "papers-sim"


def test_a_killed_run_resumes_from_its_checkpoints_to_the_same_training(tmp_path,
                                                                        monkeypatch) -> None:
    """The disk store's child is killed (SIGKILL) after step 3 of 6, checkpoints every 2
    steps; the same command with resume keeps mmap's finished result, resumes the disk
    store at step 2 and ends with the loss of an uninterrupted run, bit for bit."""
    from gnnrepro.training import Checkpointing
    run = TINY | {"stores": ["mmap", "disk"], "batch_size": 64, "train_batches": 6,
                  "fanouts": [3, 2], "check_batches": 0}
    whole = disk_training.measure(**run)["stores"]["disk"]["train"]
    assert whole["resumed_at_step"] == 0 and whole["timed_batches"] == 6
    directory = tmp_path / "ckpt"
    monkeypatch.setenv("GNNREPRO_FAULT", "step:3")
    killed = disk_training.measure(**run, checkpointing=Checkpointing(directory, every=2))
    assert "error" in killed["stores"]["disk"]
    assert (directory / "mmap" / "result.json").exists()  # finished before the kill
    monkeypatch.delenv("GNNREPRO_FAULT")
    resumed = disk_training.measure(**run, checkpointing=Checkpointing(directory, every=2,
                                                                       resume=True))
    disk, mmap = resumed["stores"]["disk"], resumed["stores"]["mmap"]
    assert mmap["kept_from"] == str(directory / "mmap" / "result.json")
    assert mmap["gather"] == killed["stores"]["mmap"]["gather"]
    assert disk["train"]["resumed_at_step"] == 2 and disk["train"]["timed_batches"] == 4
    assert disk["train"]["loss"] == whole["loss"]  # the same steps, bit for bit
    assert disk["train"]["batch_s"] == pytest.approx(disk["train"]["seconds"] / 4)
    assert resumed["params"]["checkpoints"] == {"directory": str(directory), "every": 2,
                                                "keep": 3, "resume": True}
    with pytest.raises(TypeError, match="checkpointing"):
        disk_training.measure(**run, checkpointing=str(directory))


def test_a_run_resumed_at_its_last_step_claims_no_step_time() -> None:
    """Nothing trained in this run (killed after its last checkpoint, during evaluation):
    no time per step and no ratio to mmap is made up from zero steps."""
    assert disk_training.step_times(12.0, 4, 10) == {
        "timed_batches": 4, "batch_s": 3.0, "epoch_batches": 10, "epoch_s_extrapolated": 30.0}
    untimed = disk_training.step_times(0.01, 0, 10)
    assert untimed["timed_batches"] == 0 and "batch_s" not in untimed and "untimed" in untimed
    from gnnrepro.bench.disk_training_report import summarise
    results = {"disk": {"gather": {"rows_per_s": 10.0}, "train": untimed},
               "mmap": {"gather": {"rows_per_s": 1.0}, "train": {"batch_s": 5.0}}}
    summarise(results, {})
    assert results["disk"]["gather_vs_mmap"] == 10.0 and "batch_vs_mmap" not in results["disk"]
