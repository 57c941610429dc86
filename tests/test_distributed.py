"""Data-parallel training: each rank's share of an epoch (every id once, equal steps, unique batch
ids), a 2-rank CPU gloo run (every id once per epoch, identical parameters on both ranks), and a
killed rank failing the run promptly with a clear error and no process left behind."""
from __future__ import annotations

import dataclasses
import itertools
import os
import json
import threading
import time

import psutil
import pytest
import torch

from gnnrepro import datasets
from gnnrepro.config import TrainConfig, resolve_workers
from gnnrepro.distributed import launch
from gnnrepro.models import GraphSAGE
from gnnrepro.pipeline import STAGES, Loader
from gnnrepro.pipeline.shard import ShardPlan
from gnnrepro.sampling import FusedSampler
from gnnrepro.training import accuracy
from helpers import require_dgl

SETTINGS = dict(fanouts=(4, 3), batch_size=64, hidden=16, lr=0.01, threads=1, workers=1,
                eval_batch_size=512, eval_method="layerwise")


@pytest.mark.parametrize("num_ids,batch_size,world_size,drop_last", [
    (590, 64, 2, False), (590, 64, 3, False), (129, 64, 2, False), (130, 32, 4, False),
    (5, 4, 4, False), (590, 64, 4, True), (7, 100, 3, False)])
def test_shard_plan_trains_every_id_once_in_equal_steps(num_ids, batch_size, world_size,
                                                        drop_last) -> None:
    plans = [ShardPlan(num_ids, batch_size, world_size, r, drop_last) for r in range(world_size)]
    assert len({p.steps for p in plans}) == 1
    covered = sorted(i for p in plans for s in range(p.steps) for i in range(*p.bounds(s)))
    full = plans[0].steps * world_size * batch_size
    assert covered == list(range(full if drop_last else num_ids))
    for p in plans:
        assert all(1 <= len(range(*p.bounds(s))) <= p.max_batch_size for s in range(p.steps))
    for e in range(3):  # one batch id per global step, the same on every rank
        for s in range(plans[0].steps):
            assert len({p.batch_id(e, s) for p in plans}) == 1
    ids = [plans[0].batch_id(e, s) for e in range(3) for s in range(plans[0].steps)]
    assert len(set(ids)) == len(ids)


def test_shard_plan_needs_an_id_per_rank() -> None:
    with pytest.raises(ValueError, match="every rank needs at least one"):
        ShardPlan(3, 64, 4, 0)
    with pytest.raises(ValueError, match="rank must be < world_size"):
        ShardPlan(100, 64, 2, 2)


def test_loader_ranks_split_each_epoch(dataset: datasets.Dataset) -> None:
    sampler = FusedSampler(dataset.graph, [4, 3], seed=0)
    loaders = [Loader(dataset, sampler, "cpu", 64, seed=3, rank=r, world_size=2)
               for r in range(2)]
    assert len(loaders[0]) == len(loaders[1])
    for _ in range(2):
        epochs = [list(loader) for loader in loaders]
        seeds = torch.cat([mb.seeds for mb in itertools.chain(*epochs)])
        assert torch.equal(seeds.sort().values, dataset.train_idx.sort().values)
        assert [mb.batch_id for mb in epochs[0]] == [mb.batch_id for mb in epochs[1]]
        assert len({mb.batch_id for mb in epochs[0]}) == len(epochs[0])
        for mb in itertools.chain(*epochs):  # each batch is what its batch id samples
            assert torch.equal(mb.input_nodes, sampler.sample(mb.seeds, mb.batch_id).input_nodes)


@pytest.mark.parametrize("settings, error, match", [
    (dict(lr=0.0), ValueError, "lr must be a finite number > 0"),
    (dict(lr="fast"), TypeError, "lr must be a number"),
    (dict(timeout_s=True), TypeError, "timeout_s must be a number"),
    (dict(dropout=1.0), ValueError, "dropout must be in"),
    (dict(pipeline="fast"), ValueError, "pipeline must be one of"),
    (dict(workers=-1), ValueError, "workers must be >= 0"),
])
def test_train_config_rejects_bad_settings_before_any_rank_starts(settings, error,
                                                                   match) -> None:
    with pytest.raises(error, match=match):
        TrainConfig(**settings)
    with pytest.raises(error, match=match):
        launch(2, "products-sim", **settings)


