"""A MiniBatch as PyG's NeighborLoader hands one over: `x`, `edge_index` (or `adj_t`),
`batch_size`, `n_id`, and `e_id` (the edges' ids, in `edge_index`'s order) where the blocks
carry their edge ids.

Our blocks number every layer's nodes as a prefix of the input nodes: the seeds, then each
hop's new nodes in order of first appearance, which is PyG's hop order (`n_id`, so
`x[:batch_size]` are the seeds' rows). NeighborLoader samples each node's neighbours once, at
the hop that first reaches it; our blocks sample a layer's destinations per layer. So
`edge_index` takes each node's edges from the block in which it is first a destination: the
seeds' from the last block, the first hop's new nodes' from the one before, and so on. Those
are contiguous ranges of each block's CSC, so sources are slices of its `indices`, copied once
into the [2, E] result with the targets (written from the ranges' degrees). Row 0 holds
sources, row 1 targets (PyG's source_to_target flow), int64, on the batch's device.

`adj_t` is the same edges as PyG's transposed sparse adjacency (what NeighborLoader hands over
for a Data whose graph is an `adj_t`, e.g. after `T.ToSparseTensor()`): row = target, column =
source, so each block's CSC range is already a range of its CSR rows. It is a torch.sparse CSR
tensor (PyG's layers run it by SpMM as they run torch_sparse's SparseTensor; torch_sparse is
not needed): the rows' pointers are the blocks' `indptr` ranges, shifted, and the columns
their `indices` ranges, concatenated; then each row's columns are sorted, as CSR requires
(cuSPARSE reads rows as sorted), by one sort of (row, column) keys.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from importlib.util import find_spec
from typing import Any

import warnings

import torch

from gnnrepro.interop.view import BatchView
from gnnrepro.sampling.block import Block, MiniBatch

__all__ = ["PyGBatch", "pyg_adj_t", "pyg_batches", "pyg_edge_ids", "pyg_edge_index", "to_pyg",
           "to_pyg_sparse"]


@dataclass
class PyGBatch:
    """NeighborLoader's batch attributes, where torch_geometric is not installed."""

    x: torch.Tensor | None
    y: torch.Tensor | None
    batch_size: int
    n_id: torch.Tensor
    num_nodes: int
    edge_index: torch.Tensor | None = None
    adj_t: torch.Tensor | None = None
    e_id: torch.Tensor | None = None
    batch: torch.Tensor | None = None


def _first_destination_ranges(blocks: list[Block]) -> list[tuple[Block, int, int]]:
    """(block, lo, hi) for each block whose destinations lo..hi are first reached there, the
    seeds' layer first: the targets whose sampled in-edges PyG's batch holds, in row order."""
    if not blocks:
        raise ValueError("blocks must not be empty")
    ranges, reached = [], 0
    for block in reversed(blocks):
        if block.num_dst > reached:
            ranges.append((block, reached, block.num_dst))
        reached = max(reached, block.num_dst)
    return ranges


def pyg_edge_index(blocks: list[Block]) -> torch.Tensor:
    """[2, E] int64 edges (source, target) in the input nodes' numbering: every node's
    sampled in-edges once, from the block in which it is first a destination."""
    parts = []
    for block, lo, hi in _first_destination_ranges(blocks):
        start, end = int(block.indptr[lo]), int(block.indptr[hi])
        degrees = block.indptr[lo + 1:hi + 1] - block.indptr[lo:hi]
        targets = torch.repeat_interleave(
            torch.arange(lo, hi, device=block.indptr.device), degrees, output_size=end - start)
        parts.append(torch.stack([block.indices[start:end], targets]))
    if not parts:
        return torch.empty(2, 0, dtype=torch.int64, device=blocks[0].indices.device)
    return torch.cat(parts, dim=1)


def pyg_edge_ids(blocks: list[Block]) -> torch.Tensor | None:
    """The graph's ids of pyg_edge_index's edges, in its column order (PyG's `e_id`); None
    unless every block carries its edge ids (FusedSampler(edge_ids=True))."""
    if not blocks or any(block.edge_ids is None for block in blocks):
        return None
    parts = [block.edge_ids[int(block.indptr[lo]):int(block.indptr[hi])]
             for block, lo, hi in _first_destination_ranges(blocks)]
    return torch.cat(parts) if parts else blocks[0].edge_ids[:0]


