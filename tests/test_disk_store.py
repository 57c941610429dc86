"""Tests for the disk-backed feature stores: DiskFeatureStore (O_DIRECT reader, hot set, CLOCK
cache, prefetch), the feature file, the mmap and LMDB baselines, and their failure modes."""
from __future__ import annotations

import copy
import errno
import os
import pickle
import shutil
import threading

import psutil
import pytest
import torch

from gnnrepro import _ops
from gnnrepro.feature_file import read_header, write_feature_file
from gnnrepro.features import DiskFeatureStore, MmapFeatureStore, open_feature_store
from gnnrepro.features.baseline_stores import LmdbFeatureStore, write_lmdb
from gnnrepro.features.hot import hot_nodes
from gnnrepro.features.row_cache import ClockCache
from gnnrepro.pipeline import Loader
from gnnrepro.sampling import FusedSampler

N, DIM = 3000, 100  # 400-byte rows: a row straddles a 512-byte sector boundary most times


@pytest.fixture(scope="module")
def table() -> torch.Tensor:
    return torch.randn(N, DIM, generator=torch.Generator().manual_seed(0))


@pytest.fixture(scope="module")
def files(table: torch.Tensor, tmp_path_factory: pytest.TempPathFactory) -> dict:
    d = tmp_path_factory.mktemp("features")
    order = torch.randperm(N, generator=torch.Generator().manual_seed(1))
    return {"plain": write_feature_file(d / "plain.gnnf", table).path,
            "ordered": write_feature_file(d / "ordered.gnnf", table, order=order).path,
            "packed": write_feature_file(d / "packed.gnnf", table, pack_block=512).path,
            "packed4k": write_feature_file(d / "packed4k.gnnf", table, order=order,
                                           pack_block=4096).path}


def batches(count: int, size: int, seed: int):
    gen = torch.Generator().manual_seed(seed)
    for _ in range(count):  # skewed: low ids repeat often, like hubs in sampled batches
        ids = (torch.rand(size, generator=gen) ** 3 * N).long()
        yield ids


@pytest.mark.parametrize("engine", ["pread", "auto"])
@pytest.mark.parametrize("kind", ["plain", "ordered", "packed", "packed4k"])
def test_disk_store_rows_equal_in_memory_rows(files, table, engine: str, kind: str) -> None:
    store = DiskFeatureStore(files[kind], engine=engine, hot_ids=torch.arange(0, N, 17),
                             cache_bytes=300 * DIM * 4, threads=4, queue_depth=8)
    for i, ids in enumerate(batches(6, 700, seed=2)):
        ids = ids.to(torch.int32) if i % 2 else ids
        if i % 3 == 0:
            store.prefetch(ids)
        out = torch.full((800, DIM), float("nan"))
        result = store.gather(ids, out)
        assert result.data_ptr() == out.data_ptr() and torch.equal(result, table[ids.long()])
        assert bool(out[len(ids):].isnan().all())  # nothing past the batch is written
    stats = store.stats
    assert stats.hot_hits > 0 and stats.cache_hits > 0 and stats.rows_read > 0
    assert store.gather(torch.empty(0, dtype=torch.int64)).shape == (0, DIM)
    store.close()


@pytest.mark.parametrize("cache_rows", [1, 7, 64, 500, 5000])
def test_cache_never_returns_another_ids_row(files, table, cache_rows: int) -> None:
    """Randomised: many epochs of skewed batches through caches of every size."""
    store = DiskFeatureStore(files["ordered"], cache_bytes=cache_rows * DIM * 4,
                             hot_ids=torch.arange(0, N, 101) if cache_rows > 64 else None,
                             threads=2)
    for epoch in range(4):
        for ids in batches(5, 400, seed=10 * cache_rows + epoch):
            assert torch.equal(store.gather(ids), table[ids])
        c = store.cache
        held = torch.nonzero(c.owner >= 0).squeeze(1)
        assert torch.equal(c.slot_of[c.owner[held]].long(), held)  # the invariant
        assert int((c.slot_of >= 0).sum()) == held.numel()
        assert torch.equal(c.data[held], table[c.owner[held]])
    store.close()


