"""Loader: epoch coverage, gathered rows and labels, independence from workers/streams, worker
failures surfacing as clear errors, clean shutdown, argument checks. Tests of worker processes
say worker_kind="process"; the thread workers' own tests are in tests/test_thread_workers.py."""
from __future__ import annotations

import _thread
import gc
import multiprocessing
import os
import signal
import threading
import time

import psutil
import pytest
import torch

from gnnrepro import datasets
from gnnrepro.pipeline import Loader
from gnnrepro.sampling import FusedSampler

BATCH = 64


@pytest.fixture(scope="module")
def sampler(dataset: datasets.Dataset) -> FusedSampler:
    return FusedSampler(dataset.graph, [10, 5], seed=3)


class RaisingSampler(FusedSampler):
    """Fails on batch 3 of every epoch, to check a worker's exception reaches the caller."""

    def sample(self, seeds: torch.Tensor, batch_id: int = 0):
        if batch_id % 10 == 3:
            raise ValueError(f"sampler exploded on batch_id {batch_id}")
        return super().sample(seeds, batch_id)


class SleepySampler(FusedSampler):
    """Takes far longer than any test, so the main process is left waiting for results."""

    def sample(self, seeds: torch.Tensor, batch_id: int = 0):
        time.sleep(60)
        return super().sample(seeds, batch_id)


def epoch(loader: Loader) -> list:
    return list(loader)


