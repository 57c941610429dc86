"""LinkDataset: a link-prediction dataset (ogbl-citation2's form) in the Dataset mould.

Why: link prediction trains on edges, not labelled nodes, and ranks each held-out edge's true
destination against fixed negatives; the sampler excludes a batch's edges and their reverses by
edge id (DGL's `exclude="reverse_id"`). So a LinkDataset holds the directed training edges, the
val/test queries with K seeded negatives each, and a message-passing graph whose edge ids name
the training edges: training edge i (train_src[i] -> train_dst[i]) has id i and its reverse id
i + E_t (`link_graph`). Node labels and node splits are empty (-1, no ids). The arrays are cached
beside the Dataset's own (`read_link_entry`, the cache's reader for this kind).
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
from gnnrepro.datasets.edge_queries import EDGE_ARRAYS, EdgeQueries
from gnnrepro.graph import CSCGraph

__all__ = ["LINK_ARRAYS", "LinkDataset", "link_graph", "no_node_labels", "read_link_entry"]

#: The arrays a LinkDataset adds to a Dataset's ARRAYS (edge_ids: the graph's).
LINK_ARRAYS = ("edge_ids", *EDGE_ARRAYS)
_log = logging.getLogger(__name__)


@dataclass(repr=False, kw_only=True)
class LinkDataset(Dataset, EdgeQueries):
    """A Dataset plus its EdgeQueries. `graph` is `link_graph` of the training edges (both
    directions, edge ids kept); labels are -1 and the node splits empty."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.check_edge_queries()
        if self.graph.edge_ids is None or self.graph.num_edges != 2 * self.num_train_edges:
            raise ValueError(f"graph must hold the {self.num_train_edges} training edges in both "
                             f"directions with edge_ids (link_graph), got {self.graph.num_edges} "
                             f"edges{'' if self.graph.edge_ids is not None else ', no edge_ids'}")

    @classmethod
    def from_arrays(cls, arrays: dict[str, torch.Tensor], *, num_classes: int, name: str,
                    params: dict[str, Any]) -> "LinkDataset":
        """The dataset of `arrays` (named as ARRAYS + LINK_ARRAYS), validated."""
        graph = CSCGraph(arrays["indptr"], arrays["indices"], edge_ids=arrays["edge_ids"])
        return cls(graph=graph, features=arrays["features"], labels=arrays["labels"],
                   train_idx=arrays["train_idx"], val_idx=arrays["val_idx"],
                   test_idx=arrays["test_idx"], num_classes=num_classes, name=name,
                   params=params, **{k: arrays[k] for k in EDGE_ARRAYS})

    def arrays(self) -> dict[str, torch.Tensor]:
        """Every array by name, in ARRAYS + LINK_ARRAYS order (what the cache writes)."""
        return (super().arrays() | {"edge_ids": self.graph.edge_ids}
                | {k: getattr(self, k) for k in EDGE_ARRAYS})

    @property
    def reverse_eids(self) -> torch.Tensor:
        """int64 [2 E_t]: the id of every edge id's reverse (DGL's `reverse_eids`), what a
        sampler excludes with a batch's own edges."""
        e = self.num_train_edges
        return (torch.arange(2 * e, dtype=torch.int64) + e) % max(2 * e, 1)

    def nbytes(self) -> int:
        """The Dataset's bytes plus the graph's edge ids and the edge and query arrays."""
        return (super().nbytes() + 8 * self.graph.num_edges
                + sum(8 * getattr(self, k).numel() for k in EDGE_ARRAYS))

    def summary(self) -> dict[str, Any]:
        """Dataset.summary plus the edge counts and negatives per query."""
        return super().summary() | self.edge_counts()

    def __repr__(self) -> str:
        return (f"LinkDataset(name={self.name!r}, num_nodes={self.num_nodes}, "
                f"num_edges={self.graph.num_edges}, num_features={self.num_features}, "
                f"{self.edge_counts_text()}, params={self.params})")


def link_graph(src: torch.Tensor, dst: torch.Tensor, num_nodes: int) -> CSCGraph:
    """The message-passing graph of training edges `src` -> `dst` (int64 [E_t]): every edge in
    both directions, edge i with id i and its reverse with id i + E_t; int32 indices where
    `num_nodes` allows. Within a destination, neighbours keep that id order."""
    return CSCGraph.from_edges(torch.cat((src, dst)), torch.cat((dst, src)), num_nodes,
                               index_dtype=torch.int32 if num_nodes < 2**31 else torch.int64,
                               keep_edge_ids=True)


def no_node_labels(num_nodes: int) -> dict[str, Any]:
    """The Dataset fields of a dataset without node labels: labels all -1, empty node splits,
    num_classes 0."""
    empty = torch.empty(0, dtype=torch.int64)
    return {"labels": torch.full((num_nodes,), -1, dtype=torch.int64), "train_idx": empty,
            "val_idx": empty.clone(), "test_idx": empty.clone(), "num_classes": 0}


def read_link_entry(directory: Path, name: str, params: dict[str, Any]) -> LinkDataset | None:
    """The LinkDataset in cache entry `directory`, or None if it is missing, partial, stale or
    corrupt (cache.read_entry's rules, plus the link arrays)."""
    base = cache.read_entry(directory, name, params)
    if base is None:
        return None
    try:
        extra = {k: np.load(directory / f"{k}.npy", mmap_mode="c") for k in LINK_ARRAYS}
        # Blocks report edge ids at the positions the sampler picks: random reads, like indices.
        edge_ids = torch.from_numpy(random_access_copy(extra.pop("edge_ids")))
        graph = CSCGraph(base.graph.indptr, base.graph.indices, validate=False,
                         edge_ids=edge_ids)
        return LinkDataset(**{f.name: getattr(base, f.name) for f in fields(Dataset)}
                           | {"graph": graph},
                           **{k: torch.from_numpy(a) for k, a in extra.items()})
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError) as err:
        _log.warning("ignoring corrupt cache entry %s: %s", directory, err)
        return None
