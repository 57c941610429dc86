"""Feature stores: where node features live and how a mini-batch's rows are gathered from them.

`InMemoryFeatureStore` keeps one copy of the feature table per machine, in shared memory that
every training and worker process maps (never copies), page-locked in place when CUDA is present
so host-to-device copies and GPU-side (UVA) reads of it run at full PCIe speed.
"""
from __future__ import annotations

import abc
import warnings

import torch

from gnnrepro import _ops
from gnnrepro.checks import check_bool, check_node_ids
from gnnrepro.pinning import pin_in_place, share_memory_in_place

__all__ = ["FeatureStore", "InMemoryFeatureStore", "check_out"]


def check_out(out: object, rows: int, dim: int, dtype: torch.dtype) -> torch.Tensor:
    """Validate a caller's output buffer: a contiguous CPU [>= rows, dim] tensor of `dtype`."""
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"out must be a torch.Tensor, got {type(out).__name__}")
    if out.dtype != dtype:
        raise TypeError(f"out must have the features' dtype {dtype}, got {out.dtype}")
    if out.device.type != "cpu":
        raise ValueError(f"out must be a CPU tensor, got {out.device}")
    if out.dim() != 2 or out.shape[1] != dim or out.shape[0] < rows:
        raise ValueError(f"out must have shape [>= {rows}, {dim}], got {tuple(out.shape)}")
    if not out.is_contiguous():
        raise ValueError("out must be contiguous")
    return out