def assert_gone(pids: list[int], timeout: float = 5.0) -> None:
    """Every pid has exited (and been reaped), and this process has no live mp children."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(psutil.pid_exists(p) for p in pids):
        time.sleep(0.05)
    assert not [p for p in pids if psutil.pid_exists(p)]
    assert multiprocessing.active_children() == []


def same_blocks(p, q) -> None:
    for bp, bq in zip(p.blocks, q.blocks, strict=True):
        assert bp.num_dst == bq.num_dst
        for name in ("indptr", "indices", "src_nodes"):
            assert torch.equal(getattr(bp, name), getattr(bq, name)), name


def same_batches(a: list, b: list) -> None:
    assert len(a) == len(b)
    for p, q in zip(a, b):
        assert p.batch_id == q.batch_id
        for name in ("seeds", "input_nodes", "x", "y"):
            assert torch.equal(getattr(p, name), getattr(q, name)), name
        same_blocks(p, q)


@pytest.mark.parametrize("workers,kind", [(0, "thread"), (2, "thread"), (2, "process")])
def test_epoch_covers_ids_with_right_features_and_labels(dataset, sampler, workers: int,
                                                         kind: str) -> None:
    with Loader(dataset, sampler, "cpu", BATCH, workers=workers, prefetch=3,
                worker_kind=kind) as loader:
        batches = epoch(loader)  # all kept: x must not alias a reused staging slot
        if workers and kind == "process":  # they map the graph and features, never copy them
            assert dataset.graph.indices.is_shared() and dataset.features.is_shared()
    n = dataset.train_idx.numel()
    assert len(loader) == len(batches) == -(-n // BATCH)
    seeds = torch.cat([mb.seeds for mb in batches])
    assert torch.equal(seeds.sort().values, dataset.train_idx.sort().values)
    for b, mb in enumerate(batches):
        assert mb.batch_id == b
        assert mb.x.dtype == torch.float32 and mb.x.device.type == "cpu"
        assert torch.equal(mb.x, dataset.features[mb.input_nodes])
        assert torch.equal(mb.y, dataset.labels[mb.seeds])
        assert torch.equal(mb.input_nodes, mb.blocks[0].src_nodes)


@pytest.mark.parametrize("workers", [0, 2])
def test_cpu_x_keeps_its_staging_slot_until_the_last_view_dies(dataset, sampler,
                                                               workers: int) -> None:
    with Loader(dataset, sampler, "cpu", BATCH, workers=workers, prefetch=2) as loader:
        ring = loader._ring
        kept = None
        for b, mb in enumerate(loader):
            if b == 0:
                kept, kept_ids = mb.x[1:4], mb.input_nodes[1:4]
            del mb
        gc.collect()
        assert ring.num_busy == 1  # only the slot under `kept`; every other one came back
        assert torch.equal(kept, dataset.features[kept_ids])  # not overwritten meanwhile
        del kept
        assert ring.num_busy == 0
        assert len(epoch(loader)) == len(loader)


@pytest.mark.parametrize("workers,prefetch", [(0, 1), (1, 1), (2, 2)])
def test_a_caller_that_drops_each_batch_gets_every_x_from_a_slot(dataset, sampler, workers: int,
                                                                 prefetch: int) -> None:
    """No copy while the caller keeps nothing: the loader itself must not hold a handed-out
    batch (and so its slot) while it prepares the next one."""
    with Loader(dataset, sampler, "cpu", BATCH, workers=workers, prefetch=prefetch) as loader:
        in_slot = []
        for mb in loader:
            in_slot.append(any(s.buffer.data_ptr() <= mb.x.data_ptr() < s.buffer.data_ptr()
                               + s.buffer.numel() * s.buffer.element_size()
                               for s in loader._ring.slots))
            del mb
        assert len(in_slot) == len(loader) and all(in_slot), in_slot


def test_batch_b_of_epoch_e_uses_batch_id_e_times_len_plus_b(dataset, sampler) -> None:
    loader = Loader(dataset, sampler, "cpu", BATCH, drop_last=True)
    assert len(loader) == dataset.train_idx.numel() // BATCH
    epoch(loader)
    for b, mb in enumerate(epoch(loader)):
        assert mb.seeds.numel() == BATCH
        assert mb.batch_id == len(loader) + b
        same_blocks(mb, sampler.sample(mb.seeds, mb.batch_id))


def test_batches_do_not_depend_on_workers_or_streams(dataset, sampler) -> None:
    runs = {}
    for workers, streams, kind in ((0, 1, "thread"), (2, 1, "process"), (2, 2, "process"),
                                   (1, 2, "process"), (2, 1, "thread"), (1, 2, "thread")):
        with Loader(dataset, sampler, "cpu", BATCH, workers=workers, streams=streams,
                    prefetch=2, seed=7, worker_kind=kind) as loader:
            runs[workers, streams, kind] = [epoch(loader), epoch(loader)]
    reference = runs.pop((0, 1, "thread"))
    for run in runs.values():
        for e in range(2):
            same_batches(reference[e], run[e])


def test_epochs_differ_in_order_but_each_covers_all_ids(dataset, sampler) -> None:
    with Loader(dataset, sampler, "cpu", BATCH, workers=2) as loader:
        first, second = (torch.cat([mb.seeds for mb in epoch(loader)]) for _ in range(2))
    assert not torch.equal(first, second)
    ids = dataset.train_idx.sort().values
    assert torch.equal(first.sort().values, ids) and torch.equal(second.sort().values, ids)
    # Same seed, new Loader: the same epochs again.
    again = Loader(dataset, sampler, "cpu", BATCH)
    assert torch.equal(torch.cat([mb.seeds for mb in epoch(again)]), first)


@pytest.mark.parametrize("workers", [0, 2])
def test_work_seconds_count_sampling_and_extraction_wherever_they_run(dataset, sampler,
                                                                       workers: int) -> None:
    with Loader(dataset, sampler, "cpu", BATCH, workers=workers, prefetch=2) as loader:
        assert loader.work_seconds() == {"sample": 0.0, "extract": 0.0}
        for _ in loader:
            pass
        work = loader.work_seconds()
        assert work["sample"] > 0 and work["extract"] > 0


def test_unshuffled_epoch_keeps_training_order(dataset, sampler) -> None:
    loader = Loader(dataset, sampler, "cpu", BATCH, shuffle=False)
    assert torch.equal(torch.cat([mb.seeds for mb in epoch(loader)]), dataset.train_idx)


def test_killed_worker_raises_and_leaves_no_process(dataset, sampler) -> None:
    loader = Loader(dataset, sampler, "cpu", 16, workers=2, prefetch=2, worker_kind="process")
    it = iter(loader)
    next(it)
    pids = loader.worker_pids
    os.kill(pids[1], signal.SIGKILL)
    with pytest.raises(RuntimeError, match=r"worker 1 .*SIGKILL"):
        for _ in it:
            pass
    assert_gone(pids)
    assert loader.worker_pids == []
    # The loader recovers: the next epoch starts fresh workers.
    assert len(epoch(loader)) == len(loader)
    pids = loader.worker_pids
    loader.close()
    assert_gone(pids)


def test_worker_exception_surfaces_with_its_message(dataset) -> None:
    loader = Loader(dataset, RaisingSampler(dataset.graph, [10, 5]), "cpu", BATCH, workers=2,
                    worker_kind="process")
    with pytest.raises(RuntimeError, match=r"worker 1 .*batch 3.*ValueError: sampler exploded"):
        epoch(loader)
    assert_gone([p.pid for p in multiprocessing.active_children()])
    assert loader.worker_pids == []


def test_in_process_exception_propagates_unchanged(dataset) -> None:
    loader = Loader(dataset, RaisingSampler(dataset.graph, [10, 5]), "cpu", BATCH)
    with pytest.raises(ValueError, match="sampler exploded on batch_id 3"):
        epoch(loader)


def test_break_close_gc_and_interrupt_stop_the_workers(dataset, sampler) -> None:
    loader = Loader(dataset, sampler, "cpu", BATCH, workers=2, worker_kind="process")
    for _ in loader:
        pids = loader.worker_pids
        break
    assert_gone(pids)
    loader.close()
    with pytest.raises(RuntimeError, match="closed"):
        iter(loader)

    loader = Loader(dataset, sampler, "cpu", BATCH, workers=2, worker_kind="process")
    with pytest.raises(KeyboardInterrupt):
        for _ in loader:
            pids = loader.worker_pids
            raise KeyboardInterrupt
    assert_gone(pids)

    loader = Loader(dataset, sampler, "cpu", BATCH, workers=2, worker_kind="process")
    it = iter(loader)
    next(it)
    pids = loader.worker_pids
    del loader, it
    gc.collect()
    assert_gone(pids)


def test_interrupt_while_waiting_for_workers_stops_them(dataset) -> None:
    loader = Loader(dataset, SleepySampler(dataset.graph, [5]), "cpu", BATCH, workers=2,
                    worker_kind="process")
    it = iter(loader)
    # A process started in the background by a non-interactive shell (as CI may be) inherits
    # SIGINT ignored, and interrupt_main() then does nothing: install Python's handler here.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(1.0, _thread.interrupt_main)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            next(it)
    finally:
        timer.join()
        signal.signal(signal.SIGINT, previous)
    assert loader.worker_pids == []
    assert_gone([p.pid for p in multiprocessing.active_children()])


def test_new_iter_supersedes_an_unfinished_one(dataset, sampler) -> None:
    with Loader(dataset, sampler, "cpu", BATCH, workers=2) as loader:
        old = iter(loader)
        next(old)
        fresh = epoch(loader)
        assert len(fresh) == len(loader) and fresh[0].batch_id == len(loader)
        with pytest.raises(RuntimeError, match="superseded"):
            next(old)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"batch_size": 0}, ValueError, "batch_size"),
    ({"batch_size": 1.5}, TypeError, "batch_size"),
    ({"workers": -1}, ValueError, "workers"),
    ({"streams": 0}, ValueError, "streams"),
    ({"prefetch": 0}, ValueError, "prefetch"),
    ({"device": "banana"}, ValueError, "device"),
    ({"device": "meta"}, ValueError, "device"),
    ({"seed": -1}, ValueError, "seed"),
    ({"shuffle": 1}, TypeError, "shuffle"),
    ({"worker_kind": "fiber"}, ValueError, "worker_kind"),
    ({"worker_kind": 1}, TypeError, "worker_kind"),
])
def test_bad_arguments(dataset, sampler, kwargs: dict, error: type, match: str) -> None:
    args = {"device": "cpu", "batch_size": BATCH, **kwargs}
    with pytest.raises(error, match=match):
        Loader(dataset, sampler, **args)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error without CUDA")
def test_cuda_device_without_cuda(dataset, sampler) -> None:
    with pytest.raises(ValueError, match="device.*CUDA is not available"):
        Loader(dataset, sampler, "cuda", BATCH)


def test_sampler_must_use_the_datasets_graph(dataset) -> None:
    other = datasets.Dataset(**{**dataset.__dict__, "graph": dataset.graph.__class__(
        dataset.graph.indptr, dataset.graph.indices, validate=False)})
    with pytest.raises(ValueError, match="sampler"):
        Loader(other, FusedSampler(dataset.graph, [5]), "cpu", BATCH)
    with pytest.raises(TypeError, match="sampler"):
        Loader(dataset, object(), "cpu", BATCH)


@pytest.mark.parametrize("workers", [0, 1])
def test_a_plan_labels_and_store_stand_in_for_the_dataset(dataset, sampler, workers: int) -> None:
    """Loader(None, ...) with the dataset's own plan, labels and table gives its batches."""
    from gnnrepro.features.store import InMemoryFeatureStore
    from gnnrepro.pipeline import BatchPlan
    store = InMemoryFeatureStore(dataset.features, share=False, pin=False)
    plan = BatchPlan(dataset.train_idx, BATCH, seed=5)
    with Loader(dataset, sampler, "cpu", BATCH, seed=5, workers=workers) as loader:
        want = [(mb.seeds.clone(), mb.batch_id, mb.x.clone(), mb.y.clone()) for mb in loader]
    with Loader(None, sampler, "cpu", BATCH, workers=workers, plan=plan, labels=dataset.labels,
                feature_store=store) as loader:
        got = [(mb.seeds.clone(), mb.batch_id, mb.x.clone(), mb.y.clone()) for mb in loader]
    assert len(got) == len(want) == len(plan)
    for (s, b, x, y), (s2, b2, x2, y2) in zip(got, want):
        assert b == b2 and torch.equal(s, s2) and torch.equal(x, x2) and torch.equal(y, y2)