def pyg_adj_t(blocks: list[Block], num_nodes: int,
              dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The edges of pyg_edge_index as PyG's `adj_t`: a [num_nodes, num_nodes] torch.sparse CSR
    tensor, row = target and column = source, values ones of `dtype` (the features'). Each
    row's columns are sorted, as CSR's invariants (and cuSPARSE) require; our blocks list a
    destination's sources in sampling order, so the rows' keys are sorted once, O(E log E)."""
    ranges = _first_destination_ranges(blocks)
    reached = ranges[-1][2] if ranges else 0
    if num_nodes < reached:
        raise ValueError(f"num_nodes ({num_nodes}) is less than the targets' count ({reached})")
    device = blocks[0].indptr.device
    pointers = [torch.zeros(1, dtype=torch.int64, device=device)]
    columns = [torch.empty(0, dtype=torch.int64, device=device)]
    edges = 0
    for block, lo, hi in ranges:
        start, end = int(block.indptr[lo]), int(block.indptr[hi])
        pointers.append(block.indptr[lo + 1:hi + 1] - (start - edges))
        columns.append(block.indices[start:end])
        edges += end - start
    pointers.append(torch.full((num_nodes - reached,), edges, dtype=torch.int64, device=device))
    crow, col = torch.cat(pointers), torch.cat(columns)
    rows = torch.repeat_interleave(torch.arange(num_nodes, device=device), crow.diff(),
                                   output_size=edges)
    col = torch.sort(rows * max(num_nodes, 1) + col).values - rows * max(num_nodes, 1)
    with warnings.catch_warnings():  # torch's "sparse CSR support is in beta" notice
        warnings.simplefilter("ignore", UserWarning)
        return torch.sparse_csr_tensor(
            crow, col, torch.ones(edges, dtype=dtype, device=device),
            size=(num_nodes, num_nodes), check_invariants=False)


def to_pyg(mb: MiniBatch, sparse: bool = False) -> Any:
    """`mb` as NeighborLoader's batch: a torch_geometric Data (x, edge_index, y, batch_size,
    n_id; e_id where the blocks carry edge ids, `batch` where each seed was sampled on its own)
    where torch_geometric is installed, else a PyGBatch with the same attributes. y holds
    the seeds' labels (y[:batch_size], as PyG code reads them). `sparse=True` gives `adj_t`
    (pyg_adj_t) in place of `edge_index`, as NeighborLoader does for a graph given as adj_t."""
    if not isinstance(mb, MiniBatch):
        raise TypeError(f"mb must be a gnnrepro MiniBatch (what a Loader yields), got "
                        f"{type(mb).__name__}")
    if not isinstance(sparse, bool):
        raise TypeError(f"sparse must be a bool, got {type(sparse).__name__}")
    num_nodes = mb.input_nodes.numel()
    graph = ({"adj_t": pyg_adj_t(mb.blocks, num_nodes,
                                 mb.x.dtype if mb.x is not None else torch.float32)}
             if sparse else {"edge_index": pyg_edge_index(mb.blocks)})
    e_id = None if sparse else pyg_edge_ids(mb.blocks)
    if e_id is not None:  # NeighborLoader's e_id, where the blocks carry their edges' ids
        graph["e_id"] = e_id
    fields = {"x": mb.x, "y": mb.y, "batch_size": mb.seeds.numel(), "n_id": mb.input_nodes,
              "num_nodes": num_nodes, **graph}
    seed_index = getattr(mb.blocks[0], "seed_index", None) if mb.blocks else None
    if seed_index is not None:  # each seed on its own: PyG's disjoint `batch`
        fields["batch"] = seed_index
    if find_spec("torch_geometric") is None:
        return PyGBatch(**fields)
    from torch_geometric.data import Data
    return Data(**fields)


def pyg_batches(loader: Iterable[MiniBatch], sparse: bool = False) -> BatchView:
    """`loader` as PyG's NeighborLoader: each iteration an epoch of its batches, `len()` their
    number; `sparse=True`: each with `adj_t` in place of `edge_index` (to_pyg)."""
    if not isinstance(sparse, bool):
        raise TypeError(f"sparse must be a bool, got {type(sparse).__name__}")
    return BatchView(loader, to_pyg_sparse if sparse else to_pyg)


def to_pyg_sparse(mb: MiniBatch) -> Any:
    """to_pyg(mb, sparse=True): the batch with `adj_t`."""
    return to_pyg(mb, sparse=True)
