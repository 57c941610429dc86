"""The producers: who samples each batch and gathers its rows into a staging slot.

`LocalProducer` does it in the consumer's process, when a batch is asked for (workers=0);
with a store that reads ahead it samples `prefetch` batches ahead and announces their input
nodes, so the store's reads overlap the current batch. `WorkerProducer` hands batch b to
worker b % W (threads, gnnrepro.pipeline.thread_workers, or processes,
gnnrepro.pipeline.workers), at most `prefetch` batches ahead, and yields them in order.
Both yield (batch, event) pairs that the DeviceHandover has started moving to the device.
"""
from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator
from typing import Any

import torch

from gnnrepro.features.staging import StagingRing, StagingSlot
from gnnrepro.features.store import FeatureStore
from gnnrepro.pipeline.handover import DeviceHandover, WorkLog
from gnnrepro.pipeline.plan import Plan
from gnnrepro.pipeline.thread_workers import ThreadWorkerPool
from gnnrepro.pipeline.workers import Result, Task, WorkerPool
from gnnrepro.sampling.block import MiniBatch, on_cpu

__all__ = ["LocalProducer", "WorkerProducer"]

_POLL_S = 0.25  # how long one wait for worker results lasts before the workers are checked

Prepared = tuple[MiniBatch, "torch.cuda.Event | None"]


class LocalProducer:
    """Samples and gathers each batch in this process (see the module doc)."""

    def __init__(self, sampler: Any, store: FeatureStore, ring: StagingRing | None,
                 plan: Plan, handover: DeviceHandover, log: WorkLog, prefetch: int,
                 read_ahead: bool):
        self.sampler, self.store, self.ring, self.plan = sampler, store, ring, plan
        self.handover, self.log, self.prefetch = handover, log, prefetch
        self.read_ahead = read_ahead and store.reads_ahead

    def batches(self, order: torch.Tensor, epoch: int, first: int = 0) -> Iterator[Prepared]:
        """Epoch `epoch`'s batches from batch `first` on, cut from `order` (the epoch's ids),
        one per request."""
        where = getattr(self.sampler, "device", torch.device("cpu"))
        if where.type == "cuda":  # a GPU sampler takes its seeds on the GPU
            order = order.to(where)
        if self.read_ahead:
            yield from self._ahead(order, epoch, first)
            return
        for b in range(first, len(self.plan)):
            yield self._prepare(b, order, epoch)  # held here, the batch would keep its slot

    def _prepare(self, b: int, order: torch.Tensor, epoch: int) -> Prepared:
        mb = self._sample(b, self.plan.seeds(order, b), epoch)
        return self.handover.on_device(mb, b) if self.ring is None else self._gather(b, mb)

    def _sample(self, b: int, seeds: torch.Tensor, epoch: int) -> MiniBatch:
        start = time.perf_counter()
        mb = self.sampler.sample(seeds, self.plan.batch_id(epoch, b))
        self.log.record(b, "sample", "loader", start, time.perf_counter())
        return mb

    def _gather(self, b: int, mb: MiniBatch) -> Prepared:
        """Gather sampled batch b's rows into a staging slot here and start its transfer."""
        start = time.perf_counter()
        slot = self.ring.acquire()
        try:
            ids = on_cpu(mb.input_nodes)
            x = self.store.gather(ids, out=slot.reserve(self.store.num_rows(ids)))
        except BaseException:
            slot.release()
            raise
        self.log.record(b, "extract", "loader", start, time.perf_counter())
        for begin, end in self.store.take_read_spans():
            self.log.record(b, "extract", "disk", begin, end, counts=False)  # the device's part
        return self.handover.transfer(mb, x, slot, b)

    def _ahead(self, order: torch.Tensor, epoch: int, first: int) -> Iterator[Prepared]:
        """Batches sampled `prefetch` ahead of the one gathered, their input nodes announced
        to the store, so its reads for the next batches overlap this batch's gather and
        training step."""
        self.store.discard_prefetched()
        ahead: deque[tuple[int, MiniBatch]] = deque()
        nxt = first
        for b in range(first, len(self.plan)):
            while nxt < len(self.plan) and nxt <= b + self.prefetch:
                ahead.append((nxt, self._sample(nxt, self.plan.seeds(order, nxt), epoch)))
                start = time.perf_counter()
                self.store.prefetch(ahead[-1][1].input_nodes)
                self.log.record(nxt, "extract", "loader", start, time.perf_counter())
                nxt += 1
            yield self._gather(*ahead.popleft())


