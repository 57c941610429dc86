"""Loader: mini-batches (blocks + input features + labels) on the training device, prepared ahead.

Stages 1-2 of the pipeline (sample, extract) for batches b+1 .. b+P run while the model trains
on batch b: W workers sample and gather features into (pinned) staging slots, and with CUDA the
host-to-device copies run on S side streams, overlapped with compute. The workers are threads
of this process by default (`worker_kind`, gnnrepro.pipeline.thread_workers) or the paper's
worker processes, which map shared-memory slots (gnnrepro.pipeline.workers).

Reproducibility: epoch e shuffles the training ids with a generator seeded by (seed, e), and
batch b of epoch e is sampled with batch_id = e * len(loader) + b, so what each batch holds
depends only on (seed, epoch) - never on the number of workers or streams.

Data parallelism: with `world_size` > 1 the Loader yields rank `rank`'s share of each epoch
(gnnrepro.pipeline.shard): every rank shuffles with the same (seed, epoch), each id is trained
by exactly one rank, all ranks take the same number of steps, and batch ids stay unique across
ranks (batch b of rank r in epoch e: (e * len(loader) + b) * world_size + r).

Staging-slot lifetime: with CUDA a slot is released by `release_after(event)` once its copy to
the device has completed. On the CPU the yielded `x` *is* the slot's rows (no copy): the slot is
leased to the batch and returns to the ring only when the last tensor using that memory (x or
any view of it) is freed, so `x` stays valid for as long as the caller keeps it. At most
`prefetch` slots are leased at a time; a batch yielded while that many are still held (a caller
keeping batches) gets a private copy of its rows instead, so holding batches never stalls the
pipeline. Why not always copy: the copy (a fresh allocation of the batch's rows, page faults
included) costs about as much as sampling and gathering the batch (benchmarks/NOTES.md).
"""
from __future__ import annotations

import threading
import time
import weakref
from collections import deque
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch

from gnnrepro.checks import check_bool, check_device, check_int, check_positive_float
from gnnrepro.config import SETTINGS, check_placement, validate
from gnnrepro.datasets.dataset import Dataset
from gnnrepro.features.device_rows import DeviceRows
from gnnrepro.features.factory import open_feature_store
from gnnrepro.features.staging import StagingRing, StagingSlot
from gnnrepro.features.store import FeatureStore, InMemoryFeatureStore
from gnnrepro.pipeline.shard import ShardPlan
from gnnrepro.pipeline.spans import Span
from gnnrepro.pipeline.thread_workers import ThreadWorkerPool
from gnnrepro.pipeline.workers import Task, WorkerPool
from gnnrepro.sampling.block import MiniBatch

__all__ = ["Loader", "epoch_order"]

_POLL_S = 0.25  # how long one wait for worker results lasts before the workers are checked
_SUPERSEDED = ("this epoch's iterator was superseded by a newer iter() or close() on the same "
               "Loader")


def epoch_order(num: int, seed: int, epoch: int, shuffle: bool = True) -> torch.Tensor:
    """The order (int64 [num]) in which epoch `epoch` visits the training ids.

    Seeded by (seed, epoch) through numpy's SeedSequence, so nearby seeds and epochs give
    unrelated permutations.
    """
    if not shuffle:
        return torch.arange(num)
    state = np.random.SeedSequence([seed, epoch]).generate_state(1, np.uint64)[0]
    gen = torch.Generator().manual_seed(int(state) & (2**63 - 1))
    return torch.randperm(num, generator=gen)


def _max_input_rows(sampler: Any, num_nodes: int, max_degree: int, batch_size: int) -> int:
    """An upper bound on a batch's input nodes: what one staging slot must hold."""
    fanouts = getattr(sampler, "fanouts", None)
    if fanouts is None:
        return max(num_nodes, 1)
    rows = batch_size
    for f in fanouts:
        rows *= 1 + (max_degree if f == -1 else f)  # destinations come first among the sources
        if rows >= num_nodes:
            return max(num_nodes, 1)
    return rows


def _feature_store(store: str | FeatureStore, dataset: Dataset, share: bool) -> FeatureStore:
    """`store` itself, or the store of kind `store` (memory | disk | mmap | lmdb) of `dataset`."""
    if isinstance(store, FeatureStore):
        if (store.num_nodes, store.dim) != tuple(dataset.features.shape):
            raise ValueError(f"feature_store holds {store.num_nodes} x {store.dim} rows, but "
                             f"the dataset has {tuple(dataset.features.shape)}")
        return store
    if not isinstance(store, str):
        raise TypeError(f"feature_store must be a kind name or a FeatureStore, got "
                        f"{type(store).__name__}")
    return open_feature_store(store, dataset, share=share, pin=False)