def test_clock_cache_gives_a_second_chance() -> None:
    cache = ClockCache(4, 100, 1, torch.float32)
    cache.insert(torch.tensor([1, 2, 3, 4]), torch.tensor([[1.], [2.], [3.], [4.]]))
    cache.insert(torch.tensor([5]), torch.tensor([[5.]]))  # all referenced: full sweep, slot 0
    cache.lookup(torch.tensor([2]))  # 2 is used again: survives the next sweep
    cache.insert(torch.tensor([6, 7]), torch.tensor([[6.], [7.]]))
    assert sorted(cache.owner.tolist()) == [2, 5, 6, 7]


class ReferenceClock:
    """The CLOCK cache as it was in Python before it moved to C++ (gnnrepro/features/
    row_cache.py at 144f475), kept as the reference its semantics are checked against."""

    def __init__(self, capacity: int, num_nodes: int):
        self.capacity, self.hand = capacity, 0
        self.owner = torch.full((capacity,), -1, dtype=torch.int64)
        self.ref = torch.zeros(capacity, dtype=torch.bool)
        self.slot_of = torch.full((num_nodes,), -1, dtype=torch.int32)

    def lookup(self, ids: torch.Tensor) -> None:
        slots = self.slot_of[ids]
        self.ref[slots[slots >= 0].long()] = True

    def insert(self, ids: torch.Tensor) -> None:
        ids = ids[self.slot_of[ids] < 0][: self.capacity]
        if ids.numel() == 0:
            return
        victims = self._victims(ids.numel())
        old = self.owner[victims]
        self.slot_of[old[old >= 0]] = -1
        self.owner[victims] = ids
        self.slot_of[ids] = victims.to(torch.int32)
        self.ref[victims] = True

    def _victims(self, k: int) -> torch.Tensor:
        c, taken, need = self.capacity, [], k
        while need:
            order = (torch.arange(c) + self.hand) % c
            free = order[~self.ref[order]]
            if free.numel() >= need:
                pick = free[:need]
                last = int(pick[-1])
                self.ref[order[: (last - self.hand) % c + 1]] = False
                self.hand = (last + 1) % c
                taken.append(pick)
                break
            self.ref[:] = False
            taken.append(free)
            self.ref[free] = True
            need -= free.numel()
        return torch.cat(taken)


@pytest.mark.parametrize("capacity", [1, 5, 64])
def test_clock_cache_matches_the_python_reference(capacity: int) -> None:
    """Randomised: the C++ CLOCK takes the same slots, bits and hand as the old Python one."""
    gen = torch.Generator().manual_seed(capacity)
    nodes = 200
    cache, ref = ClockCache(capacity, nodes, 2, torch.float32), ReferenceClock(capacity, nodes)
    for _ in range(300):
        ids = torch.randperm(nodes, generator=gen)[: int(torch.randint(1, 90, (1,),
                                                                        generator=gen))]
        if bool(torch.rand(1, generator=gen) < 0.4):
            cache.lookup(ids)
            ref.lookup(ids)
        else:
            cache.insert(ids, ids.float()[:, None].repeat(1, 2))
            ref.insert(ids)
        assert torch.equal(cache.owner, ref.owner) and torch.equal(cache.ref, ref.ref)
        assert torch.equal(cache.slot_of, ref.slot_of) and cache.hand == ref.hand
        held = torch.nonzero(cache.owner >= 0).squeeze(1)
        assert torch.equal(cache.data[held, 0], cache.owner[held].float())


def test_clock_cache_skips_repeats_and_checks_its_arguments() -> None:
    cache = ClockCache(4, 10, 1, torch.float32)
    cache.insert(torch.tensor([3, 3, 5]), torch.tensor([[1.], [2.], [3.]]))
    assert sorted(cache.owner.tolist()) == [-1, -1, 3, 5]
    assert float(cache.data[cache.slot_of[3]]) == 1.0  # the first of a repeated id is kept
    with pytest.raises(RuntimeError, match="outside"):
        cache.insert(torch.tensor([10]), torch.tensor([[1.]]))
    with pytest.raises(RuntimeError, match="outside"):
        cache.lookup(torch.tensor([-1]))
    with pytest.raises(TypeError, match="rows"):
        cache.insert(torch.tensor([1]), torch.tensor([[1.]], dtype=torch.float64))
    cache.slot_of[7] = 2  # a stale entry: slot 2 is not owned by node 7, so it is no hit
    hit, _ = cache.lookup(torch.tensor([7]))
    assert hit.numel() == 0


