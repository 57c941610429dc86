"""DiskFeatureStore: features larger than memory, read from a feature file with direct I/O.

The CPU counterpart of GIDS (GPU-initiated direct storage access for GNN training): rows come from three places, in this order -
* a hot set kept in memory (shared between processes; page-locked with CUDA), chosen by the
  caller (`hot_nodes`: in-degree or reverse PageRank) within a byte budget;
* a CLOCK cache of recently read rows within a second byte budget (one per process);
* the file, through gnnrepro._C.DiskReader: O_DIRECT (no page cache, so the memory used is
  exactly the two budgets), requests aligned to the device's logical block size, rows that
  share or sit near a block coalesced into one request, many requests in flight (io_uring, or
  a pread thread pool).
`prefetch(ids)` starts the reads of an upcoming batch at once (GIDS's window buffering); its
requests share the reader's queue with the current batch's, so the device stays busy across
batches (the storage access accumulator). A batch's own reads go ahead of the announced ones,
so gather() never waits for the next batches' reads. The per-batch plan (distinct ids, hot and
cache lookups, announced and own reads, copies into `out`, cache inserts) is one C++ call,
gnnrepro._C.DiskGather (csrc/features/disk_gather.h), with the GIL released. Every row
returned is the row of the id asked for: a failed or short read raises OSError naming the file
and the nodes, never zeros.
"""
from __future__ import annotations

import os
import threading
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import torch

from gnnrepro import _ops
from gnnrepro.checks import check_int, check_node_ids
from gnnrepro.feature_file import block_size_of, read_header
from gnnrepro.features.file_store import FileFeatureStore
from gnnrepro.features.row_cache import ClockCache
from gnnrepro.pinning import pin_in_place

__all__ = ["DiskFeatureStore", "DiskStats"]

ENGINES = ("auto", "io_uring", "pread")
THREAD_CACHES = ("shared", "per-thread")
_COUNTERS = ("rows", "unique", "hot_hits", "cache_hits", "prefetch_hits", "rows_read", "requests",
             "bytes_read", "read_wait_s")
_STATS_LOCK = threading.Lock()


@dataclass
class DiskStats:
    """Counters since the last reset: where rows came from and what the device was asked."""

    rows: int = 0            # rows asked for (repeats included)
    unique: int = 0          # distinct rows asked for
    hot_hits: int = 0
    cache_hits: int = 0
    prefetch_hits: int = 0
    rows_read: int = 0       # rows read from the file (prefetched ones included)
    requests: int = 0
    bytes_read: int = 0
    read_wait_s: float = 0.0  # time gather() spent blocked on the device

    def hit_rate(self) -> float:
        """Share of distinct rows served from memory (hot set or cache), not read from disk."""
        return (self.hot_hits + self.cache_hits) / max(self.unique, 1)

    def bytes_read_per_byte_used(self, row_bytes: int) -> float:
        """Device bytes read per byte of row data actually used (read amplification)."""
        return self.bytes_read / max(self.rows_read * row_bytes, 1)

    def add(self, counts: object) -> None:
        """Add one gather's counts (a gnnrepro._C.GatherCounts) to these (under a lock: the
        copies a Loader's worker threads gather with add to one DiskStats)."""
        with _STATS_LOCK:
            for name in _COUNTERS:
                setattr(self, name, getattr(self, name) + getattr(counts, name))

    def take(self) -> "DiskStats":
        """A copy of the counters so far, which are zeroed (atomically, like add)."""
        with _STATS_LOCK:
            taken = DiskStats(**{name: getattr(self, name) for name in _COUNTERS})
            for name in _COUNTERS:
                setattr(self, name, type(getattr(self, name))())
        return taken

    def to_dict(self, row_bytes: int) -> dict:
        return {"rows": self.rows, "unique": self.unique, "hot_hits": self.hot_hits,
                "cache_hits": self.cache_hits, "prefetch_hits": self.prefetch_hits,
                "rows_read": self.rows_read, "requests": self.requests,
                "bytes_read": self.bytes_read, "read_wait_s": self.read_wait_s,
                "hit_rate": self.hit_rate(),
                "bytes_read_per_byte_used": self.bytes_read_per_byte_used(row_bytes)}