def test_without_a_dataset_the_plan_labels_and_store_are_required(dataset, sampler) -> None:
    from gnnrepro.features.store import InMemoryFeatureStore
    from gnnrepro.pipeline import BatchPlan
    store = InMemoryFeatureStore(dataset.features, share=False, pin=False)
    plan = BatchPlan(dataset.train_idx, BATCH)
    with pytest.raises(TypeError, match="plan, labels and feature_store"):
        Loader(None, sampler, "cpu", BATCH, plan=plan, feature_store=store)
    with pytest.raises(ValueError, match="worker_kind='process'"):
        Loader(None, sampler, "cpu", BATCH, workers=1, worker_kind="process", plan=plan,
               labels=dataset.labels, feature_store=store)
    with pytest.raises(ValueError, match="plan: its batch_size"):
        Loader(dataset, sampler, "cpu", BATCH * 2, plan=plan)
    with pytest.raises(TypeError, match="dataset must be a gnnrepro Dataset, a TypedDataset or None"):
        Loader("products-sim", sampler, "cpu", BATCH)


@pytest.mark.parametrize("ids", [50, torch.arange(50, dtype=torch.int32),
                                 torch.arange(50) + 7, torch.randperm(50)])
def test_an_epoch_visits_the_ids_in_its_seeded_order(ids):
    """A count n stands for the ids 0..n-1 (their order is the epoch's, no gather); ids given
    are visited as ids[order]."""
    from gnnrepro.pipeline import BatchPlan
    from gnnrepro.pipeline.plan import epoch_order
    plan = BatchPlan(ids, 8, seed=3)
    full = torch.arange(ids) if isinstance(ids, int) else ids
    assert len(plan) == 7
    for epoch in (0, 1):
        got = plan.epoch_ids(epoch)
        want = full[epoch_order(full.numel(), 3, epoch)]
        assert got.dtype == full.dtype and torch.equal(got, want)
    assert not torch.equal(plan.epoch_ids(0), plan.epoch_ids(1))


@pytest.mark.parametrize("ids, error", [(-1, ValueError), (2.5, TypeError), (True, TypeError)])
def test_a_bad_plan_size_is_named(ids, error):
    from gnnrepro.pipeline import BatchPlan
    with pytest.raises(error, match="ids"):
        BatchPlan(ids, 8)
