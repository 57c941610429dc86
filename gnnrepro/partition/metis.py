"""METIS node partition of a dataset's graph, balanced on training nodes and on edges.

METIS (through pymetis) wants an undirected graph without self loops, so the CSC graph is
symmetrised first. Each node carries two weights - 1 if it is a training node, and its
in-degree - so every part gets about the same number of training seeds (the same number of
steps per machine) and of edges to sample from.
"""
from __future__ import annotations

import numpy as np

from gnnrepro.checks import check_int
from gnnrepro.datasets.dataset import Dataset, symmetric_csc

__all__ = ["edge_cut", "metis_parts"]


def metis_parts(dataset: Dataset, num_parts: int) -> np.ndarray:
    """The part (int32 in [0, num_parts)) of every node of `dataset`'s graph."""
    check_int("num_parts", num_parts, 1)
    graph = dataset.graph
    n = graph.num_nodes
    if num_parts > n:
        raise ValueError(f"num_parts={num_parts} exceeds the graph's {n} nodes")
    if num_parts == 1:
        return np.zeros(n, dtype=np.int32)
    import pymetis  # optional dependency (the `partition` extra)

    indptr = graph.indptr.numpy()
    dst = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    src = graph.indices.numpy().astype(np.int64)
    keep = src != dst
    sym = symmetric_csc(src[keep], dst[keep], n)
    del dst, src, keep
    is_train = np.zeros(n, dtype=np.int64)
    is_train[dataset.train_idx.numpy()] = 1
    weights = np.stack([is_train, np.diff(indptr)], axis=1).reshape(-1)
    adjacency = pymetis.CSRAdjacency(sym.indptr.numpy(), sym.indices.numpy().astype(np.int64))
    result = pymetis.part_graph(num_parts, adjacency=adjacency, vweights=weights)
    parts = np.asarray(result.vertex_part, dtype=np.int32)
    empty = np.setdiff1d(np.arange(num_parts), parts)
    if empty.size:
        raise ValueError(f"METIS left part(s) {empty.tolist()} empty: use fewer parts than "
                         f"{num_parts} for this {n}-node graph")
    return parts


def edge_cut(dataset: Dataset, parts: np.ndarray) -> int:
    """Directed edges whose two ends lie in different parts."""
    indptr = dataset.graph.indptr.numpy()
    dst_part = np.repeat(parts, np.diff(indptr))
    return int(np.count_nonzero(parts[dataset.graph.indices.numpy()] != dst_part))