class DiskFeatureStore(FileFeatureStore):
    """Rows of the feature file at `path`, gathered like InMemoryFeatureStore's (same contract).

    `hot_ids`: nodes whose rows are held in memory (e.g. `hot_nodes(graph, rows)`).
    `cache_bytes`: size of the CLOCK cache of other rows (0: none).
    `engine`: "auto" | "io_uring" | "pread"; `threads` pread threads, `queue_depth` io_uring
    requests in flight. `block_size`: alignment (default: the device's logical block size).
    `max_gap_bytes`: rows this close are read in one request (default one block);
    `max_request_bytes`: the largest request. `direct=False` reads through the page cache
    (for file systems without O_DIRECT, e.g. tmpfs).
    Pickling (to worker processes) shares the hot set and reopens the file; caches are per
    process. One object is not for concurrent gathers (its look-ahead queue is in order):
    Loader worker threads each gather with their own copy.copy, which shares the hot set, the
    counters and - with `thread_cache="shared"` - the CLOCK cache (thread-safe: one lock per
    batch's lookups and one per its inserts), with its own reader and look-ahead queue;
    "per-thread" gives each copy a cache of `cache_bytes` of its own.
    """

    thread_use = "copy"
    reads_ahead = True

    def __init__(self, path: str | os.PathLike, *, hot_ids: torch.Tensor | None = None,
                 cache_bytes: int = 0, engine: str = "auto", threads: int = 16,
                 queue_depth: int = 32, block_size: int | None = None,
                 max_gap_bytes: int | None = None, max_request_bytes: int = 128 << 10,
                 direct: bool = True, share: bool = True, pin: bool = False,
                 thread_cache: str = "shared"):
        self.path = Path(path)
        self.info = read_header(self.path)
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
        if thread_cache not in THREAD_CACHES:
            raise ValueError(f"thread_cache must be one of {', '.join(THREAD_CACHES)}, got "
                             f"{thread_cache!r}")
        self.thread_cache = thread_cache
        check_int("cache_bytes", cache_bytes, 0)
        check_int("threads", threads, 1)
        check_int("queue_depth", queue_depth, 1)
        check_int("max_request_bytes", max_request_bytes, 512)
        self.block_size = block_size_of(self.path) if block_size is None else \
            check_int("block_size", block_size, 512)
        self.max_gap_bytes = self.block_size if max_gap_bytes is None else \
            check_int("max_gap_bytes", max_gap_bytes, 0)
        self.settings = {"engine": engine, "threads": threads, "queue_depth": queue_depth,
                         "max_request_bytes": max_request_bytes, "direct": direct}
        self.cache_bytes = cache_bytes
        order = self.info.order()
        self.order = order  # order[slot] = node (None: identity)
        self.position = None if order is None else torch.empty_like(order).scatter_(
            0, order, torch.arange(order.numel()))
        self.hot_slot = torch.empty(0, dtype=torch.int32)
        self.hot = torch.empty((0, self.dim), dtype=self.dtype)
        self.pinned = False
        self._open()
        if hot_ids is not None and hot_ids.numel():
            hot_ids = check_node_ids(hot_ids, self.num_nodes, "hot_ids", torch.device("cpu"))
            hot_ids = torch.unique(hot_ids.long())
            if self.position is not None:  # in file order: the rows land where they belong
                hot_ids = hot_ids[torch.argsort(self.position[hot_ids])]
            self.hot = self._read_in_file_order(hot_ids)
            self.hot_slot = torch.full((self.num_nodes,), -1, dtype=torch.int32)
            self.hot_slot[hot_ids] = torch.arange(hot_ids.numel(), dtype=torch.int32)
        if share:
            self.hot.share_memory_()
            self.hot_slot.share_memory_()
            if self.position is not None:
                self.position.share_memory_()
        if pin:
            self.pinned = pin_in_place(self.hot)
        self._bind()

    def _open(self, cache: ClockCache | None = None, stats: DiskStats | None = None) -> None:
        """A reader of its own, and `cache`/`stats` (None: new ones)."""
        s = self.settings
        self.reader = _ops._C.DiskReader(
            str(self.path), self.info.data_offset, self.info.row_bytes, self.num_nodes,
            self.block_size, s["threads"], s["queue_depth"], self.max_gap_bytes,
            s["max_request_bytes"], s["engine"], s["direct"], self.info.rows_per_unit,
            self.info.unit_bytes)
        self.cache = cache if cache is not None else ClockCache(
            self.cache_bytes // self.info.row_bytes, self.num_nodes, self.dim, self.dtype)
        self.stats = stats if stats is not None else DiskStats()
        self._read_spans: deque[tuple[float, float]] = deque(maxlen=4096)  # if nobody takes

    def _bind(self) -> None:
        """The C++ side of gather/prefetch, over the reader, hot set and cache (once the hot
        set is in its final memory)."""
        position = torch.empty(0, dtype=torch.int64) if self.position is None else \
            self.position.contiguous()
        self._plan = _ops._C.DiskGather(self.reader, self.hot, self.hot_slot, position,
                                        self.cache.state)

    @property
    def engine(self) -> str:
        """"io_uring" or "pread": what the reader really uses."""
        return self.reader.engine


    def memory_bytes(self) -> int:
        """Bytes of rows held in memory: the hot set plus this process's cache."""
        return self.hot.numel() * self.hot.element_size() + self.cache.nbytes() + \
            self.hot_slot.numel() * 4

    def reset_stats(self) -> DiskStats:
        """Return the counters so far and zero them (e.g. once per epoch; worker threads'
        copies count into the same counters)."""
        return self.stats.take()

    # ---- reading ------------------------------------------------------------------------

    def _read_in_file_order(self, nodes: torch.Tensor) -> torch.Tensor:
        """Rows of `nodes` (distinct, in file order), read into one new tensor."""
        pos = nodes if self.position is None else self.position[nodes]
        buf = torch.empty((nodes.numel(), self.dim), dtype=self.dtype)
        try:
            requests, nbytes = self.reader.submit(pos, buf.view(torch.uint8)).wait()
        except RuntimeError as exc:
            shown = nodes[:8].tolist()
            more = f" and {nodes.numel() - 8} more" if nodes.numel() > 8 else ""
            raise OSError(f"DiskFeatureStore: could not read the rows of nodes {shown}{more}: "
                          f"{exc}") from exc
        self.stats.requests += requests
        self.stats.bytes_read += nbytes
        self.stats.rows_read += nodes.numel()
        return buf

    def prefetch(self, ids: torch.Tensor) -> None:
        """Start reading the rows of an upcoming gather(ids) now (not waiting for them).

        Announce batches in the order they will be gathered: each gather() consumes the
        oldest announced read (rows are matched by node id, so a mismatch costs only reads).
        """
        ids = check_node_ids(ids, self.num_nodes, "ids", torch.device("cpu"))
        self._plan.prefetch(ids)

    def discard_prefetched(self) -> None:
        """Forget reads announced by prefetch() and not gathered yet (e.g. an abandoned
        epoch's), after they finish: their buffers must not be reused while being written."""
        self._plan.discard_prefetched()

    def take_read_spans(self) -> list[tuple[float, float]]:
        """(submitted, finished) perf_counter times of the reads gathered since the last call:
        when the device worked for the batches, for the stage timeline."""
        spans = list(self._read_spans)
        self._read_spans.clear()
        return spans

    def gather(self, ids: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        """Rows `ids` (int32/int64, repeats allowed) into out[:len(ids)] (allocated if None):
        one C++ call (csrc/features/disk_gather.h) does the batch's whole plan."""
        ids, out = self.gather_args(ids, out)
        counts = self._plan.gather(ids, out)
        self.stats.add(counts)
        self._read_spans.extend(counts.spans)
        return out[: ids.numel()]

    def close(self) -> None:
        """Wait for reads in flight, then close the file (idempotent)."""
        self.discard_prefetched()
        self.reader.close()

    def __copy__(self) -> "DiskFeatureStore":
        """A store for another thread (see the class doc): the same hot set and counters,
        the same CLOCK cache unless thread_cache is "per-thread", its own reader."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._open(self.cache if self.thread_cache == "shared" else None, self.stats)
        new._bind()
        return new

    def __getstate__(self) -> dict:
        return {"path": self.path, "settings": self.settings, "block_size": self.block_size,
                "max_gap_bytes": self.max_gap_bytes, "cache_bytes": self.cache_bytes,
                "hot": self.hot, "hot_slot": self.hot_slot, "order": self.order,
                "position": self.position, "thread_cache": self.thread_cache}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.info = read_header(self.path)
        self.pinned = False  # page-locking does not travel to another process
        self._open()
        self._bind()

    def __repr__(self) -> str:
        return (f"DiskFeatureStore({str(self.path)!r}, num_nodes={self.num_nodes}, "
                f"dim={self.dim}, hot={self.hot.shape[0]}, cache_rows={self.cache.capacity}, "
                f"engine={self.engine}, block_size={self.block_size})")

