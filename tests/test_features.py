"""Tests for gnnrepro.features: the gather op, InMemoryFeatureStore and StagingRing."""
from __future__ import annotations

import gc
import pickle
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.multiprocessing as mp

from gnnrepro import _ops
from gnnrepro import pinning
from gnnrepro.features import InMemoryFeatureStore, StagingRing



def gather_rows(src: torch.Tensor, index: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """The op, and the rows it wrote: out[:len(index)]."""
    _ops.ops.gather_rows(src, index, out)
    return out[: index.numel()]


def table(rows: int = 500, dim: int = 37, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(rows, dim, generator=torch.Generator().manual_seed(0)).to(dtype)


# ---- the C++ op -------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32])
def test_op_matches_indexing(dtype: torch.dtype, index_dtype: torch.dtype) -> None:
    src = table(dtype=dtype)
    index = torch.randint(0, 500, (3000,), generator=torch.Generator().manual_seed(1))
    index = torch.cat([index, index[:100], torch.tensor([0, 499, 499])]).to(index_dtype)
    out = torch.empty(index.numel(), 37, dtype=dtype)
    result = gather_rows(src, index, out)
    assert torch.equal(result, src[index.long()])
    assert result.data_ptr() == out.data_ptr()


def test_op_writes_prefix_of_larger_out() -> None:
    src, index = table(), torch.tensor([7, 3, 7])
    out = torch.full((10, 37), -5.0)
    result = gather_rows(src, index, out)
    assert result.shape == (3, 37) and result.data_ptr() == out.data_ptr()
    assert torch.equal(out[:3], src[index])
    assert bool((out[3:] == -5.0).all())


def test_op_empty_index() -> None:
    out = torch.empty(4, 37)
    assert gather_rows(table(), torch.empty(0, dtype=torch.int64), out).shape == (0, 37)


@pytest.mark.parametrize("bad", [-1, 500, 10**12, -(2**62)])
def test_op_index_out_of_range_raises(bad: int) -> None:
    src = table()
    index = torch.zeros(50_000, dtype=torch.int64)
    index[37_123] = bad  # far from the start: hit inside a worker thread's chunk
    with pytest.raises(RuntimeError, match="outside"):
        gather_rows(src, index, torch.empty(50_000, 37))
    with pytest.raises(RuntimeError, match="outside"):
        gather_rows(src, torch.tensor([bad], dtype=torch.int64), torch.empty(1, 37))
    assert torch.equal(gather_rows(src, torch.tensor([2]), torch.empty(1, 37)), src[[2]])


@pytest.mark.parametrize("case", ["float index", "2-D index", "out dtype", "out columns",
                                  "out too short", "out not contiguous", "src 1-D",
                                  "src not contiguous", "out overlaps src"])
def test_op_bad_arguments_raise(case: str) -> None:
    src, index, out = table(), torch.tensor([1, 2, 3]), torch.empty(3, 37)
    args = {
        "float index": (src, index.float(), out),
        "2-D index": (src, index.view(3, 1), out),
        "out dtype": (src, index, out.double()),
        "out columns": (src, index, torch.empty(3, 36)),
        "out too short": (src, index, torch.empty(2, 37)),
        "out not contiguous": (src, index, torch.empty(37, 3).t()),
        "src 1-D": (src[0], index, out),
        "src not contiguous": (torch.empty(37, 500).t(), index, out),
        "out overlaps src": (src, index, src[10:13]),
    }[case]
    with pytest.raises(RuntimeError):
        gather_rows(*args)


def test_op_threads_agree() -> None:
    src = table(20_000, 37)
    index = torch.randint(0, 20_000, (60_000,), generator=torch.Generator().manual_seed(2))
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        single = gather_rows(src, index, torch.empty(60_000, 37))
        torch.set_num_threads(max(2, before))
        multi = gather_rows(src, index, torch.empty(60_000, 37))
    finally:
        torch.set_num_threads(before)
    assert torch.equal(single, multi) and torch.equal(single, src[index])


# ---- InMemoryFeatureStore ---------------------------------------------------------------------

def test_store_gather_matches_indexing() -> None:
    features = table()
    store = InMemoryFeatureStore(features)
    assert (store.num_nodes, store.dim, store.dtype, store.nbytes()) == (
        500, 37, torch.float32, 500 * 37 * 4)
    ids = torch.randint(0, 500, (1000,), generator=torch.Generator().manual_seed(3))
    assert torch.equal(store.gather(ids), features[ids])
    assert torch.equal(store.gather(ids.int()), features[ids])
    assert torch.equal(store.gather(ids.to(torch.int16)), features[ids])
    assert store.gather(torch.empty(0, dtype=torch.int64)).shape == (0, 37)
    out = torch.empty(2000, 37)
    result = store.gather(ids, out=out)
    assert result.data_ptr() == out.data_ptr() and torch.equal(result, features[ids])


@pytest.mark.parametrize("ids, error, match", [
    ([1, 2], TypeError, "ids must be a torch.Tensor"),
    (torch.tensor([1.0]), TypeError, "integer"),
    (torch.tensor([[1]]), ValueError, "1-D"),
    (torch.tensor([0, 500]), ValueError, r"\[0, num_nodes=500\)"),
    (torch.tensor([-1]), ValueError, "ids must lie"),
])
def test_store_bad_ids_raise(ids: object, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        InMemoryFeatureStore(table()).gather(ids)


@pytest.mark.parametrize("out, error", [
    (np.empty((3, 37), np.float32), TypeError),
    (torch.empty(3, 37, dtype=torch.float64), TypeError),
    (torch.empty(2, 37), ValueError),
    (torch.empty(3, 36), ValueError),
    (torch.empty(37, 3).t(), ValueError),
])
def test_store_bad_out_raises(out: object, error: type) -> None:
    with pytest.raises(error, match="out"):
        InMemoryFeatureStore(table()).gather(torch.tensor([1, 2, 3]), out=out)


@pytest.mark.parametrize("features, error", [
    (np.zeros((3, 3), np.float32), TypeError),
    (torch.zeros(3, 3, dtype=torch.int64), TypeError),
    (torch.zeros(3), ValueError),
    (torch.zeros(3, 4).t(), ValueError),
])
def test_store_bad_features_raise(features: object, error: type) -> None:
    with pytest.raises(error, match="features"):
        InMemoryFeatureStore(features)


def test_store_shares_in_place_once(tmp_path: Path) -> None:
    features = table()
    assert not features.is_shared()
    store = InMemoryFeatureStore(features)
    assert features.is_shared() and store.features is features
    ptr = features.data_ptr()
    InMemoryFeatureStore(features)  # already shared: no second copy
    assert features.data_ptr() == ptr
    # A dataset's features: a copy-on-write memmap of the cache file, moved to shared memory.
    np.save(tmp_path / "f.npy", table().numpy())
    mapped = torch.from_numpy(np.load(tmp_path / "f.npy", mmap_mode="c"))
    shared = InMemoryFeatureStore(mapped).features
    assert shared.is_shared() and torch.equal(shared, table())
    assert not InMemoryFeatureStore(table(), share=False).features.is_shared()


def test_file_backed_store_pickles_by_name(tmp_path: Path) -> None:
    flat = torch.from_file(str(tmp_path / "f.bin"), shared=True, size=50 * 8 + 5)
    features = flat[5:].view(50, 8)
    features.copy_(table(50, 8))
    store = InMemoryFeatureStore(features)
    assert store.features is features  # a shared file mapping is used as it is
    twin = pickle.loads(pickle.dumps(store))
    assert torch.equal(twin.features, features)
    features[4, 2] = 123.0
    assert float(twin.gather(torch.tensor([4]))[0, 2]) == 123.0


class FakeCudart:
    """Stands in for torch.cuda.cudart() to test the pinning bookkeeping without a GPU."""

    def __init__(self, register_error: int):
        self.register_error = register_error
        self.registered: list[int] = []
        self.unregistered: list[int] = []

    def cudaHostRegister(self, ptr: int, nbytes: int, flags: int) -> int:
        self.registered.append(ptr)
        return self.register_error

    def cudaHostUnregister(self, ptr: int) -> int:
        self.unregistered.append(ptr)
        return self.register_error


def fake_cuda(monkeypatch: pytest.MonkeyPatch, register_error: int) -> FakeCudart:
    cudart = FakeCudart(register_error)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "cudart", lambda: cudart)
    return cudart


def test_store_pins_in_place_and_unregisters(monkeypatch: pytest.MonkeyPatch) -> None:
    cudart = fake_cuda(monkeypatch, register_error=0)
    features = table()
    store = InMemoryFeatureStore(features)
    assert store.pinned and cudart.registered == [features.data_ptr()]
    assert pickle.loads(pickle.dumps(store)).pinned is False  # pinning is per process
    del store
    gc.collect()
    assert cudart.unregistered == []  # the caller's tensor still holds the storage
    del features
    gc.collect()
    assert cudart.unregistered == cudart.registered


def test_store_pin_failure_warns_and_stays_pageable(monkeypatch: pytest.MonkeyPatch) -> None:
    cleared = []
    monkeypatch.setattr(pinning, "clear_cuda_error", lambda: cleared.append(True))
    fake_cuda(monkeypatch, register_error=2)
    with pytest.warns(UserWarning, match="stays pageable") as record:
        store = InMemoryFeatureStore(table())
    assert len(record) == 1 and not store.pinned
    assert cleared == [True]  # the failed call's error must not surface in a later CUDA op
    pinning.clear_cuda_error()  # the real one: a no-op without libcudart loaded
    assert torch.equal(store.gather(torch.tensor([3])), table()[[3]])


def test_store_without_cuda_is_silent() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not InMemoryFeatureStore(table()).pinned


def _child(store: InMemoryFeatureStore, ready: mp.Event, results: mp.Queue) -> None:
    ready.wait(60)
    results.put((store.features.is_shared(), store.gather(torch.tensor([5, 6])).tolist()))
    store.features[7, 0] = -321.0  # the parent must see this write as well


def test_store_is_shared_with_spawned_child_not_copied() -> None:
    features = table(200, 4)
    store = InMemoryFeatureStore(features)
    ctx = mp.get_context("spawn")
    ready, results = ctx.Event(), ctx.Queue()
    child = ctx.Process(target=_child, args=(store, ready, results))
    child.start()
    features[5] = 42.0  # written after the store was sent: only a shared mapping sees it
    ready.set()
    try:
        shared, rows = results.get(timeout=60)
    finally:
        child.join(60)
    assert child.exitcode == 0 and shared
    assert rows[0] == [42.0] * 4 and rows[1] == features[6].tolist()
    assert float(features[7, 0]) == -321.0


# ---- StagingRing ------------------------------------------------------------------------------

def test_ring_hands_out_the_lowest_free_slot() -> None:
    """Used one batch at a time, a ring writes one slot only (its other slots' pages are never
    committed); slots in use are never handed out twice."""
    ring = StagingRing(3, 100, 37)
    assert ring.buffers is None and not ring.pinned  # not shared; no CUDA here
    assert [s.buffer.shape for s in ring.slots] == [(100, 37)] * 3
    seen = []
    for _ in range(4):
        slot = ring.acquire()
        seen.append((slot.index, slot.buffer.data_ptr()))
        slot.release()
    assert seen == [(0, ring.slots[0].buffer.data_ptr())] * 4
    held = [ring.acquire() for _ in range(3)]
    assert [s.index for s in held] == [0, 1, 2]
    held[1].release()
    again = ring.acquire()
    assert again.index == 1 and again.buffer is ring.slots[1].buffer  # the tensor, not a view


def test_shared_ring_commits_only_the_rows_written() -> None:
    from gnnrepro.distributed.memory import data_copies
    # 32 MB of slots sized for the worst case; unpinned (page-locking commits every page)
    ring = StagingRing(4, 20_000, 100, pin=False, share=True)
    assert ring.buffers.is_shared() and ring.buffers.shape == (4, 20_000, 100)
    assert data_copies({"ring": ring.buffers})[0]["resident_bytes"] == 0
    ring.slots[1].buffer[:1000] = 1.0  # a 400 KB batch
    resident = data_copies({"ring": ring.buffers})[0]["resident_bytes"]
    assert 1000 * 100 * 4 <= resident <= 1000 * 100 * 4 + (2 << 20)  # a huge page at most
    assert float(ring.slots[1].buffer[:1000].sum()) == 1000 * 100


def test_a_slot_grows_once_to_fit_and_no_further_than_the_bound() -> None:
    ring = StagingRing(2, 1000, 3, initial_rows=10)
    slot = ring.acquire()
    assert slot.reserve(10) is slot.buffer and slot.buffer.shape == (10, 3)
    grown = slot.reserve(12)
    assert grown is slot.buffer and grown.shape == (15, 3)  # by half at least: few regrowths
    assert slot.reserve(800).shape == (800, 3) and ring.slots[1].buffer.shape == (10, 3)
    with pytest.raises(ValueError, match="needs 1001 staging rows but a slot holds at most 1000"):
        slot.reserve(1001)
    shared = StagingRing(1, 20, 3, pin=False, share=True)
    with pytest.raises(ValueError, match="needs 21 staging rows but a slot holds at most 20"):
        shared.acquire().reserve(21)


def test_ring_gather_into_slot_allocates_nothing() -> None:
    store, ring = InMemoryFeatureStore(table()), StagingRing(2, 64, 37)
    ids = torch.tensor([9, 1, 9])
    slot = ring.acquire()
    rows = store.gather(ids, out=slot.buffer)
    assert rows.data_ptr() == slot.buffer.data_ptr() and torch.equal(rows, table()[ids])


def test_ring_all_busy_raises_then_frees() -> None:
    ring = StagingRing(2, 4, 3)
    a, b = ring.acquire(), ring.acquire()
    assert ring.num_busy == 2
    start = time.monotonic()
    with pytest.raises(TimeoutError, match="all 2 staging slots are still busy"):
        ring.acquire(timeout=0.05)
    assert time.monotonic() - start < 5
    b.release()
    assert ring.acquire(timeout=0) is b
    a.release()
    assert ring.acquire(timeout=0) is a


def test_ring_acquire_waits_for_release_from_another_thread() -> None:
    ring = StagingRing(1, 4, 3)
    slot = ring.acquire()
    timer = threading.Timer(0.05, slot.release)
    timer.start()
    assert ring.acquire(timeout=10) is slot
    timer.join()


class FakeEvent:
    def __init__(self) -> None:
        self.done = False

    def query(self) -> bool:
        return self.done


def test_ring_release_after_event() -> None:
    ring = StagingRing(1, 4, 3)
    slot = ring.acquire()
    event = FakeEvent()
    slot.release_after(event)
    assert ring.num_busy == 1
    with pytest.raises(TimeoutError):
        ring.acquire(timeout=0.01)
    threading.Timer(0.05, lambda: setattr(event, "done", True)).start()
    assert ring.acquire(timeout=10) is slot  # polled until the event completed
    assert ring.num_busy == 1


def test_ring_misuse_raises() -> None:
    ring = StagingRing(2, 4, 3)
    slot = ring.acquire()
    slot.release()
    with pytest.raises(RuntimeError, match="released twice"):
        slot.release()
    with pytest.raises(RuntimeError, match="released twice"):
        slot.release_after(FakeEvent())
    with pytest.raises(TypeError, match="query"):
        ring.acquire().release_after(object())
    with pytest.raises(ValueError, match="timeout"):
        ring.acquire(timeout=-1)


@pytest.mark.parametrize("kwargs, error", [
    ({"slots": 0}, ValueError), ({"max_rows": 0}, ValueError), ({"dim": 2.0}, TypeError),
    ({"dtype": "float32"}, TypeError), ({"pin": 1}, TypeError),
])
def test_ring_bad_arguments_raise(kwargs: dict, error: type) -> None:
    args = {"slots": 2, "max_rows": 4, "dim": 3, **kwargs}
    with pytest.raises(error, match=next(iter(kwargs))):
        StagingRing(**args)


def test_ring_shared_buffers_pin_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    cudart = fake_cuda(monkeypatch, register_error=0)
    ring = StagingRing(2, 4, 3, share=True)
    assert ring.buffers.is_shared() and ring.pinned
    assert cudart.registered == [ring.buffers.data_ptr()]
    assert pinning.pin_in_place(torch.empty(0)) is False