def test_announced_batches_that_differ_from_the_gathered_ones(files, table) -> None:
    """Announced reads consumed by other batches (a caller out of step): rows stay right."""
    store = DiskFeatureStore(files["ordered"], hot_ids=torch.arange(0, N, 29),
                             cache_bytes=200 * DIM * 4, threads=2, queue_depth=4)
    got = list(batches(8, 500, seed=21))
    for i, ids in enumerate(got):
        store.prefetch(got[(i + 3) % len(got)])  # a later batch, not this one
        if i % 4 == 3:
            store.prefetch(torch.empty(0, dtype=torch.int64))
        assert torch.equal(store.gather(ids), table[ids])
    assert store.stats.prefetch_hits > 0 and store._plan.pending > 0
    store.discard_prefetched()
    assert store._plan.pending == 0
    store.close()


def test_a_batch_read_goes_ahead_of_announced_reads(files) -> None:
    """An urgent read (the batch being gathered) is taken before reads queued earlier."""
    store = DiskFeatureStore(files["plain"], engine="pread", threads=1, max_gap_bytes=0,
                             block_size=512)
    far = torch.arange(0, N, 3)  # ~1000 requests of one row each
    big = store.reader.submit(far, torch.empty(far.numel(), DIM * 4, dtype=torch.uint8))
    small = store.reader.submit(torch.tensor([1]), torch.empty(1, DIM * 4, dtype=torch.uint8),
                                urgent=True)
    small.wait()
    big.wait()
    assert small.finished_at() < big.finished_at()
    store.close()