def _tensors(mb: MiniBatch) -> list[torch.Tensor]:
    out = [mb.seeds, mb.input_nodes, mb.x, mb.y]
    for block in mb.blocks:
        out += [block.indptr, block.indices, block.src_nodes]
    return out


def _pinned(t: torch.Tensor) -> torch.Tensor:
    """A CPU `t` in page-locked memory (torch's caching host allocator), so its H2D copy is
    async; a GPU tensor (a GPU sampler's block) as it is."""
    return t if t.is_cuda or t.is_pinned() else t.pin_memory()


def _sampler_device(sampler: Any) -> str:
    """The sampler's placement: 'cpu', 'cuda' (graph in GPU memory) or 'uva' (a GPU reading a
    pinned host graph), from its device and its graph's."""
    device = getattr(sampler, "device", torch.device("cpu"))
    if device.type != "cuda":
        return "cpu"
    return "cuda" if sampler.graph.device.type == "cuda" else "uva"


class _Leases:
    """Counts the staging slots leased to yielded CPU batches (thread-safe: any thread may free
    the last reference to a batch's x)."""

    def __init__(self, limit: int):
        self.limit = limit
        self.held = 0
        self._lock = threading.Lock()

    def try_take(self) -> bool:
        with self._lock:
            if self.held >= self.limit:
                return False
            self.held += 1
            return True

    def give_back(self) -> None:
        with self._lock:
            self.held -= 1


class _Lease:
    """Exposes a slot's rows to numpy; releases the slot when the last array/tensor dies.

    `torch.from_numpy(np.asarray(lease))` makes a tensor whose storage keeps the numpy array,
    and so this object, alive; views of the tensor share that storage, so the slot is released
    exactly when nothing can read it any more.
    """

    def __init__(self, rows: torch.Tensor, slot: StagingSlot, leases: _Leases):
        self.__array_interface__ = rows.numpy().__array_interface__
        self._rows, self._slot, self._leases = rows, slot, leases

    def __del__(self) -> None:
        self._slot.release()
        self._leases.give_back()


def _shutdown(live: list[WorkerPool | ThreadWorkerPool]) -> None:
    """Stop the worker pools in `live` (also the Loader's finalizer, so it must not hold it)."""
    while live:
        live.pop().shutdown()


