"""Partitioned training on two "machines" of this host (two torchrun agents told they are
different machines, loopback only): blocks identical to one machine's, every training id once
per epoch, accuracy near one machine's; a partition that does not match (checked per machine)
stops every rank before training, naming the machine; a killed machine ends the run with an
error naming it and leaves no process."""
from __future__ import annotations

import json
import os
import shutil
import signal
import threading
import time
from pathlib import Path

import psutil
import pytest
import torch

from gnnrepro.datasets import Dataset, load
from gnnrepro.distributed.partitioned.__main__ import _check_partition, build_parser
from gnnrepro.distributed.partitioned.local import run_local_machines
from gnnrepro.distributed.partitioned.train import block_digest
from gnnrepro.partition import partition_dataset
from gnnrepro.sampling import FusedSampler
from gnnrepro.supervisor import Supervisor
from gnnrepro.training import train_pipeline

SCALE = 0.01


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> tuple[Dataset, Path]:
    dataset = load("products-sim", root=tmp_path_factory.mktemp("data"), scale=SCALE)
    out = tmp_path_factory.mktemp("parts") / "p2"
    partition_dataset(dataset, 2, out)
    return dataset, out


def _args(partition: Path, *extra: str) -> list[str]:
    return ["--partition", str(partition), "--scale", str(SCALE), "--threads", "1",
            "--timeout-s", "30", *extra]


def test_two_machines_train_like_one(data: tuple[Dataset, Path], tmp_path: Path):
    dataset, partition = data
    out = tmp_path / "run.json"
    run_local_machines(2, _args(partition, "--epochs", "4", "--batch-size", "128",
                                "--digest-batches", "2", "--out", str(out)), timeout_s=240)
    result = json.loads(out.read_text())
    assert [m["machine_id"] for m in result["machines_ranks"]] == ["local-machine-0",
                                                                  "local-machine-1"]
    single = FusedSampler(dataset.graph, [15, 10, 5], seed=0)
    digests = [d for rank in result["digests_ranks"] for d in rank]
    assert len(digests) == 4
    for d in digests:
        assert d["digest"] == block_digest(single.sample(torch.tensor(d["seeds"]),
                                                         d["batch_id"]))
    assert [e["seeds"] for e in result["epochs"]] == [dataset.train_idx.numel()] * 4
    assert 0 < result["remote_edge_fraction"] < 1 and 0 < result["remote_row_fraction"] < 1
    assert result["bytes_per_batch"]["features"] > 0
    for epoch in result["epochs"]:  # the loader thread's work and the wait for it, per rank
        assert len(epoch["ranks_loading"]) == 2
        assert all(r["sample_work_s"] > 0 and r["wait_s"] >= 0 for r in epoch["ranks_loading"])
    torch.set_num_threads(1)
    one = train_pipeline("fused", dataset, [15, 10, 5], epochs=4, batch_size=256, threads=1)
    assert abs(result["test_acc"] - one.test_acc) <= 0.015


def test_mismatching_partition_is_refused_before_training(data: tuple[Dataset, Path]):
    """What each machine checks before any rank trains (the ranks then share the verdicts;
    a launch with a mismatch is not run here: it costs two torchrun start-ups)."""
    _, partition = data
    parse = build_parser().parse_args
    assert _check_partition(parse(["--partition", str(partition), "--scale", "0.01"]), 1, 2) \
        is None
    assert "scale 0.01, not 0.02" in _check_partition(
        parse(["--partition", str(partition), "--scale", "0.02"]), 0, 2)
    assert "has 2 parts, but 3 machines" in _check_partition(
        parse(["--partition", str(partition), "--scale", "0.01"]), 0, 3)
    assert "not 'ogbn-products'" in _check_partition(
        parse(["--partition", str(partition), "--dataset", "ogbn-products"]), 0, 2)


def test_corrupt_part_stops_every_rank_before_training(data: tuple[Dataset, Path],
                                                      tmp_path: Path):
    _, partition = data
    corrupt = tmp_path / "corrupt"
    shutil.copytree(partition, corrupt)
    raw = bytearray((corrupt / "part-1" / "features.npy").read_bytes())
    raw[-1] ^= 1
    (corrupt / "part-1" / "features.npy").write_bytes(bytes(raw))
    out = tmp_path / "run.json"
    with pytest.raises(RuntimeError) as info:
        run_local_machines(2, _args(corrupt, "--out", str(out)), timeout_s=120)
    text = str(info.value)
    assert "machine 1 (local-machine-1)" in text and "part-1/features.npy" in text
    assert text.count("the partition does not match") >= 2  # both machines' ranks stopped
    assert not out.exists()


def test_killed_machine_is_named_and_nothing_is_left(data: tuple[Dataset, Path]):
    _, partition = data
    pids: list[int] = []

    def kill_machine_1(supervisor: Supervisor) -> None:
        def kill() -> None:
            agent = psutil.Process(supervisor.pids[1])
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not agent.children():
                time.sleep(0.2)
            pids.extend(p.pid for s in supervisor.pids
                        for p in psutil.Process(s).children(recursive=True))
            time.sleep(3)  # let the ranks get going
            for rank in agent.children():
                os.kill(rank.pid, signal.SIGKILL)
        threading.Thread(target=kill, daemon=True).start()

    started = time.monotonic()
    with pytest.raises(RuntimeError, match="machine 1") as info:
        run_local_machines(2, _args(partition, "--epochs", "200", "--batch-size", "64"),
                           timeout_s=120, started=kill_machine_1)
    assert time.monotonic() - started < 100
    assert "machine(s) 1 stopped responding" in str(info.value) or "SIGKILL" in str(info.value)
    assert pids
    time.sleep(1)
    assert [p for p in pids if psutil.pid_exists(p)
            and psutil.Process(p).status() != psutil.STATUS_ZOMBIE] == []


def test_a_killed_machine_resumes_from_its_checkpoint_to_the_identical_result(
        data: tuple[Dataset, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Machine 1's rank killed at its 5th step: the run fails; run again with --resume, it
    ends with the uninterrupted run's weights, losses and accuracies, bit for bit."""
    _, partition = data
    runs = {}
    for name in ("whole", "cut"):
        runs[name] = _args(partition, "--epochs", "2", "--batch-size", "128",
                           "--checkpoint-dir", str(tmp_path / name), "--checkpoint-every", "3",
                           "--out", str(tmp_path / f"{name}.json"),
                           "--weights", str(tmp_path / f"{name}.pt"))
    run_local_machines(2, runs["whole"], timeout_s=240)
    monkeypatch.setenv("GNNREPRO_FAULT", "step:5@1")
    with pytest.raises(RuntimeError, match="machine 1"):
        run_local_machines(2, runs["cut"], timeout_s=240)
    monkeypatch.delenv("GNNREPRO_FAULT")
    run_local_machines(2, [*runs["cut"], "--resume"], timeout_s=240)
    whole, cut = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("whole", "cut"))
    assert cut["checkpoint"]["resumed_at_step"] == 3
    assert [e["loss"] for e in whole["epochs"]] == [e["loss"] for e in cut["epochs"]]
    assert (whole["val_acc"], whole["test_acc"]) == (cut["val_acc"], cut["test_acc"])
    a, b = (torch.load(tmp_path / f"{n}.pt", weights_only=True) for n in ("whole", "cut"))
    assert all(torch.equal(a[k], b[k]) for k in a)
