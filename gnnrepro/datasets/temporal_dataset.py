"""TemporalDataset: a Dataset whose edges and label queries carry integer times.

Why: a time-respecting sampler samples a seed at its `node_time` and walks only edges with
`edge_time <= node_time`; a sampler that ignores the times sees the future. The two time arrays
are cached beside the Dataset's own (`read_temporal_entry`, the cache's reader for this kind).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch

from gnnrepro.datasets import cache
from gnnrepro.datasets.anonymous import random_access_copy
from gnnrepro.datasets.dataset import Dataset
from gnnrepro.graph import CSCGraph

__all__ = ["TEMPORAL_ARRAYS", "TemporalDataset", "read_temporal_entry"]

#: The arrays a TemporalDataset adds to a Dataset's ARRAYS.
TEMPORAL_ARRAYS = ("edge_time", "node_time")
_log = logging.getLogger(__name__)


@dataclass(repr=False, kw_only=True)
class TemporalDataset(Dataset):
    """A Dataset plus `edge_time` (int64 [E], by the edge's CSC position in `graph`; both
    directions of an undirected edge share it) and `node_time` (int64 [N], when each node's
    label is asked)."""

    edge_time: torch.Tensor  # int64 [E]
    node_time: torch.Tensor  # int64 [N]

    def __post_init__(self) -> None:
        super().__post_init__()
        for key, size in (("edge_time", self.graph.num_edges), ("node_time", self.num_nodes)):
            t = getattr(self, key)
            if t.dtype != torch.int64 or t.shape != (size,):
                raise ValueError(f"{key} must be int64 [{size}], got {t.dtype} {tuple(t.shape)}")

    @classmethod
    def from_arrays(cls, arrays: dict[str, torch.Tensor], *, num_classes: int, name: str,
                    params: dict[str, Any]) -> "TemporalDataset":
        """The dataset of `arrays` (named as ARRAYS + TEMPORAL_ARRAYS), validated."""
        return cls(graph=CSCGraph(arrays["indptr"], arrays["indices"]),
                   features=arrays["features"], labels=arrays["labels"],
                   train_idx=arrays["train_idx"], val_idx=arrays["val_idx"],
                   test_idx=arrays["test_idx"], num_classes=num_classes, name=name,
                   params=params, edge_time=arrays["edge_time"], node_time=arrays["node_time"])

    def arrays(self) -> dict[str, torch.Tensor]:
        """Every array by name, in ARRAYS + TEMPORAL_ARRAYS order (what the cache writes)."""
        return super().arrays() | {k: getattr(self, k) for k in TEMPORAL_ARRAYS}

    def nbytes(self) -> int:
        """The Dataset's bytes plus the two time arrays (a temporal sampler reads both)."""
        return super().nbytes() + 8 * (self.edge_time.numel() + self.node_time.numel())

    def __repr__(self) -> str:
        return "Temporal" + super().__repr__()


def read_temporal_entry(directory: Path, name: str,
                        params: dict[str, Any]) -> TemporalDataset | None:
    """The TemporalDataset in cache entry `directory`, or None if it is missing, partial, stale
    or corrupt (cache.read_entry's rules, plus the two time arrays)."""
    base = cache.read_entry(directory, name, params)
    if base is None:
        return None
    try:
        times = {k: np.load(directory / f"{k}.npy", mmap_mode="c") for k in TEMPORAL_ARRAYS}
        # A temporal sampler reads edge_time at random, like indices (cache.RANDOM_ACCESS).
        times["edge_time"] = random_access_copy(times["edge_time"])
        return TemporalDataset(**{f.name: getattr(base, f.name) for f in fields(Dataset)},
                               **{k: torch.from_numpy(a) for k, a in times.items()})
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        _log.warning("ignoring corrupt cache entry %s: %s", directory, err)
        return None
