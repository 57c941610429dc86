"""Loader: mini-batches (blocks + input features + labels) on the training device, prepared ahead.

Stages 1-2 of the pipeline (sample, extract) for batches b+1 .. b+P run while the model trains
on batch b. The Loader wires three parts, each in its own module:

* the batch plan (gnnrepro.pipeline.plan): which ids each batch holds and its sampler batch
  id - epoch e shuffles the training ids with (seed, e), so what each batch holds depends only
  on (seed, epoch), never on the number of workers or streams; with `world_size` > 1 it is rank
  `rank`'s share of each epoch (gnnrepro.pipeline.shard);
* the producers (gnnrepro.pipeline.producers): this process (workers=0) or W worker threads or
  processes sample and gather features into (pinned) staging slots;
* the hand-over (gnnrepro.pipeline.handover): rows and labels attached, with CUDA the
  host-to-device copies on S side streams, overlapped with compute; on the CPU a batch's `x`
  is its staging slot, leased until the last view of it dies.
"""
from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator, Mapping
from typing import Any

import torch

from gnnrepro.checks import check_bool, check_device, check_int, check_positive_float
from gnnrepro.config import SETTINGS, check_placement, validate
from gnnrepro.datasets.dataset import Dataset
from gnnrepro.datasets.typed_dataset import TypedDataset
from gnnrepro.features.device_rows import DeviceRows
from gnnrepro.features.staging import StagingRing
from gnnrepro.features.store import FeatureStore, InMemoryFeatureStore
from gnnrepro.features.typed_store import TypedFeatureStore
from gnnrepro.pipeline.handover import DeviceHandover, WorkLog
from gnnrepro.pipeline.plan import BatchPlan, Plan
from gnnrepro.pipeline.producers import LocalProducer, WorkerProducer
from gnnrepro.pipeline.spans import Span
from gnnrepro.pipeline.thread_workers import ThreadWorkerPool
from gnnrepro.pipeline.workers import WorkerPool
from gnnrepro.sampling.block import MiniBatch
from gnnrepro.sampling.typed import with_target

__all__ = ["Loader"]

_SUPERSEDED = ("this epoch's iterator was superseded by a newer iter() or close() on the same "
               "Loader")
_OTHER_THREAD = ("this Loader is in the middle of an epoch in another thread: a Loader feeds one "
                 "training loop at a time (its workers and staging slots belong to the running "
                 "epoch), unlike a DataLoader that each thread may iterate; give each thread "
                 "its own Loader")


#: A slot's first size where it may grow (rings not in shared memory): most batches fit.
_SLOT_BYTES = 256 << 20


def _samples_disjoint(sampler: Any) -> bool:
    """Whether `sampler` samples each seed on its own (temporal or disjoint FusedSampler): a
    node reached from several seeds is then several input nodes, so a batch may have more
    input nodes than the graph has nodes (up to that many per seed)."""
    return getattr(sampler, "temporal", None) is not None


def _max_input_rows(sampler: Any, num_nodes: int, max_degree: int, batch_size: int) -> int:
    """An upper bound on a batch's input nodes: what one staging slot must hold."""
    fanouts = getattr(sampler, "fanouts", None)
    if fanouts is None:
        return max(num_nodes, 1)
    # a batch item may seed several nodes (an edge batch: both endpoints and the negatives)
    seeds = batch_size * getattr(sampler, "nodes_per_seed", 1)
    if _samples_disjoint(sampler):  # each seed's own subgraph
        return seeds * _grown_rows(1, fanouts, num_nodes, max_degree)
    return _grown_rows(seeds, fanouts, num_nodes, max_degree)


def _grown_rows(seeds: int, fanouts: list[int], num_nodes: int, max_degree: int) -> int:
    """Sources after sampling `fanouts` from `seeds` distinct nodes, capped at num_nodes."""
    rows = seeds
    for layer in fanouts:
        # destinations come first among the sources
        rows *= 1 + (max_degree if layer == -1 else layer)
        if rows >= num_nodes:
            return max(num_nodes, 1)
    return rows