class WorkerProducer:
    """Batches prepared by `workers` worker threads or processes (see the module doc). The
    pool starts at the first epoch and is reused by later ones; `abort` stops it and reclaims
    the slots its workers were filling. `live` holds the running pool, for a finalizer that
    must not hold the producer itself."""

    def __init__(self, workers: int, kind: str, sampler: Any, store: FeatureStore,
                 ring: StagingRing | None, plan: Plan, handover: DeviceHandover,
                 log: WorkLog, prefetch: int, threads: int, timeout_s: float, read_ahead: bool):
        self.workers, self.kind, self.sampler, self.store = workers, kind, sampler, store
        self.ring, self.plan, self.handover, self.log = ring, plan, handover, log
        self.prefetch, self.threads, self.timeout_s = prefetch, threads, timeout_s
        self.read_ahead = read_ahead
        self.pool: WorkerPool | ThreadWorkerPool | None = None
        self.live: list[WorkerPool | ThreadWorkerPool] = []
        self._pending: dict[int, StagingSlot] = {}  # batch index -> slot a worker fills

    def _start(self) -> WorkerPool | ThreadWorkerPool:
        if self.pool is None:
            # threads reserve (and may grow) the ring's slots; processes write the shared one
            staging = self.ring if self.kind == "thread" else (
                self.ring.buffers if self.ring is not None else None)
            if self.kind == "thread":
                self.pool = ThreadWorkerPool(self.workers, self.sampler, self.store, staging,
                                             self.threads, self.timeout_s, self.read_ahead)
            else:
                self.pool = WorkerPool(self.workers, self.sampler, self.store, staging,
                                       self.threads, self.timeout_s)
            self.live.append(self.pool)
        return self.pool

    def batches(self, order: torch.Tensor, epoch: int, first: int = 0) -> Iterator[Prepared]:
        """Dispatch batch b (from `first` on) to worker b % W, at most `prefetch` ahead;
        yield in order."""
        pool, plan = self._start(), self.plan
        num_batches = len(plan)
        needs_ids = [True] * self.workers
        ids_np = order.numpy()
        ready: dict[int, Prepared] = {}
        sent = first
        for b in range(first, num_batches):
            while sent < num_batches and sent - b < self.prefetch:
                slot = self.ring.acquire() if self.ring is not None else None
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
                    ready[result.index] = self._received(result)
            yield ready.pop(b)

    def _received(self, result: Result) -> Prepared:
        """Log a worker's result and start its hand-over (the slot then belongs to it)."""
        slot = self._pending.pop(result.index, None)
        lane = f"worker {result.worker}"
        self.log.record(result.index, "sample", lane, result.start, result.sampled)
        self.log.record(result.index, "extract", lane, result.sampled, result.gathered)
        mb = result.batch
        if slot is None:
            return self.handover.on_device(mb, result.index)
        return self.handover.transfer(mb, slot.buffer[: self.store.num_rows(mb.input_nodes)],
                                      slot, result.index)

    def abort(self) -> None:
        """Stop the workers at once and reclaim the slots they were filling."""
        if self.pool is not None:
            # When the Loader and an unfinished epoch's generator are collected together, the
            # finalizer may already have shut this pool down (shutdown is idempotent).
            if self.pool in self.live:
                self.live.remove(self.pool)
            self.pool.shutdown()
            self.pool = None
        for slot in self._pending.values():  # nobody writes them any more
            slot.release()
        self._pending.clear()