class FeatureStore(abc.ABC):
    """A [num_nodes, dim] feature table that mini-batches gather rows from."""

    #: How a Loader's worker threads gather from this store (gnnrepro.pipeline.thread_workers):
    #: "share" (gather is thread-safe: every thread calls this one store), "copy" (each thread
    #: gathers with its own copy.copy of the store, as a worker process does with its
    #: unpickled copy), or None (not from threads: the Loader refuses worker_kind='thread').
    thread_use: str | None = None
    #: Whether the store reads rows ahead of their gather (prefetch): a Loader then announces
    #: upcoming batches' input nodes, so their reads overlap the current batch's work.
    reads_ahead: bool = False

    @property
    @abc.abstractmethod
    def num_nodes(self) -> int: ...

    @property
    @abc.abstractmethod
    def dim(self) -> int: ...

    @property
    @abc.abstractmethod
    def dtype(self) -> torch.dtype: ...

    @abc.abstractmethod
    def nbytes(self) -> int:
        """Bytes of the whole table."""

    @abc.abstractmethod
    def gather(self, ids: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        """Rows `ids` as a [len(ids), dim] tensor, written into `out[:len(ids)]` when given."""

    def gather_args(self, ids: object,
                    out: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """`gather`'s arguments checked, the same for every store: ids as CPU node ids of
        this table, and `out` checked or (None) allocated for len(ids) rows."""
        ids = check_node_ids(ids, self.num_nodes, "ids", torch.device("cpu"))
        if out is None:
            return ids, torch.empty((ids.numel(), self.dim), dtype=self.dtype)
        return ids, check_out(out, ids.numel(), self.dim, self.dtype)

    def prefetch(self, ids: torch.Tensor) -> None:
        """Start reading rows `ids`, to be gathered later (a store that reads ahead)."""

    def discard_prefetched(self) -> None:
        """Drop rows read ahead and not gathered (a store that reads ahead)."""

    def take_read_spans(self) -> list[tuple[float, float]]:
        """(start, end) of the device reads since the last call, for the timeline."""
        return []

    def num_rows(self, ids: object) -> int:
        """How many rows gathering `ids` gives (a batch's input nodes: a tensor here, a dict by
        node type for a TypedFeatureStore)."""
        return ids.numel()

    def split_rows(self, rows: torch.Tensor, ids: object) -> object:
        """The gathered `rows` of `ids` as the model takes them: here the rows themselves; per
        node type for a TypedFeatureStore."""
        return rows



class InMemoryFeatureStore(FeatureStore):
    """Features held in host memory: one shared copy per machine, pinned in place with CUDA.

    `share=True` makes the table cheap to hand to worker processes (torch.multiprocessing sends
    a handle to the same pages, not the data). A tensor already in shared memory is used as it
    is; so is a file mapping made with `torch.from_file(..., shared=True)`, which is pickled by
    its file name and mapped again in the receiver. Anything else - including the datasets'
    features, which are *copy-on-write* numpy memmaps of the cache files - is moved into shared
    memory once, in place (`share_memory_()` swaps the tensor's storage; the caller's tensor
    sees it). Why copy a file mapping: a private (copy-on-write) mapping is per process, so
    torch.multiprocessing would copy it into shared memory on every send anyway, and pinning it
    (cudaHostRegister) would force a private copy of every page in every process that pins.

    `pin=True` page-locks the table in place when CUDA is available (gnnrepro.pinning); if
    that fails (locked-memory limits, too little RAM) the table stays pageable with one warning.
    Pinning is per process: a store received by another process is not pinned there (workers
    that only gather on the CPU do not need it); call `pin_memory_()` where it is wanted.
    Gathers into distinct outputs are thread-safe (the table is only read).
    """

    thread_use = "share"

    def __init__(self, features: torch.Tensor, *, share: bool = True, pin: bool = True):
        if not isinstance(features, torch.Tensor):
            raise TypeError(f"features must be a torch.Tensor, got {type(features).__name__}")
        if not features.is_floating_point():
            raise TypeError(f"features must be a floating-point tensor, got {features.dtype}")
        if features.dim() != 2:
            raise ValueError(f"features must be 2-D [num_nodes, dim], got shape "
                             f"{tuple(features.shape)}")
        if features.device.type != "cpu":
            raise ValueError(f"features must be a CPU tensor, got {features.device}")
        if not features.is_contiguous():
            raise ValueError("features must be contiguous")
        check_bool("share", share)
        check_bool("pin", pin)
        if share and not features.is_shared():
            share_memory_in_place(features)
        self.features = features
        self.pinned = False
        if pin:
            self.pin_memory_()

    @property
    def num_nodes(self) -> int:
        return self.features.shape[0]

    @property
    def dim(self) -> int:
        return self.features.shape[1]

    @property
    def dtype(self) -> torch.dtype:
        return self.features.dtype

    def nbytes(self) -> int:
        return self.features.numel() * self.features.element_size()

    def pin_memory_(self) -> "InMemoryFeatureStore":
        """Page-lock the table in this process if CUDA is available; warn once if that fails."""
        if torch.cuda.is_available() and not self.pinned:
            self.pinned = pin_in_place(self.features)
            if not self.pinned:
                warnings.warn(f"could not page-lock the {self.nbytes() / 2**30:.2f} GiB feature "
                              "table (cudaHostRegister failed); it stays pageable and "
                              "host-to-device copies will be slower", stacklevel=2)
        return self

    def gather(self, ids: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        """Rows `ids` (int32/int64, repeats allowed) via the multi-threaded C++ gather.

        With `out` (e.g. a pinned staging buffer with room for at least len(ids) rows) nothing
        is allocated and the result is the view `out[:len(ids)]`.
        """
        ids, out = self.gather_args(ids, out)
        _ops.ops.gather_rows(self.features, ids, out)
        return out[: ids.numel()]

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["pinned"] = False  # page-locking does not travel to another process
        filename = self.features.untyped_storage().filename
        if filename is not None:  # torch cannot send a file mapping's handle: send its name
            state["features"] = (filename, self.features.untyped_storage().nbytes(),
                                 self.features.storage_offset(), self.dtype,
                                 tuple(self.features.shape))
        return state

    def __setstate__(self, state: dict) -> None:
        if isinstance(state["features"], tuple):
            filename, nbytes, offset, dtype, shape = state["features"]
            itemsize = torch.empty(0, dtype=dtype).element_size()
            flat = torch.from_file(filename, shared=True, size=nbytes // itemsize, dtype=dtype)
            state["features"] = flat[offset: offset + shape[0] * shape[1]].view(shape)
        self.__dict__.update(state)

    def __repr__(self) -> str:
        return (f"InMemoryFeatureStore(num_nodes={self.num_nodes}, dim={self.dim}, "
                f"dtype={self.dtype}, shared={self.features.is_shared()}, pinned={self.pinned})")