def _typed_max_input_rows(dataset: TypedDataset, fanouts: list[list[int]], batch_size: int,
                          disjoint: bool = False,
                          seed_types: Mapping[str, int] | None = None) -> int:
    """An upper bound on a typed batch's rows (input nodes of the featured types): from the
    seeds (`seed_types[type]` per batch item, default one of the target type; an edge batch
    seeds its endpoints' types) outward, each relation adds at most min(fanout, its largest
    in-degree) sources per destination to its source type, each type capped at its node count
    (per seed, if each seed is sampled on its own: `disjoint`)."""
    if disjoint:
        return batch_size * _typed_max_input_rows(dataset, fanouts, 1, seed_types=seed_types)
    g = dataset.graph
    degree = {rel: int(csc.in_degrees().max()) if csc.num_nodes else 0
              for rel, csc in g.relations.items()}
    rows = dict.fromkeys(g.node_types, 0)
    for ntype, per_item in (seed_types or {dataset.target: 1}).items():
        rows[ntype] = min(batch_size * per_item, g.num_nodes[ntype])
    for layer in reversed(fanouts):  # the seeds' layer first
        grown = dict(rows)  # destinations come first among the sources
        for rel, fanout in zip(g.canonical_relations, layer):
            grown[rel[0]] += rows[rel[2]] * (degree[rel] if fanout == -1
                                             else min(fanout, degree[rel]))
        rows = {t: min(n, g.num_nodes[t]) for t, n in grown.items()}
    return max(1, sum(rows[t] for t in dataset.features))


def _feature_store(store: FeatureStore | None, dataset: Dataset | TypedDataset | None,
                   share: bool) -> FeatureStore:
    """`store`, checked against `dataset`; None: the dataset's in-memory table (moved into
    shared memory when worker processes will map it), one per featured type when typed."""
    typed = isinstance(dataset, TypedDataset)
    if store is None:
        if not typed:
            return InMemoryFeatureStore(dataset.features, share=share, pin=False)
        if not dataset.features:
            raise ValueError("dataset: a typed dataset without features on any node type "
                             "has no rows to load")
        return TypedFeatureStore({t: InMemoryFeatureStore(x, share=share, pin=False)
                                  for t, x in dataset.features.items()})
    if not isinstance(store, FeatureStore):
        raise TypeError(f"feature_store must be a FeatureStore (open one by kind with "
                        f"gnnrepro.features.open_feature_store), got {type(store).__name__}")
    if typed:
        if not isinstance(store, TypedFeatureStore):
            raise TypeError("feature_store of a typed dataset must be a TypedFeatureStore "
                            f"(one store per featured node type), got {type(store).__name__}")
        for ntype, s in store.stores.items():
            want = dataset.features.get(ntype)
            if want is None or (s.num_nodes, s.dim) != tuple(want.shape):
                raise ValueError(f"feature_store[{ntype!r}] holds {s.num_nodes} x {s.dim} "
                                 f"rows, but the dataset's {ntype!r} features are "
                                 f"{None if want is None else tuple(want.shape)}")
    elif dataset is not None and (store.num_nodes, store.dim) != tuple(dataset.features.shape):
        raise ValueError(f"feature_store holds {store.num_nodes} x {store.dim} rows, but "
                         f"the dataset has {tuple(dataset.features.shape)}")
    return store


def _max_in_degree(dataset: Dataset) -> int:
    return int(dataset.graph.in_degrees().max()) if dataset.graph.num_nodes else 0


def _typed_sampler(dataset: Dataset | TypedDataset | None, sampler: Any) -> Any:
    """The sampler the Loader calls: on a typed dataset, one that takes the plan's ids as the
    target type's seeds (gnnrepro.sampling.typed.with_target), unless its batch items are
    not nodes (an edge sampler's `seed_types`: it seeds its relation's endpoint types)."""
    if not isinstance(dataset, TypedDataset) or getattr(sampler, "seed_types", None):
        return sampler
    return with_target(sampler, dataset.target)


def _sampler_device(sampler: Any) -> str:
    """The sampler's placement: 'cpu', 'cuda' (graph in GPU memory) or 'uva' (a GPU reading a
    pinned host graph), from its device and its graph's."""
    device = getattr(sampler, "device", torch.device("cpu"))
    if device.type != "cuda":
        return "cpu"
    return "cuda" if sampler.graph.device.type == "cuda" else "uva"