def test_gathers_from_several_threads_at_once(files, table) -> None:
    """The C++ plan releases the GIL and serialises calls on one store with its lock: threads
    gathering and announcing at once all get their own rows."""
    store = DiskFeatureStore(files["packed4k"], hot_ids=torch.arange(0, N, 13),
                             cache_bytes=150 * DIM * 4, threads=2, queue_depth=8)
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        try:
            for ids in batches(6, 300, seed=seed):
                store.prefetch(ids)
                assert torch.equal(store.gather(ids), table[ids])
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(40 + t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    c = store.cache
    held = torch.nonzero(c.owner >= 0).squeeze(1)
    assert torch.equal(c.slot_of[c.owner[held]].long(), held)
    assert torch.equal(c.data[held], table[c.owner[held]])
    store.close()


def test_the_cpp_plan_checks_what_python_passes(files, table) -> None:
    """gnnrepro._C.DiskGather called directly: bad ids, out or hot slots raise, never read
    out of bounds."""
    store = DiskFeatureStore(files["plain"], hot_ids=torch.arange(10), threads=2)
    plan = store._plan
    out = torch.empty(4, DIM)
    with pytest.raises(RuntimeError, match="outside"):
        plan.gather(torch.tensor([N]), out)
    with pytest.raises(RuntimeError, match="outside"):
        plan.prefetch(torch.tensor([-5]))
    with pytest.raises(RuntimeError, match="ids must be"):
        plan.gather(torch.tensor([1.0]), out)
    with pytest.raises(RuntimeError, match="out must be"):
        plan.gather(torch.tensor([1]), torch.empty(4, DIM, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="out must be"):
        plan.gather(torch.tensor([1]), torch.empty(DIM, 4).t())
    with pytest.raises(RuntimeError, match="out must be"):
        plan.gather(torch.tensor([1]), torch.empty(4, DIM - 1))
    with pytest.raises(RuntimeError, match="fewer than"):
        plan.gather(torch.tensor([1, 2]), torch.empty(1, DIM))
    store.hot_slot[20] = 10  # past the 10 hot rows
    with pytest.raises(RuntimeError, match="outside the 10 hot rows"):
        plan.gather(torch.tensor([20]), out)
    store.hot_slot[20] = -1
    ids = torch.tensor([20, 3, 20, 2999], dtype=torch.int32)
    assert torch.equal(store.gather(ids, out), table[ids.long()])
    store.close()


def test_coalescing_reads_each_block_once(files) -> None:
    store = DiskFeatureStore(files["plain"], block_size=512, max_gap_bytes=0, threads=2)
    store.gather(torch.arange(N))  # every row: one sequential sweep
    assert store.stats.bytes_read_per_byte_used(DIM * 4) < 1.01
    assert store.stats.requests == -(-(N * DIM * 4) // (128 << 10)) or \
        store.stats.requests <= N * DIM * 4 // (128 << 10) + 2
    single = DiskFeatureStore(files["plain"], block_size=512, threads=2)
    single.gather(torch.tensor([1]))  # bytes [4096+400, 4096+800): sectors 8 and 9
    assert single.stats.requests == 1 and single.stats.bytes_read == 1024
    four_k = DiskFeatureStore(files["plain"], block_size=4096, threads=2)
    four_k.gather(torch.tensor([1]))
    assert four_k.stats.bytes_read == 4096
    packed = DiskFeatureStore(files["packed"], block_size=512, threads=2)
    packed.gather(torch.tensor([1, 7]))  # a row per sector, never straddling one
    assert packed.stats.requests == 2 and packed.stats.bytes_read == 1024
    packed4k = DiskFeatureStore(files["packed4k"], block_size=4096, threads=2)
    assert (packed4k.info.rows_per_unit, packed4k.info.unit_bytes) == (10, 4096)
    packed4k.gather(packed4k.order[10:20])  # the rows of slots 10-19 fill the second block
    assert packed4k.stats.requests == 1 and packed4k.stats.bytes_read == 4096
    with pytest.raises(ValueError, match="block-packed"):
        MmapFeatureStore(files["packed"])
    for s in (store, single, four_k, packed, packed4k):
        s.close()


def test_mmap_lmdb_and_memory_kinds_match(files, table, tmp_path) -> None:
    pytest.importorskip("lmdb")
    for kind in ("memory", "mmap", "lmdb", "disk"):
        store = open_feature_store(kind, files["ordered"], share=False)
        for ids in batches(3, 300, seed=5):
            assert torch.equal(store.gather(ids), table[ids]), kind


def test_loader_uses_a_disk_store_unchanged(dataset, tmp_path) -> None:
    store = open_feature_store("disk", dataset, path=tmp_path / "f.gnnf",
                               hot_bytes=40_000, cache_bytes=80_000)
    sampler = FusedSampler(dataset.graph, [5, 5], seed=0)
    with Loader(dataset, sampler, "cpu", 128, feature_store=store, prefetch=2) as loader:
        for epoch in range(2):
            for i, mb in enumerate(loader):
                assert torch.equal(mb.x, dataset.features[mb.input_nodes])
                if epoch == 0 and i == 1:
                    break  # an abandoned epoch leaves reads announced: the next must not care
        lanes = {s.lane for s in loader.spans()}
    # Reads of the next batches were started before they were gathered, and show on the
    # timeline as the device's lane.
    assert store.stats.hot_hits and store.stats.rows_read and store.stats.prefetch_hits
    assert "disk" in lanes
    # Worker processes receive the store pickled: the hot set shared, the file reopened;
    # worker threads each gather with a copy.copy (own reader, shared hot set and cache).
    for kind, workers in (("process", 1), ("thread", 2)):
        with Loader(dataset, sampler, "cpu", 256, workers=workers, feature_store=store,
                    worker_kind=kind) as loader:
            for mb in loader:
                assert torch.equal(mb.x, dataset.features[mb.input_nodes])
    with pytest.raises(TypeError, match="feature_store must be a FeatureStore"):
        Loader(dataset, sampler, "cpu", 128, feature_store="disk")  # a kind: open it first


@pytest.mark.parametrize("read_ahead", [True, False])
@pytest.mark.parametrize("thread_cache", ["shared", "per-thread"])
def test_worker_threads_read_ahead_and_share_one_cache(dataset, tmp_path, read_ahead,
                                                      thread_cache) -> None:
    store = open_feature_store("disk", dataset, path=tmp_path / "f.gnnf", hot_bytes=40_000,
                               cache_bytes=200_000, thread_cache=thread_cache)
    twin = copy.copy(store)
    assert (twin.cache is store.cache) == (thread_cache == "shared")
    assert twin.reader is not store.reader and twin.stats is store.stats
    assert twin.hot is store.hot
    twin.close()
    sampler = FusedSampler(dataset.graph, [5, 5], seed=0)
    with Loader(dataset, sampler, "cpu", 64, workers=2, worker_kind="thread", prefetch=6,
                feature_store=store, read_ahead=read_ahead) as loader:
        for epoch in range(2):
            for i, mb in enumerate(loader):
                assert torch.equal(mb.x, dataset.features[mb.input_nodes])
                if epoch == 0 and i == 3:
                    break  # abandoned with reads announced: the threads discard them
    stats = store.reset_stats()
    assert stats.rows > 0  # the threads' copies count into the store's counters
    assert (stats.prefetch_hits > 0) == read_ahead  # rows of batches announced ahead
    # the threads filled the store's own cache only when they share it
    assert bool((store.cache.owner >= 0).any()) == (thread_cache == "shared")
    assert store.reset_stats().rows == 0
    with pytest.raises(ValueError, match="thread_cache"):
        open_feature_store("disk", dataset, path=tmp_path / "f.gnnf", thread_cache="global")
    store.close()


def test_store_survives_pickling(files, table) -> None:
    store = DiskFeatureStore(files["ordered"], hot_ids=torch.arange(50), cache_bytes=40_000)
    clone = pickle.loads(pickle.dumps(store))
    ids = torch.arange(0, N, 3)
    assert torch.equal(clone.gather(ids), table[ids])
    assert torch.equal(clone.hot, store.hot) and clone.cache.capacity == store.cache.capacity
    clone.close()
    store.close()


def test_hot_nodes_by_degree_and_pagerank(dataset) -> None:
    hot = hot_nodes(dataset.graph, 100, "degree")
    deg = dataset.graph.in_degrees()
    assert hot.numel() == 100 and int(deg[hot].min()) >= int(deg.sort().values[-100])
    pr = hot_nodes(dataset.graph, 100, "pagerank", dataset.train_idx)
    assert pr.numel() == 100 and pr.unique().numel() == 100
    with pytest.raises(ValueError, match="hot_policy"):
        hot_nodes(dataset.graph, 10, "random")


# ---- failures ---------------------------------------------------------------------------------

def test_bad_arguments_raise(files) -> None:
    store = DiskFeatureStore(files["plain"], threads=2)
    with pytest.raises(ValueError, match="ids"):
        store.gather(torch.tensor([N]))
    with pytest.raises(TypeError, match="ids"):
        store.gather(torch.tensor([1.0]))
    with pytest.raises(TypeError, match="out"):
        store.gather(torch.tensor([1]), torch.empty(1, DIM, dtype=torch.float64))
    with pytest.raises(ValueError, match="out"):
        store.gather(torch.tensor([1, 2]), torch.empty(1, DIM))
    with pytest.raises(ValueError, match="engine"):
        DiskFeatureStore(files["plain"], engine="aio")
    with pytest.raises(ValueError, match="hot_ids"):
        DiskFeatureStore(files["plain"], hot_ids=torch.tensor([-1]))
    with pytest.raises(ValueError, match="cache_bytes"):
        DiskFeatureStore(files["plain"], cache_bytes=-1)
    reader = store.reader
    with pytest.raises(RuntimeError, match="strictly increasing"):
        reader.submit(torch.tensor([3, 3]), torch.empty(2, DIM * 4, dtype=torch.uint8))
    with pytest.raises(RuntimeError, match="outside"):
        reader.submit(torch.tensor([N]), torch.empty(1, DIM * 4, dtype=torch.uint8))
    with pytest.raises(RuntimeError, match="bytes per row"):
        reader.submit(torch.tensor([1]), torch.empty(1, 8, dtype=torch.uint8))
    with pytest.raises(RuntimeError, match="block_size"):
        _ops._C.DiskReader(str(files["plain"]), 4096, 400, N, 1000, 1, 1, 0, 4096, "auto", True)
    store.close()


def test_missing_truncated_and_foreign_files_raise(files, tmp_path) -> None:
    with pytest.raises(FileNotFoundError):
        DiskFeatureStore(tmp_path / "absent.gnnf")
    cut = tmp_path / "cut.gnnf"
    shutil.copy(files["plain"], cut)
    os.truncate(cut, os.path.getsize(cut) - 8192)
    with pytest.raises(ValueError, match="cut.gnnf.*truncated"):
        DiskFeatureStore(cut)
    foreign = tmp_path / "x.gnnf"
    foreign.write_bytes(b"\x93NUMPY" + b"\0" * 5000)
    with pytest.raises(ValueError, match="not a gnnrepro feature file"):
        MmapFeatureStore(foreign)


def test_a_file_that_shrinks_mid_epoch_raises_naming_file_and_nodes(files, table,
                                                                    tmp_path) -> None:
    path = tmp_path / "shrinks.gnnf"
    shutil.copy(files["plain"], path)
    for engine in ("pread", "auto"):
        store = DiskFeatureStore(path, engine=engine, threads=2)
        assert torch.equal(store.gather(torch.tensor([N - 1, 0])), table[[N - 1, 0]])
        os.truncate(path, 4096 + 1000 * DIM * 4)  # rows >= 1000 are gone
        with pytest.raises(OSError, match=r"nodes \[2999\].*shrinks\.gnnf.*end of file"):
            store.gather(torch.tensor([N - 1]))
        assert torch.equal(store.gather(torch.tensor([5])), table[[5]])  # what is left reads
        store.close()
        shutil.copy(files["plain"], path)


def test_not_enough_disk_space_is_a_clear_error(table, tmp_path, monkeypatch) -> None:
    usage = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(shutil, "disk_usage", lambda p: usage._replace(free=1000))
    with pytest.raises(OSError, match="not enough disk space") as info:
        write_feature_file(tmp_path / "big.gnnf", table)
    assert info.value.errno == errno.ENOSPC and not list(tmp_path.iterdir())


def test_open_close_a_thousand_times_leaks_nothing(files) -> None:
    proc = psutil.Process()
    ids = torch.arange(0, N, 97)

    def cycle(times: int) -> None:
        for i in range(times):
            store = DiskFeatureStore(files["plain"], engine="pread" if i % 2 else "auto",
                                     threads=2, queue_depth=4, cache_bytes=4000)
            store.gather(ids)
            store.close()

    cycle(50)  # warm up allocator and caches
    fds, threads, rss = proc.num_fds(), proc.num_threads(), proc.memory_info().rss
    cycle(1000)
    # No more descriptors or threads than before (threads of earlier tests may end meanwhile).
    assert proc.num_fds() <= fds and proc.num_threads() <= threads
    assert proc.memory_info().rss - rss < 32 << 20
    header = read_header(files["plain"])
    assert (header.num_nodes, header.dim) == (N, DIM)


@pytest.mark.parametrize("rows,dim,rows_per_key,map_size", [
    # 4100-byte rows: each value fills two 4 KiB pages, twice the table; the map sized at the
    # old fixed 1.6x + 64 MiB (392 MB for this 205 MB table) filled and the write failed
    (50_000, 1025, 1, None),
    # a map far too small at the start: grown by doubling, transaction by transaction
    (3_000, 100, 7, 1 << 20),
])
def test_write_lmdb_grows_its_map_until_every_row_fits(tmp_path, rows, dim, rows_per_key,
                                                       map_size) -> None:
    pytest.importorskip("lmdb")
    table = torch.arange(rows * dim, dtype=torch.float32).reshape(rows, dim)
    write_lmdb(tmp_path / "db", table, rows_per_key=rows_per_key, map_size=map_size)
    store = LmdbFeatureStore(tmp_path / "db")
    assert (store.num_nodes, store.dim) == (rows, dim)
    picks = torch.randint(0, rows, (500,), generator=torch.Generator().manual_seed(1))
    ids = torch.cat([torch.tensor([0, rows - 1]), picks])
    assert torch.equal(store.gather(ids), table[ids])


def test_write_lmdb_rejects_a_bad_map_size(tmp_path) -> None:
    with pytest.raises(ValueError, match="map_size must be >="):
        write_lmdb(tmp_path / "db", torch.zeros(4, 2), map_size=10)


def test_write_lmdb_refuses_to_write_over_a_database(tmp_path) -> None:
    pytest.importorskip("lmdb")
    write_lmdb(tmp_path / "db", torch.zeros(10, 4))
    with pytest.raises(ValueError, match="already holds an LMDB database"):
        write_lmdb(tmp_path / "db", torch.ones(6, 4))
    assert torch.equal(LmdbFeatureStore(tmp_path / "db").gather(torch.arange(10)),
                       torch.zeros(10, 4))  # nothing lost