class Loader:
    """Iterate mini-batches of `dataset`'s training ids, sampled by `sampler`, on `device`.

    Each `iter()` is one epoch: MiniBatch objects with `x` (float32 [num_input, F], the input
    nodes' features) and `y` (the seeds' labels), all on `device`, in batch order. `workers`
    workers (0: sample in `next()`) prepare at most `prefetch` batches ahead; with CUDA their
    host-to-device copies are spread round-robin over `streams` CUDA streams. `worker_kind`
    (gnnrepro.config.WORKER_KINDS) makes them threads of this process or worker processes.

    Workers start at the first epoch and are reused by later ones; `close()`, garbage
    collection, or leaving an epoch early (break, an exception, KeyboardInterrupt) stops them
    (an early exit restarts them at the next epoch). A worker that dies, raises, or owes a
    batch and sends nothing for `timeout_s` seconds makes the iteration raise RuntimeError
    naming it and the cause. `worker_threads` is each worker's intra-op thread count (a
    worker thread's own, leaving the process's as it is). `feature_source` says how rows
    reach a GPU (gnnrepro.config.FEATURE_SOURCES). With worker processes, the dataset's graph
    and features are moved into shared memory in place, once (the dataset's tensors then
    refer to the shared copy). `rank` and `world_size` select a data-parallel rank's share of
    every epoch (see the module doc). `feature_store` is where rows come from: a kind (memory
    | disk | mmap | lmdb, opened with default budgets by gnnrepro.features.open_feature_store)
    or a store built by the caller. Worker threads refuse (ValueError naming worker_kind) a
    sampler or store whose `thread_use` is None (FeatureStore.thread_use). With a store that
    reads ahead (DiskFeatureStore.prefetch) and `read_ahead`, upcoming batches' rows are
    announced to it - with workers=0 `prefetch` batches ahead, in worker threads every batch
    already queued for the thread - so its reads overlap the current batch; each announced
    batch holds its rows in memory until gathered.
    """

    def __init__(self, dataset: Dataset, sampler: Any, device: str | torch.device,
                 batch_size: int, shuffle: bool = True, workers: int = 0, streams: int = 1,
                 prefetch: int = 2, seed: int = 0, drop_last: bool = False, *,
                 worker_kind: str = SETTINGS["worker_kind"].default,
                 worker_threads: int = 1, rank: int = 0, world_size: int = 1,
                 feature_source: str = SETTINGS["feature_source"].default,
                 feature_store: str | FeatureStore = SETTINGS["feature_store"].default,
                 timeout_s: float = SETTINGS["timeout_s"].default, read_ahead: bool = True):
        if not isinstance(dataset, Dataset):
            raise TypeError(f"dataset must be a gnnrepro Dataset, got {type(dataset).__name__}")
        if not callable(getattr(sampler, "sample", None)):
            raise TypeError(f"sampler must have a sample(seeds, batch_id) method, got "
                            f"{type(sampler).__name__}")
        graph = getattr(sampler, "graph", None)
        gpu_copy = (getattr(graph, "device", dataset.graph.device) != dataset.graph.device
                    and graph.num_nodes == dataset.graph.num_nodes
                    and graph.num_edges == dataset.graph.num_edges)
        if graph is not dataset.graph and not gpu_copy:
            raise ValueError("sampler: its graph is not the dataset's graph (build the sampler "
                             "on dataset.graph, or on a copy of it on the GPU)")
        self.device = check_device(device)
        self.batch_size = check_int("batch_size", batch_size, 1)
        self.workers = check_int("workers", workers, 0)
        self.worker_kind = validate("worker_kind", worker_kind)
        self.sampler_device = _sampler_device(sampler)
        self.feature_source = validate("feature_source", feature_source)
        check_placement(str(self.device), self.sampler_device, self.feature_source, workers)
        self.streams = check_int("streams", streams, 1)
        self.prefetch = check_int("prefetch", prefetch, 1)
        self.seed = check_int("seed", seed, 0)
        self.worker_threads = check_int("worker_threads", worker_threads, 1)
        self.timeout_s = check_positive_float("timeout_s", timeout_s)
        self.shuffle = check_bool("shuffle", shuffle)
        self.drop_last = check_bool("drop_last", drop_last)
        self.read_ahead = check_bool("read_ahead", read_ahead)
        self.dataset, self.sampler = dataset, sampler
        self.plan = ShardPlan(dataset.train_idx.numel(), self.batch_size, world_size, rank,
                              self.drop_last)
        self.rank, self.world_size = self.plan.rank, self.plan.world_size

        cuda = self.device.type == "cuda"
        threads = self.workers > 0 and self.worker_kind == "thread"
        share = self.workers > 0 and self.worker_kind == "process"
        if threads and getattr(sampler, "thread_use", "copy") != "copy":
            raise ValueError(f"worker_kind='thread': {type(sampler).__name__} cannot sample in "
                             f"worker threads; use worker_kind='process' or workers=0")
        if share:
            dataset.graph.share_memory_()  # worker processes map the graph, never copy it
        # Unpinned: with feature_source 'pinned' rows reach the GPU from the pinned staging
        # slots, never from the table itself; 'uva' and 'device' gather on the GPU instead,
        # from the in-memory table.
        self.store = _feature_store(feature_store, dataset, share=share)
        if threads and self.store.thread_use not in ("share", "copy"):
            raise ValueError(f"worker_kind='thread': {type(self.store).__name__} cannot be "
                             f"gathered from by worker threads; use worker_kind='process' or "
                             f"workers=0")
        if self.feature_source != "pinned" and not isinstance(self.store, InMemoryFeatureStore):
            raise ValueError(f"feature_source={self.feature_source!r} gathers on the GPU from "
                             f"the in-memory table: feature_store must be 'memory', got "
                             f"{type(self.store).__name__}")
        self._device_rows = (DeviceRows(self.store, self.feature_source, self.device)
                             if self.feature_source != "pinned" else None)
        graph = dataset.graph
        max_degree = int(graph.in_degrees().max()) if graph.num_nodes else 0
        rows = _max_input_rows(sampler, graph.num_nodes, max_degree, self.plan.max_batch_size)
        # In flight: `prefetch` batches, plus (CUDA) copies still reading their slots or (CPU)
        # slots leased to yielded batches. Pages of a slot are only committed once written
        # (on the CPU; pinned slots are committed whole). No slots when the GPU gathers.
        slots = self.prefetch + (self.streams if cuda else self.prefetch)
        self._ring = (StagingRing(slots, rows, self.store.dim, self.store.dtype, pin=cuda,
                                  share=share)
                      if self._device_rows is None else None)
        self._leases = _Leases(self.prefetch)
        self._streams = ([torch.cuda.Stream(self.device) for _ in range(self.streams)]
                         if cuda else [])
        self._pool: WorkerPool | ThreadWorkerPool | None = None
        self._pending: dict[int, StagingSlot] = {}  # batch index -> slot a worker fills
        self._epoch = 0
        self._generation = 0  # bumped by each iter() and close(): older iterators stop
        self._work = {"sample": 0.0, "extract": 0.0}
        self._spans: list[Span] = []
        self._running = False
        self._closed = False
        self._live: list[WorkerPool | ThreadWorkerPool] = []
        self._finalizer = weakref.finalize(self, _shutdown, self._live)

    def __len__(self) -> int:
        return self.plan.steps

    def work_seconds(self) -> dict[str, float]:
        """Seconds of sample and extract work done for the current (or last) epoch's batches,
        wherever it ran: in the workers or in this process. extract is the feature gather plus
        this process's hand-over (labels, and with CUDA issuing the host-to-device copies)."""
        return dict(self._work)

    @property
    def in_process(self) -> bool:
        """Whether sampling and extraction run inside `next()` (workers=0), so the time the
        consumer blocks can be split between them (see gnnrepro.training.profiler)."""
        return self.workers == 0

    def spans(self) -> list[Span]:
        """The current (or last) epoch's sample and extract work as timeline spans, on the
        lane that did it ("loader" for this process, "worker k"; with CUDA "stream k" for
        issuing a batch's host-to-device copies)."""
        return list(self._spans)

    @property
    def worker_pids(self) -> list[int]:
        """Process ids of the running workers (empty when none are running); a worker thread's
        is this process's own."""
        return list(self._pool.pids) if self._pool is not None else []

    def __iter__(self) -> Iterator[MiniBatch]:
        if self._closed:
            raise RuntimeError("Loader is closed")
        if self._running:  # an unfinished epoch's iterator is superseded
            self._abort()
        self._generation += 1
        epoch, self._epoch = self._epoch, self._epoch + 1
        return self._run_epoch(epoch, self._generation)

    def close(self) -> None:
        """Stop the workers (processes: terminate + join; threads: stop + join, see
        gnnrepro.pipeline.thread_workers); the Loader cannot be iterated afterwards."""
        self._abort()
        self._generation += 1
        self._closed = True
        self._finalizer()

    def __enter__(self) -> "Loader":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run_epoch(self, epoch: int, generation: int) -> Iterator[MiniBatch]:
        if generation != self._generation:
            raise RuntimeError(_SUPERSEDED)
        ids = self.dataset.train_idx[epoch_order(self.dataset.train_idx.numel(), self.seed,
                                                 epoch, self.shuffle)]
        self._work = {"sample": 0.0, "extract": 0.0}
        self._spans = []
        if self.workers == 0:
            source = self._in_process(ids, epoch)
        else:
            source = self._from_workers(ids, epoch)
        self._running = True
        finished = False
        try:
            for mb in source:
                yield mb
                del mb  # held here, the batch would keep its slot while the next is prepared
                if generation != self._generation:
                    raise RuntimeError(_SUPERSEDED)
            finished = True
        finally:
            if generation == self._generation:
                self._running = False
                if not finished:
                    self._abort()

    def _in_process(self, ids: torch.Tensor, epoch: int) -> Iterator[MiniBatch]:
        """workers=0: sample and gather each batch here, when it is asked for."""
        where = getattr(self.sampler, "device", torch.device("cpu"))
        if where.type == "cuda":  # a GPU sampler takes its seeds on the GPU
            ids = ids.to(where)
        if self.read_ahead and callable(getattr(self.store, "prefetch", None)):
            yield from self._in_process_ahead(ids, epoch)
            return
        for b in range(len(self)):
            start, stop = self.plan.bounds(b)
            yield self._handover(*self._local(b, ids[start:stop], self.plan.batch_id(epoch, b)))

    def _from_workers(self, ids: torch.Tensor, epoch: int) -> Iterator[MiniBatch]:
        """Dispatch batch b to worker b % W, at most `prefetch` ahead; yield in order."""
        if self._pool is None:
            staging = self._ring.buffers if self._ring is not None else None
            if self.worker_kind == "thread":
                self._pool = ThreadWorkerPool(self.workers, self.sampler, self.store, staging,
                                              self.worker_threads, self.timeout_s,
                                              self.read_ahead)
            else:
                self._pool = WorkerPool(self.workers, self.sampler, self.store, staging,
                                        self.worker_threads, self.timeout_s)
            self._live.append(self._pool)
        pool, ring, plan = self._pool, self._ring, self.plan
        num_batches = len(self)
        needs_ids = [True] * self.workers
        ids_np = ids.numpy()
        ready: dict[int, tuple[MiniBatch, torch.cuda.Event | None]] = {}
        sent = 0
        for b in range(num_batches):
            while sent < num_batches and sent - b < self.prefetch:
                slot = ring.acquire() if ring is not None else None
                if slot is not None:
                    self._pending[sent] = slot
                wid = sent % self.workers
                pool.submit(wid, Task(sent, plan.batch_id(epoch, sent), *plan.bounds(sent),
                                      -1 if slot is None else slot.index,
                                      ids_np if needs_ids[wid] else None))
                needs_ids[wid] = False
                sent += 1
            while b not in ready:
                for result in pool.receive(_POLL_S):
                    slot = self._pending.pop(result.index, None)
                    self._work["sample"] += result.sample_s
                    self._work["extract"] += result.gather_s
                    lane = f"worker {result.worker}"
                    self._spans += [Span(result.index, "sample", lane, result.start,
                                         result.sampled),
                                    Span(result.index, "extract", lane, result.sampled,
                                         result.gathered)]
                    mb = result.batch
                    if slot is None:
                        ready[result.index] = self._on_device(mb, result.index)
                    else:
                        x = slot.buffer[: mb.input_nodes.numel()]
                        ready[result.index] = self._transfer(mb, x, slot, result.index)
                        del x  # the batch in `ready` alone holds its slot
                    del mb
            yield self._handover(*ready.pop(b))

    def _local(self, b: int, seeds: torch.Tensor,
               batch_id: int) -> tuple[MiniBatch, torch.cuda.Event | None]:
        """Sample and gather batch b in this process (workers=0)."""
        start = time.perf_counter()
        mb = self.sampler.sample(seeds, batch_id)
        sampled = time.perf_counter()
        self._work["sample"] += sampled - start
        self._spans.append(Span(b, "sample", "loader", start, sampled))
        if self._ring is None:
            return self._on_device(mb, b)
        return self._gather_local(b, mb)

    def _gather_local(self, b: int, mb: MiniBatch) -> tuple[MiniBatch, torch.cuda.Event | None]:
        """Gather sampled batch b's rows into a staging slot here and start its transfer."""
        start = time.perf_counter()
        slot = self._ring.acquire()
        try:
            x = self.store.gather(mb.input_nodes.cpu(), out=slot.buffer)
        except BaseException:
            slot.release()
            raise
        gathered = time.perf_counter()
        self._work["extract"] += gathered - start
        self._spans.append(Span(b, "extract", "loader", start, gathered))
        for begin, end in getattr(self.store, "take_read_spans", list)():
            self._spans.append(Span(b, "extract", "disk", begin, end))  # the device's part
        return self._transfer(mb, x, slot, b)

    def _in_process_ahead(self, ids: torch.Tensor, epoch: int) -> Iterator[MiniBatch]:
        """workers=0 with a store that reads ahead (DiskFeatureStore.prefetch): batches are
        sampled `prefetch` ahead of the one gathered and their input nodes announced, so the
        store's reads for the next batches overlap this batch's gather and training step."""
        self.store.discard_prefetched()
        ahead: deque[tuple[int, MiniBatch]] = deque()
        nxt = 0
        for b in range(len(self)):
            while nxt < len(self) and nxt <= b + self.prefetch:
                start, stop = self.plan.bounds(nxt)
                t0 = time.perf_counter()
                mb = self.sampler.sample(ids[start:stop], self.plan.batch_id(epoch, nxt))
                t1 = time.perf_counter()
                self.store.prefetch(mb.input_nodes)
                t2 = time.perf_counter()
                self._work["sample"] += t1 - t0
                self._work["extract"] += t2 - t1
                self._spans += [Span(nxt, "sample", "loader", t0, t1),
                                Span(nxt, "extract", "loader", t1, t2)]
                ahead.append((nxt, mb))
                nxt += 1
            index, mb = ahead.popleft()
            yield self._handover(*self._gather_local(index, mb))

    def _on_device(self, mb: MiniBatch,
                   b: int) -> tuple[MiniBatch, torch.cuda.Event | None]:
        """feature_source 'uva' / 'device': the GPU gathers the rows, on the current stream
        (so the consumer needs no event); blocks and labels move there too."""
        start = time.perf_counter()
        out = mb.to(self.device, non_blocking=True)
        out.x = self._device_rows.gather(out.input_nodes)
        out.y = self.dataset.labels[mb.seeds.cpu()].to(self.device, non_blocking=True)
        end = time.perf_counter()
        self._work["extract"] += end - start
        self._spans.append(Span(b, "extract", "loader", start, end))
        return out, None

    def _transfer(self, mb: MiniBatch, x: torch.Tensor, slot: StagingSlot,
                  b: int) -> tuple[MiniBatch, torch.cuda.Event | None]:
        """Attach x (the slot's rows) and y, and start moving the batch to the device.

        Returns the batch and, with CUDA, the event that marks its copies complete. The slot
        is released after that event (CUDA), when x dies (CPU, leased) or now (CPU, copied).
        """
        start = time.perf_counter()
        y = self.dataset.labels[mb.seeds.cpu()]
        if self.device.type == "cpu":
            if self._leases.try_take():
                x = torch.from_numpy(np.asarray(_Lease(x, slot, self._leases)))
            else:  # `prefetch` slots are held by batches the caller keeps: copy instead
                x = x.clone()
                slot.release()
            mb.x, mb.y = x, y
            end = time.perf_counter()
            self._work["extract"] += end - start
            self._spans.append(Span(b, "extract", "loader", start, end))
            return mb, None
        blocks = [type(blk)(_pinned(blk.indptr), _pinned(blk.indices), _pinned(blk.src_nodes),
                            blk.num_dst) for blk in mb.blocks]
        host = MiniBatch(_pinned(mb.seeds), blocks[0].src_nodes, blocks, x, _pinned(y),
                         mb.batch_id)  # input_nodes is blocks[0].src_nodes: pinned, moved once
        k = b % len(self._streams)
        with torch.cuda.stream(self._streams[k]):
            out = host.to(self.device, non_blocking=True)
            event = torch.cuda.Event()
            event.record(self._streams[k])
        slot.release_after(event)
        end = time.perf_counter()
        self._work["extract"] += end - start
        self._spans.append(Span(b, "copy", f"stream {k}", start, end))
        return out, event

    def _handover(self, mb: MiniBatch, event: torch.cuda.Event | None) -> MiniBatch:
        """Make the consumer's current stream wait for the batch's copies, then give it out.

        record_stream tells the caching allocator that the current stream uses memory that was
        allocated on a copy stream, so it is not reused before the consumer is done with it.
        """
        if event is not None:
            stream = torch.cuda.current_stream(self.device)
            stream.wait_event(event)
            for t in _tensors(mb):
                t.record_stream(stream)
        return mb

    def _abort(self) -> None:
        """Stop the workers at once and reclaim the slots they were filling."""
        if self._pool is not None:
            # When the Loader and an unfinished epoch's generator are collected together, the
            # finalizer may already have shut this pool down (shutdown is idempotent).
            if self._pool in self._live:
                self._live.remove(self._pool)
            self._pool.shutdown()
            self._pool = None
        for slot in self._pending.values():  # nobody writes them any more
            slot.release()
        self._pending.clear()
        self._running = False

    def __repr__(self) -> str:
        ranks = (f", rank={self.rank}, world_size={self.world_size}"
                 if self.world_size > 1 else "")
        return (f"Loader(batches={len(self)}, batch_size={self.batch_size}, "
                f"device={self.device}, workers={self.workers}, "
                f"worker_kind={self.worker_kind}, streams={self.streams}, "
                f"prefetch={self.prefetch}, seed={self.seed}{ranks})")
