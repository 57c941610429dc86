"""One copy of the data per machine without a common parent: a dataset described by one process
is mapped, not copied, by another (describe_dataset / attach_dataset), empty arrays included;
bad descriptions fail cleanly; the lowest rank of a machine leads and a rank that cannot map
falls back to its own copy; and under torchrun two ranks that start sampling workers read the
first rank's one copy."""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import pytest
import torch

from gnnrepro.datasets import Dataset
from gnnrepro.distributed import machine_share
from gnnrepro.distributed.machine_share import (attach_dataset, describe_dataset,
                                                share_dataset_)
from gnnrepro.distributed.memory import data_copies, machine_data_bytes
from helpers import random_graph


def _attach_in_child(description: dict, out) -> None:
    dataset = attach_dataset(description)
    dataset.features[0, 0] = 1234.5  # the child writes; the parent must see it
    out.put((data_copies(dataset.arrays()), dataset.train_idx.tolist(), dataset.num_classes))


def test_another_process_maps_the_same_copy(dataset: Dataset) -> None:
    shared = share_dataset_(dataset)
    description = describe_dataset(shared)
    here = data_copies(shared.arrays())
    ctx = torch.multiprocessing.get_context("spawn")
    out = ctx.Queue()
    before = float(shared.features[0, 0])
    # the description is plain data: pickled by value, no tensor travels with it
    child = ctx.Process(target=_attach_in_child, args=(json.loads(json.dumps(description)), out))
    child.start()
    try:
        there, train_ids, num_classes = out.get(timeout=60)
    finally:
        child.join(30)
    try:
        assert [r["copy"] for r in there] == [r["copy"] for r in here]
        assert machine_data_bytes([here, there]) == machine_data_bytes([here])
        assert train_ids == shared.train_idx.tolist() and num_classes == shared.num_classes
        assert float(shared.features[0, 0]) == 1234.5
    finally:
        shared.features[0, 0] = before


def test_describe_needs_shared_memory() -> None:
    graph = random_graph(50, 200, power_law=False, seed=0)
    private = Dataset(graph=graph, features=torch.zeros(50, 4), labels=torch.zeros(50).long(),
                      train_idx=torch.arange(10), val_idx=torch.arange(10, 20),
                      test_idx=torch.arange(20, 30), num_classes=2, name="tiny")
    with pytest.raises(ValueError, match="dataset.indptr must be a CPU tensor in shared memory"):
        describe_dataset(private)


def test_attach_rejects_a_description_it_cannot_map(dataset: Dataset) -> None:
    description = describe_dataset(share_dataset_(dataset))
    gone = json.loads(json.dumps(description))
    gone["arrays"]["features"]["fd"] = 10_000  # no such descriptor
    with pytest.raises(OSError):
        attach_dataset(gone)
    too_big = json.loads(json.dumps(description))
    too_big["arrays"]["indices"]["size"] += 4096
    with pytest.raises(ValueError, match="smaller than the described"):
        attach_dataset(too_big)
    past_end = json.loads(json.dumps(description))
    past_end["arrays"]["labels"]["offset"] = 1  # one element past the storage's end
    with pytest.raises(RuntimeError):
        attach_dataset(past_end)
    other_file = json.loads(json.dumps(description))
    other_file["arrays"]["labels"]["fd"] = description["arrays"]["indptr"]["fd"]
    with pytest.raises(OSError, match="not the described shared file"):
        attach_dataset(other_file)
    fileless = json.loads(json.dumps(description))
    fileless["arrays"]["labels"]["fd"] = None
    with pytest.raises(ValueError, match="without a file must be empty"):
        attach_dataset(fileless)
    wrong_dtype = json.loads(json.dumps(description))
    wrong_dtype["arrays"]["labels"]["dtype"] = "Tensor"
    with pytest.raises(ValueError, match="unknown dtype"):
        attach_dataset(wrong_dtype)


def test_an_empty_split_is_described_and_attached(dataset: Dataset) -> None:
    shared = share_dataset_(dataclasses.replace(dataset, val_idx=torch.empty(0).long()))
    description = describe_dataset(shared)
    assert description["arrays"]["val_idx"]["fd"] is None
    attached = attach_dataset(json.loads(json.dumps(description)))
    assert attached.val_idx.numel() == 0 and attached.val_idx.dtype == torch.int64
    assert torch.equal(attached.train_idx, shared.train_idx)


def _share_as_rank(monkeypatch, rank: int, machines: list[str], leader_description,
                   load) -> tuple[Dataset, str]:
    """share_on_machine as `rank` of len(machines) ranks, the collectives played back: the
    ranks' machine ids, then the leader's description (every other rank's entry None)."""
    gathered = iter([machines, None])

    def all_gather_object(out: list, mine) -> None:
        answer = next(gathered)
        if answer is None:  # the descriptions: the leader's, or this rank's own if it leads
            answer = [leader_description if m == machines[rank] and r < rank else None
                      for r, m in enumerate(machines)]
            answer[rank] = mine
        out[:] = answer

    monkeypatch.setattr(machine_share, "machine_id", lambda: machines[rank])
    monkeypatch.setattr(machine_share.dist, "get_rank", lambda: rank)
    monkeypatch.setattr(machine_share.dist, "get_world_size", lambda: len(machines))
    monkeypatch.setattr(machine_share.dist, "all_gather_object", all_gather_object)
    monkeypatch.setattr(machine_share.dist, "barrier", lambda: None)
    return machine_share.share_on_machine(load)


def test_share_on_machine_leads_maps_or_falls_back(monkeypatch, dataset: Dataset) -> None:
    loads: list[int] = []

    def load() -> Dataset:
        loads.append(1)
        return dataset

    description = describe_dataset(share_dataset_(dataset))
    machines = ["a", "b", "a", "b"]
    _, how = _share_as_rank(monkeypatch, 1, machines, None, load)  # lowest rank of "b"
    assert how == "loaded and shared" and len(loads) == 1
    mapped, how = _share_as_rank(monkeypatch, 3, machines, description, load)
    assert how == "mapped from rank 1" and len(loads) == 1  # nothing loaded
    assert torch.equal(mapped.features, dataset.features)
    gone = {**description, "pid": 2**22 + 1}  # above the default pid_max: no such process
    with pytest.warns(RuntimeWarning, match="cannot map rank 1's dataset"):
        _, how = _share_as_rank(monkeypatch, 3, machines, gone, load)
    assert how.startswith("own copy (") and len(loads) == 2


def test_torchrun_ranks_with_workers_read_one_copy(tmp_path, dataset: Dataset) -> None:
    out = tmp_path / "run.json"
    env = {**os.environ, "GNNREPRO_DATA": str(tmp_path / "cache"), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
         "-m", "gnnrepro.distributed", "--scale", "0.003", "--fanouts", "4,3",
         "--batch-size", "64", "--hidden", "16", "--epochs", "1", "--workers", "1",
         "--worker-kind", "process",  # threads could not copy the data: processes might
         "--out", str(out)], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["ids_per_epoch"] == [dataset.train_idx.numel()]
    first, second = result["data_copies_ranks"]
    assert [r["copy"] for r in first] == [r["copy"] for r in second]
    assert machine_data_bytes(result["data_copies_ranks"]) == sum(
        t.untyped_storage().nbytes() for t in dataset.arrays().values())
    assert result["data_sharing_ranks"] == ["loaded and shared", "mapped from rank 0"]
