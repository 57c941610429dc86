"""TypedFeatureStore: the feature stores of a typed graph's node types behind one store.

Each featured node type has its own FeatureStore (in memory, on disk, mmap: any kind), all of
one row width and dtype. A batch's input nodes are a dict {type: ids}; its rows are gathered
type by type, in the store's type order, into one buffer (one staging slot, one host-to-device
copy) and handed to the model as per-type views of it (`split_rows`). Types without features
(ogbn-mag's authors, institutions, fields) are not stored: a model learns their embeddings.
FP16 rows stay FP16 through the slot and the copy; the model casts them once on the device.
"""
from __future__ import annotations

import copy
from collections.abc import Mapping

import torch

from gnnrepro.features.store import FeatureStore, check_out

__all__ = ["TypedFeatureStore"]


class TypedFeatureStore(FeatureStore):
    """Per featured node type a FeatureStore; gathers and splits batches by type."""

    def __init__(self, stores: Mapping[str, FeatureStore]):
        if not isinstance(stores, Mapping) or not stores:
            raise TypeError("stores must be a non-empty dict {node type: FeatureStore}")
        for ntype, store in stores.items():
            if not isinstance(store, FeatureStore):
                raise TypeError(f"stores[{ntype!r}] must be a FeatureStore, got "
                                f"{type(store).__name__}")
        shapes = {(s.dim, s.dtype) for s in stores.values()}
        if len(shapes) > 1:
            raise ValueError("every node type's features must have one width and dtype (one "
                             "staging slot holds a batch's rows): got "
                             + ", ".join(f"{t}: {s.dim} x {s.dtype}" for t, s in stores.items()))
        self.stores = dict(stores)
        uses = {s.thread_use for s in stores.values()}
        self.thread_use = (None if None in uses else "copy" if "copy" in uses else "share")
        self.reads_ahead = any(s.reads_ahead for s in stores.values())

    @property
    def node_types(self) -> list[str]:
        return list(self.stores)

    @property
    def num_nodes(self) -> int:
        return sum(s.num_nodes for s in self.stores.values())

    @property
    def dim(self) -> int:
        return next(iter(self.stores.values())).dim

    @property
    def dtype(self) -> torch.dtype:
        return next(iter(self.stores.values())).dtype

    def nbytes(self) -> int:
        return sum(s.nbytes() for s in self.stores.values())

    def _ids(self, ids: object) -> dict[str, torch.Tensor]:
        """The ids of the featured types, in the store's type order, where they are (counting
        or splitting rows needs no copy to the host)."""
        if not isinstance(ids, Mapping):
            raise TypeError(f"ids of a TypedFeatureStore must be a dict {{node type: ids}}, "
                            f"got {type(ids).__name__}")
        return {t: ids[t] for t in self.stores if t in ids}

    def num_rows(self, ids: object) -> int:
        return sum(t.numel() for t in self._ids(ids).values())

    def gather(self, ids: object, out: torch.Tensor | None = None) -> torch.Tensor:
        """The rows of every featured type's ids, type after type, as one [rows, dim] tensor
        (written into `out[:rows]` when given)."""
        ids = {t: type_ids.cpu() for t, type_ids in self._ids(ids).items()}
        rows = sum(t.numel() for t in ids.values())
        out = (torch.empty((rows, self.dim), dtype=self.dtype) if out is None
               else check_out(out, rows, self.dim, self.dtype))
        begin = 0
        for ntype, type_ids in ids.items():
            end = begin + type_ids.numel()
            self.stores[ntype].gather(type_ids, out=out[begin:end])
            begin = end
        return out[:rows]

    def split_rows(self, rows: torch.Tensor, ids: object) -> dict[str, torch.Tensor]:
        """`rows` (as `gather` laid them out, on any device) as views per node type."""
        out, begin = {}, 0
        for ntype, type_ids in self._ids(ids).items():
            out[ntype] = rows[begin: begin + type_ids.numel()]
            begin += type_ids.numel()
        return out

    def prefetch(self, ids: object) -> None:
        for ntype, type_ids in self._ids(ids).items():
            self.stores[ntype].prefetch(type_ids.cpu())

    def discard_prefetched(self) -> None:
        for store in self.stores.values():
            store.discard_prefetched()

    def take_read_spans(self) -> list[tuple[float, float]]:
        return [span for s in self.stores.values() for span in s.take_read_spans()]

    def __copy__(self) -> "TypedFeatureStore":
        """A worker thread's copy: its own copy of each store that threads use by copy."""
        return TypedFeatureStore({t: copy.copy(s) if s.thread_use == "copy" else s
                                  for t, s in self.stores.items()})

    def __repr__(self) -> str:
        inner = ", ".join(f"{t}: {s!r}" for t, s in self.stores.items())
        return f"TypedFeatureStore({{{inner}}})"