@pytest.fixture(scope="module")
def two_ranks(dataset: datasets.Dataset):
    return launch(2, dataset, pipeline="fused+pinned", epochs=2, **SETTINGS)


def test_two_ranks_train_every_id_once_per_epoch(dataset, two_ranks) -> None:
    assert two_ranks.ids_per_epoch == [dataset.train_idx.numel()] * 2
    for e in two_ranks.epochs:
        assert e["epoch_s"] == max(e["ranks_epoch_s"]) and len(e["stages"]["ranks"]) == 2
        assert e["stages"]["mean"]["forward"]["work_s"] > 0
    assert 0.0 <= two_ranks.test_acc <= 1.0
    assert two_ranks.memory["pss_bytes"] > 0 and len(two_ranks.memory["processes"]) >= 3


def test_two_ranks_layerwise_accuracy_equals_one_process(dataset, two_ranks) -> None:
    """Each rank computes a share of every layer and the shares are all-gathered: the
    accuracy equals one process's layer-wise evaluation of the same weights."""
    model = GraphSAGE(dataset.num_features, SETTINGS["hidden"], dataset.num_classes, 2)
    model.load_state_dict(two_ranks.states[0])
    evaluator = FusedSampler(dataset.graph, list(SETTINGS["fanouts"]), seed=0)
    for split, acc in (("val", two_ranks.val_acc), ("test", two_ranks.test_acc)):
        ids = getattr(dataset, f"{split}_idx")
        assert acc == accuracy(model, dataset, evaluator, ids, torch.device("cpu"), 512,
                               method="layerwise"), split


def test_two_ranks_read_one_copy_of_the_launchers_data(dataset, two_ranks) -> None:
    from gnnrepro.distributed.memory import machine_data_bytes
    first, second = two_ranks.data_copies_ranks
    assert {r["name"] for r in first} == set(dataset.arrays())
    assert first == [{**r, "resident_bytes": mine["resident_bytes"]}
                     for r, mine in zip(second, first)]  # the same copies, row by row
    assert all(r["copy"].split("/")[-1].startswith("file:") for r in first)  # shared memory
    assert any(r["resident_bytes"] > 0 for r in first)  # the ranks did read them
    assert machine_data_bytes(two_ranks.data_copies_ranks) == sum(
        t.untyped_storage().nbytes() for t in dataset.arrays().values())


def _copies_in_child(shared: torch.Tensor, out) -> None:
    from gnnrepro.distributed.memory import data_copies
    shared.sum()  # read every page
    out.put((data_copies({"shared": shared}), data_copies({"clone": shared.clone()})))


def test_data_copies_tell_a_mapped_copy_from_a_private_one() -> None:
    from gnnrepro.distributed.memory import data_copies, machine_data_bytes
    table = torch.ones(2_000_000)  # 8 MB, every page written
    own = data_copies({"table": table, "view": table[10:]})  # a view is the same copy
    assert len(own) == 1 and own[0]["resident_bytes"] >= own[0]["bytes"] == table.numel() * 4
    assert own[0]["copy"].split("/")[-1].startswith("private:")
    table.share_memory_()
    here = data_copies({"table": table})
    ctx = torch.multiprocessing.get_context("spawn")
    out = ctx.Queue()
    child = ctx.Process(target=_copies_in_child, args=(table, out))
    child.start()
    mapped, cloned = out.get(timeout=60)
    child.join()
    assert mapped[0]["copy"] == here[0]["copy"] and mapped[0]["resident_bytes"] > 0
    assert cloned[0]["copy"] != here[0]["copy"]
    assert machine_data_bytes([here, mapped]) == table.numel() * 4  # one copy
    assert machine_data_bytes([here, mapped, cloned]) == 2 * table.numel() * 4


def test_two_ranks_end_with_identical_parameters(two_ranks) -> None:
    first, second = two_ranks.states
    assert first.keys() == second.keys()
    for name in first:
        assert torch.equal(first[name], second[name]), name