def _check_sampler(dataset: Dataset | TypedDataset | None, sampler: Any) -> None:
    if dataset is not None and not isinstance(dataset, (Dataset, TypedDataset)):
        raise TypeError(f"dataset must be a gnnrepro Dataset, a TypedDataset or None, got "
                        f"{type(dataset).__name__}")
    if not callable(getattr(sampler, "sample", None)):
        raise TypeError(f"sampler must have a sample(seeds, batch_id) method, got "
                        f"{type(sampler).__name__}")
    if dataset is None:
        return
    graph = getattr(sampler, "graph", None)
    gpu_copy = (getattr(graph, "device", dataset.graph.device) != dataset.graph.device
                and graph.num_nodes == dataset.graph.num_nodes
                and graph.num_edges == dataset.graph.num_edges)
    if graph is not dataset.graph and not gpu_copy:
        raise ValueError("sampler: its graph is not the dataset's graph (build the sampler "
                         "on dataset.graph, or on a copy of it on the GPU)")


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
    every epoch (see the module doc). `feature_store` is where rows come from: a FeatureStore
    (gnnrepro.features.open_feature_store opens one by kind), default the dataset's in-memory
    table. Worker threads refuse (ValueError naming worker_kind) a
    sampler or store whose `thread_use` is None (FeatureStore.thread_use). With a store that
    reads ahead (FeatureStore.reads_ahead) and `read_ahead`, upcoming batches' rows are
    announced to it - with workers=0 `prefetch` batches ahead, in worker threads every batch
    already queued for the thread - so its reads overlap the current batch; each announced
    batch holds its rows in memory until gathered.

    `plan` replaces the default batch plan (the dataset's training ids, shuffled by (seed,
    epoch), this rank's share: gnnrepro.pipeline.plan.BatchPlan) with another with the same
    interface (Plan), e.g. a partitioned rank's. Without a dataset (None), the plan, `labels`
    (indexed by global node id) and the feature store must be given.
    """

    def __init__(self, dataset: Dataset | TypedDataset | None, sampler: Any,
                 device: str | torch.device,
                 batch_size: int, shuffle: bool = True, workers: int = 0, streams: int = 1,
                 prefetch: int = 2, seed: int = 0, drop_last: bool = False, *,
                 worker_kind: str = SETTINGS["worker_kind"].default,
                 worker_threads: int = 1, rank: int = 0, world_size: int = 1,
                 feature_source: str = SETTINGS["feature_source"].default,
                 feature_store: FeatureStore | None = None,
                 timeout_s: float = SETTINGS["timeout_s"].default, read_ahead: bool = True,
                 plan: Plan | None = None, labels: torch.Tensor | None = None):
        _check_sampler(dataset, sampler)
        if dataset is None and (plan is None or labels is None or feature_store is None):
            raise TypeError("dataset=None: plan, labels and feature_store must be given")
        self.device = check_device(device)
        self.batch_size = check_int("batch_size", batch_size, 1)
        self.workers = check_int("workers", workers, 0)
        self.worker_kind = validate("worker_kind", worker_kind)
        self.sampler_device = _sampler_device(sampler)
        self.feature_source = validate("feature_source", feature_source)
        check_placement(str(self.device), self.sampler_device, self.feature_source, workers)
        self.streams = check_int("streams", streams, 1)
        self.prefetch = check_int("prefetch", prefetch, 1)
        self.worker_threads = check_int("worker_threads", worker_threads, 1)
        self.timeout_s = check_positive_float("timeout_s", timeout_s)
        self.drop_last = check_bool("drop_last", drop_last)
        self.read_ahead = check_bool("read_ahead", read_ahead)
        self.dataset, self.sampler = dataset, _typed_sampler(dataset, sampler)
        sampler = self.sampler
        if plan is None and hasattr(sampler, "nodes_per_seed"):
            raise ValueError("plan: an edge sampler's batches hold edge ids, not the dataset's "
                             "training nodes; give plan=BatchPlan(edge ids, batch_size)")
        if plan is None:
            plan = BatchPlan(dataset.train_idx, self.batch_size, seed=seed, shuffle=shuffle,
                             world_size=world_size, rank=rank, drop_last=self.drop_last)
        elif plan.batch_size != self.batch_size:
            raise ValueError(f"plan: its batch_size {plan.batch_size} is not batch_size="
                             f"{self.batch_size}")
        self.plan = plan
        self.seed, self.shuffle = self.plan.seed, self.plan.shuffle
        self.rank, self.world_size = self.plan.rank, self.plan.world_size
        self.store = self._open_store(feature_store)
        self._ring = self._staging_ring()
        self._log = WorkLog()
        device_rows = (DeviceRows(self.store, self.feature_source, self.device)
                       if self.feature_source != "pinned" else None)
        handover = DeviceHandover(self.device, dataset.labels if labels is None else labels,
                                  self.streams, self.prefetch,
                                  device_rows, self._log, self.store.split_rows)
        self._handover = handover.handover
        self._local = LocalProducer(sampler, self.store, self._ring, self.plan, handover,
                                    self._log, self.prefetch, self.read_ahead)
        self._workers = WorkerProducer(self.workers, self.worker_kind, sampler, self.store,
                                       self._ring, self.plan, handover, self._log,
                                       self.prefetch, self.worker_threads, self.timeout_s,
                                       self.read_ahead)
        self._epoch = 0
        self._first_step = 0  # the next epoch's first batch (start_at)
        self._generation = 0  # bumped by each iter() and close(): older iterators stop
        self._running = False
        self._epoch_thread: int | None = None  # the thread iterating the running epoch
        self._generation_thread: int | None = None  # the thread of the newest iter()
        self._threads_lock = threading.Lock()  # iter() and an epoch's start, from any thread
        self._closed = False
        self._finalizer = weakref.finalize(self, _shutdown, self._workers.live)

    def _open_store(self, feature_store: FeatureStore | None) -> FeatureStore:
        """The store rows come from, checked against the workers and the feature source."""
        threads = self.workers > 0 and self.worker_kind == "thread"
        share = self.workers > 0 and self.worker_kind == "process"
        if threads and getattr(self.sampler, "thread_use", "copy") != "copy":
            raise ValueError(f"worker_kind='thread': {type(self.sampler).__name__} cannot "
                             f"sample in worker threads; use worker_kind='process' or workers=0")
        if share and self.dataset is None:
            raise ValueError("worker_kind='process' maps the dataset's graph: it needs a "
                             "dataset (use worker_kind='thread' or workers=0)")
        if share:
            self.dataset.graph.share_memory_()  # worker processes map the graph, never copy it
        # Unpinned: with feature_source 'pinned' rows reach the GPU from the pinned staging
        # slots, never from the table itself; 'uva' and 'device' gather on the GPU instead,
        # from the in-memory table.
        store = _feature_store(feature_store, self.dataset, share=share)
        if threads and store.thread_use not in ("share", "copy"):
            raise ValueError(f"worker_kind='thread': {type(store).__name__} cannot be "
                             f"gathered from by worker threads; use worker_kind='process' or "
                             f"workers=0")
        if self.feature_source != "pinned" and isinstance(store, TypedFeatureStore):
            raise ValueError(f"feature_source={self.feature_source!r}: a typed dataset's rows "
                             "reach the GPU from pinned staging slots (feature_source "
                             "'pinned'); GPU-side gathers are homogeneous only for now")
        if self.feature_source != "pinned" and not isinstance(store, InMemoryFeatureStore):
            raise ValueError(f"feature_source={self.feature_source!r} gathers on the GPU from "
                             f"the in-memory table: feature_store must be an "
                             f"InMemoryFeatureStore, got {type(store).__name__}")
        return store

    def _staging_ring(self) -> StagingRing | None:
        """The staging slots: `prefetch` batches in flight, plus (CUDA) copies still reading
        their slots or (CPU) slots leased to yielded batches. Pages of a slot are only
        committed once written (on the CPU; pinned slots are committed whole). None when the
        GPU gathers the rows."""
        if self.feature_source != "pinned":
            return None
        cuda = self.device.type == "cuda"
        num_nodes = self.store.num_nodes
        fanouts = getattr(self.sampler, "fanouts", None)
        if isinstance(self.dataset, TypedDataset) and fanouts is not None:
            rows = _typed_max_input_rows(self.dataset, fanouts, self.plan.max_batch_size,
                                         _samples_disjoint(self.sampler),
                                         getattr(self.sampler, "seed_types", None))
        else:
            max_degree = num_nodes  # without the graph, an all-neighbours layer may reach all
            if self.dataset is not None and num_nodes:
                max_degree = _max_in_degree(self.dataset)
            rows = _max_input_rows(self.sampler, num_nodes, max_degree, self.plan.max_batch_size)
        slots = self.prefetch + (self.streams if cuda else self.prefetch)
        share = self.workers > 0 and self.worker_kind == "process"
        row_bytes = self.store.dim * self.store.dtype.itemsize
        return StagingRing(slots, rows, self.store.dim, self.store.dtype, pin=cuda, share=share,
                           initial_rows=None if share else max(1, _SLOT_BYTES // row_bytes))

    def __len__(self) -> int:
        return len(self.plan)

    def work_seconds(self) -> dict[str, float]:
        """Seconds of sample and extract work done for the current (or last) epoch's batches,
        wherever it ran: in the workers or in this process. extract is the feature gather plus
        this process's hand-over (labels, and with CUDA issuing the host-to-device copies)."""
        return dict(self._log.work)

    @property
    def in_process(self) -> bool:
        """Whether sampling and extraction run inside `next()` (workers=0), so the time the
        consumer blocks can be split between them (see gnnrepro.training.profiler)."""
        return self.workers == 0

    def spans(self) -> list[Span]:
        """The current (or last) epoch's sample and extract work as timeline spans, on the
        lane that did it ("loader" for this process, "worker k"; with CUDA "stream k" for
        issuing a batch's host-to-device copies)."""
        return list(self._log.spans)

    @property
    def worker_pids(self) -> list[int]:
        """Process ids of the running workers (empty when none are running); a worker thread's
        is this process's own."""
        pool = self._workers.pool
        return list(pool.pids) if pool is not None else []

    def __iter__(self) -> Iterator[MiniBatch]:
        if self._closed:
            raise RuntimeError("Loader is closed")
        with self._threads_lock:
            if self._running and self._epoch_thread != threading.get_ident():
                raise RuntimeError(_OTHER_THREAD)
            if self._running:  # an unfinished epoch's iterator in this thread is superseded
                self._abort()
            self._generation += 1
            self._generation_thread = threading.get_ident()
            epoch, self._epoch = self._epoch, self._epoch + 1
            first, self._first_step = self._first_step, 0
            return self._run_epoch(epoch, self._generation, first)

    def start_at(self, epoch: int, step: int = 0) -> None:
        """Make the next iter() epoch `epoch` from its batch `step` on (a resumed run: the
        same batches as that epoch's, those before `step` left out); the ones after it follow
        from epoch + 1, whole."""
        check_int("epoch", epoch, 0)
        check_int("step", step, 0)
        if step > len(self):
            raise ValueError(f"step must be at most the epoch's {len(self)} batches, got {step}")
        if self._running:
            raise RuntimeError("start_at: this Loader is in the middle of an epoch")
        self._epoch, self._first_step = epoch, step

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

    def _run_epoch(self, epoch: int, generation: int, first: int) -> Iterator[MiniBatch]:
        with self._threads_lock:
            me = threading.get_ident()
            if generation != self._generation:
                raise RuntimeError(_SUPERSEDED if self._generation_thread == me
                                   else _OTHER_THREAD)
            if self._running and self._epoch_thread != me:
                raise RuntimeError(_OTHER_THREAD)
            self._running, self._epoch_thread = True, me
        order = self.plan.epoch_ids(epoch)
        self._log.reset()
        producer = self._local if self.workers == 0 else self._workers
        finished = False
        try:
            for prepared in producer.batches(order, epoch, first):
                mb = self._handover(*prepared)
                del prepared
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

    def _abort(self) -> None:
        """Stop the workers at once and reclaim the slots they were filling."""
        self._workers.abort()
        self._running = False

    def __repr__(self) -> str:
        ranks = (f", rank={self.rank}, world_size={self.world_size}"
                 if self.world_size > 1 else "")
        return (f"Loader(batches={len(self)}, batch_size={self.batch_size}, "
                f"device={self.device}, workers={self.workers}, "
                f"worker_kind={self.worker_kind}, streams={self.streams}, "
                f"prefetch={self.prefetch}, seed={self.seed}{ranks})")
