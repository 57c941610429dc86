"""Loader worker threads (gnnrepro.pipeline.thread_workers): errors and hangs named, threads
joined on close, each thread's own intra-op thread count, stores and samplers that threads
cannot share refused, and a script without a main guard. That their batches equal workers=0's
and worker processes' is tests/test_loader.py's test_batches_do_not_depend_on_workers_or_streams."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
import torch

import gnnrepro
from gnnrepro import _ops
from gnnrepro.config import TrainConfig
from gnnrepro.features.store import InMemoryFeatureStore
from gnnrepro.pipeline import Loader
from gnnrepro.pipeline.thread_workers import set_local_num_threads
from gnnrepro.sampling import FusedSampler

BATCH = 64
needs_local_threads = pytest.mark.skipif(not _ops._C.local_threads_supported(),
                                         reason="torch's parallel backend is not OpenMP")


class RaisingSampler(FusedSampler):
    def sample(self, seeds: torch.Tensor, batch_id: int = 0):
        if batch_id == 3:
            raise ValueError(f"sampler exploded on batch_id {batch_id}")
        return super().sample(seeds, batch_id)


class StuckSampler(FusedSampler):
    """Waits (up to 30 s) for `release` from batch 1 on: a worker that owes a batch and says
    nothing."""

    release = threading.Event()

    def sample(self, seeds: torch.Tensor, batch_id: int = 0):
        if batch_id >= 1:
            self.release.wait(30)
        return super().sample(seeds, batch_id)


class ThreadCountSampler(FusedSampler):
    """Records torch.get_num_threads() in the thread that samples."""

    seen: list[int] = []

    def sample(self, seeds: torch.Tensor, batch_id: int = 0):
        self.seen.append(torch.get_num_threads())
        return super().sample(seeds, batch_id)


class UnsafeStore(InMemoryFeatureStore):
    thread_use = None


def worker_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("Loader worker thread")]


def test_exception_in_a_worker_thread_names_it_and_keeps_the_cause(dataset) -> None:
    before = threading.active_count()
    loader = Loader(dataset, RaisingSampler(dataset.graph, [10, 5]), "cpu", BATCH, workers=2)
    with pytest.raises(RuntimeError,
                       match=r"Loader worker thread 1 .*batch 3.*ValueError: sampler exploded"
                       ) as info:
        list(loader)
    assert isinstance(info.value.__cause__, ValueError)
    assert loader.worker_pids == [] and threading.active_count() == before


def test_a_silent_worker_thread_is_reported_as_hung(dataset) -> None:
    sampler = StuckSampler(dataset.graph, [5], seed=0)
    loader = Loader(dataset, sampler, "cpu", BATCH, workers=2, timeout_s=0.5)
    try:
        with pytest.raises(RuntimeError, match=r"Loader worker thread [01] sent nothing .*hung"):
            with pytest.warns(RuntimeWarning, match="did not stop"):  # stuck in sample()
                list(loader)
    finally:
        sampler.release.set()
    for thread in worker_threads():
        thread.join(30)
    assert not worker_threads()


def test_close_break_and_gc_join_the_threads(dataset) -> None:
    before = threading.active_count()
    sampler = FusedSampler(dataset.graph, [5, 5], seed=0)
    with Loader(dataset, sampler, "cpu", BATCH, workers=2, prefetch=2) as loader:
        assert len(list(loader)) == len(loader)
        assert loader.worker_pids == [os.getpid()] * 2
        assert threading.active_count() == before + 2  # reused by the next epoch
        for _ in loader:
            break  # leaving an epoch early stops them
        assert threading.active_count() == before
        next(iter(loader))
    assert threading.active_count() == before
    loader = Loader(dataset, sampler, "cpu", BATCH, workers=2)
    it = iter(loader)
    next(it)
    del loader, it
    assert threading.active_count() == before


@needs_local_threads
def test_set_local_num_threads_changes_the_calling_thread_only() -> None:
    main = torch.get_num_threads()
    seen = {}

    def work() -> None:  # the call comes first: torch's own lazy per-thread set-up must not
        assert set_local_num_threads(main + 2)  # undo it later
        seen["after"] = torch.get_num_threads()
        torch.ones(1000).sum()
        seen["after an op"] = torch.get_num_threads()

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert seen == {"after": main + 2, "after an op": main + 2}
    assert torch.get_num_threads() == main
    with pytest.raises(ValueError, match="n must be >= 1"):
        set_local_num_threads(0)


@needs_local_threads
def test_worker_threads_use_worker_threads_intra_op_threads(dataset) -> None:
    main = torch.get_num_threads()
    sampler = ThreadCountSampler(dataset.graph, [5], seed=0)
    with Loader(dataset, sampler, "cpu", BATCH, workers=2, worker_threads=main + 1) as loader:
        list(loader)
    assert set(sampler.seen) == {main + 1}
    assert torch.get_num_threads() == main


def test_each_thread_samples_with_its_own_sampler_sharing_the_graph(dataset) -> None:
    from gnnrepro.pipeline.thread_workers import ThreadWorkerPool
    sampler = FusedSampler(dataset.graph, [5], seed=0)
    store = InMemoryFeatureStore(dataset.features, share=False, pin=False)
    pool = ThreadWorkerPool(2, sampler, store, None, 1, 10.0)
    try:
        copies = [t._args[1] for t in pool._threads]
    finally:
        pool.shutdown()
    assert len({id(c) for c in copies} | {id(sampler)}) == 3
    assert len({id(c._lock) for c in copies} | {id(sampler._lock)}) == 3
    assert all(c.graph.indices.data_ptr() == sampler.graph.indices.data_ptr() for c in copies)


def test_stores_and_samplers_threads_cannot_share_are_refused(dataset) -> None:
    sampler = FusedSampler(dataset.graph, [5], seed=0)
    store = UnsafeStore(dataset.features, share=False, pin=False)
    with pytest.raises(ValueError, match="worker_kind"):
        Loader(dataset, sampler, "cpu", BATCH, workers=1, feature_store=store)
    Loader(dataset, sampler, "cpu", BATCH, workers=0, feature_store=store).close()
    unsafe = FusedSampler(dataset.graph, [5], seed=0)
    unsafe.thread_use = None
    with pytest.raises(ValueError, match="worker_kind"):
        Loader(dataset, unsafe, "cpu", BATCH, workers=1)


def test_worker_kind_is_a_checked_setting() -> None:
    assert TrainConfig().worker_kind == "thread"
    with pytest.raises(ValueError, match="worker_kind must be one of thread, process"):
        TrainConfig(worker_kind="fiber")


def test_a_script_without_a_main_guard_trains_with_thread_workers(tmp_path) -> None:
    """Process workers need `if __name__ == "__main__":` (tests/test_supervisor.py); threads
    do not."""
    script = tmp_path / "train_script.py"
    script.write_text(textwrap.dedent("""
        from gnnrepro import datasets
        from gnnrepro.training.pipelines import train_pipeline

        data = datasets.load("products-sim", scale=0.003)
        result = train_pipeline("fused+pinned", data, [5, 5], epochs=1, batch_size=128,
                                workers=2, worker_kind="thread", device="cpu", threads=1)
        print("worker_kind", result.params["config"]["worker_kind"])
    """))
    here = str(Path(gnnrepro.__file__).parents[1])  # this checkout's package, not another's
    env = {**os.environ, "GNNREPRO_DATA": str(tmp_path / "data"),
           "PYTHONPATH": os.pathsep.join([here, os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=300, cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr
    assert "worker_kind thread" in out.stdout