def _ranks_of(parent: psutil.Process, world_size: int, timeout: float = 60.0) -> list:
    """The rank processes, once each of them has started its sampling worker process
    (training)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ranks = [p for p in parent.children() if "spawn_main" in " ".join(p.cmdline())]
        if len(ranks) == world_size and all(any(c.children() for c in r.children())
                                            for r in ranks):
            return sorted(ranks, key=lambda p: p.pid)
        time.sleep(0.2)
    raise AssertionError("the ranks did not start training")


def test_killed_rank_fails_the_run_promptly_and_leaves_no_process(dataset) -> None:
    me = psutil.Process()
    outcome: dict = {}

    def target() -> None:
        try:
            # collectives wait up to 300 s: failing within 30 s must come from the launcher
            # watching its ranks, not from the survivor's collective timing out
            # worker processes: the ranks' process trees show when training has started,
            # and every process of them must be gone afterwards
            launch(2, dataset, pipeline="fused+pinned", epochs=10_000, timeout_s=300,
                   worker_kind="process", **SETTINGS)
        except Exception as exc:  # noqa: BLE001 - the test inspects it
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    ranks = _ranks_of(me, 2)
    started = ranks + [c for r in ranks for c in r.children(recursive=True)]
    victim = ranks[1]
    victim.kill()
    thread.join(30)
    assert not thread.is_alive(), "run() did not return within 30 s of a rank's death"
    error = outcome.get("error")
    assert isinstance(error, RuntimeError)
    assert f"(pid {victim.pid})" in str(error) and "SIGKILL" in str(error), str(error)
    deadline = time.monotonic() + 10
    while (alive := [p for p in started if _running(p)]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive, [(p.pid, p.cmdline()) for p in alive]


def test_rank_that_raises_fails_the_run_with_its_traceback(dataset) -> None:
    me = psutil.Process()
    before = set(me.children(recursive=True))
    # labels up to 46 for a 1-class model: every rank's first loss raises in that rank
    broken = dataclasses.replace(dataset, num_classes=1)
    with pytest.raises(RuntimeError) as caught:
        launch(2, broken, pipeline="fused+pinned", epochs=2, timeout_s=300, **SETTINGS)
    message = str(caught.value)
    assert "distributed training failed: rank" in message and "raised: " in message, message
    assert "Traceback" in message and "out of bounds" in message, message
    deadline = time.monotonic() + 10
    while ((alive := [p for p in set(me.children(recursive=True)) - before if _running(p)
                      and "resource_tracker" not in " ".join(p.cmdline())])  # this process's
           and time.monotonic() < deadline):
        time.sleep(0.2)
    assert not alive, [(p.pid, p.cmdline()) for p in alive]


def _running(proc: psutil.Process) -> bool:
    """Still running: exited processes that nobody reaped yet (zombies: an orphan's parent
    becomes PID 1, which in a container may never reap it) count as gone."""
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_bench_scaling_writes_runs_per_world_size(tmp_path, monkeypatch) -> None:
    require_dgl()
    from gnnrepro.__main__ import main
    monkeypatch.setenv("GNNREPRO_DATA", str(tmp_path / "cache"))
    out = tmp_path / "scaling.json"
    assert main(["bench", "scaling", "--scale", "0.002", "--fanouts", "4,3", "--batch-size",
                 "64", "--hidden", "16", "--epochs", "2", "--ranks", "1,2",
                 "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    runs = {(r["pipeline"], r["world_size"]): r for r in result["runs"]}
    assert set(runs) == {(p, n) for p in ("dgl", "fused+pinned") for n in (1, 2)}
    for (name, size), r in runs.items():
        assert r["skipped"] is None and r["epoch_s"] > 0 and set(r["stages"]) == set(STAGES)
        assert r["dataset_bytes"] > 0 and (r["extra_rss_per_rank_bytes"] is None) == (size == 1)
    assert runs["fused+pinned", 2]["ids_per_epoch"] == result["num_train_ids"]
    assert runs["fused+pinned", 2]["extra_data_bytes_per_rank"] == 0  # one shared copy
    assert runs["dgl", 2]["extra_data_bytes_per_rank"] > 0  # DGL's int32 indptr, per rank
    for (name, size), r in runs.items():
        assert len(r["processes_memory"]) == r["processes"]
        # DGL samples in the rank; ours as resolved for a rank's share of the cores
        workers = resolve_workers(None, "cpu", ranks_per_machine=size) \
            if name == "fused+pinned" else 0
        assert r["threads"] == max(1, os.cpu_count() // size)  # threads None: cores / ranks
        assert r["oversubscribed"] == (size * (r["threads"] + workers) > os.cpu_count())
        assert r["total_pss_bytes"] == sum(p["pss"] for p in r["processes_memory"])
    assert set(result["speedup_vs_dgl"]) == {"1", "2"}
