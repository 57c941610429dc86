"""A MiniBatch as PyG's NeighborLoader hands one over: `x`, `edge_index`, `batch_size`, `n_id`.

Our blocks number every layer's nodes as a prefix of the input nodes: the seeds, then each
hop's new nodes in order of first appearance, which is PyG's hop order (`n_id`, so
`x[:batch_size]` are the seeds' rows). NeighborLoader samples each node's neighbours once, at
the hop that first reaches it; our blocks sample a layer's destinations per layer. So
`edge_index` takes each node's edges from the block in which it is first a destination: the
seeds' from the last block, the first hop's new nodes' from the one before, and so on. Those
are contiguous ranges of each block's CSC, so sources are slices of its `indices` (no copy);
only the targets are materialised. Row 0 holds sources, row 1 targets (PyG's
source_to_target flow), int64, on the batch's device.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from importlib.util import find_spec
from typing import Any

import torch

from gnnrepro.interop.view import BatchView
from gnnrepro.sampling.block import Block, MiniBatch

__all__ = ["PyGBatch", "pyg_batches", "pyg_edge_index", "to_pyg"]


@dataclass
class PyGBatch:
    """NeighborLoader's batch attributes, where torch_geometric is not installed."""

    x: torch.Tensor | None
    edge_index: torch.Tensor
    y: torch.Tensor | None
    batch_size: int
    n_id: torch.Tensor
    num_nodes: int


def pyg_edge_index(blocks: list[Block]) -> torch.Tensor:
    """[2, E] int64 edges (source, target) in the input nodes' numbering: every node's
    sampled in-edges once, from the block in which it is first a destination."""
    if not blocks:
        raise ValueError("blocks must not be empty")
    parts, reached = [], 0
    for block in reversed(blocks):  # the seeds' layer first
        lo, hi = reached, block.num_dst
        if hi > lo:
            start, end = int(block.indptr[lo]), int(block.indptr[hi])
            degrees = block.indptr[lo + 1:hi + 1] - block.indptr[lo:hi]
            targets = torch.repeat_interleave(
                torch.arange(lo, hi, device=block.indptr.device), degrees,
                output_size=end - start)
            parts.append(torch.stack([block.indices[start:end], targets]))
        reached = max(reached, hi)
    if not parts:
        return torch.empty(2, 0, dtype=torch.int64, device=blocks[0].indices.device)
    return torch.cat(parts, dim=1)


def to_pyg(mb: MiniBatch) -> Any:
    """`mb` as NeighborLoader's batch: a torch_geometric Data (x, edge_index, y, batch_size,
    n_id) where torch_geometric is installed, else a PyGBatch with the same attributes. y holds
    the seeds' labels (y[:batch_size], as PyG code reads them)."""
    if not isinstance(mb, MiniBatch):
        raise TypeError(f"mb must be a gnnrepro MiniBatch (what a Loader yields), got "
                        f"{type(mb).__name__}")
    fields = {"x": mb.x, "edge_index": pyg_edge_index(mb.blocks), "y": mb.y,
              "batch_size": mb.seeds.numel(), "n_id": mb.input_nodes,
              "num_nodes": mb.input_nodes.numel()}
    if find_spec("torch_geometric") is None:
        return PyGBatch(**fields)
    from torch_geometric.data import Data
    return Data(**fields)


def pyg_batches(loader: Iterable[MiniBatch]) -> BatchView:
    """`loader` as PyG's NeighborLoader: each iteration an epoch of its batches, `len()` their
    number."""
    return BatchView(loader, to_pyg)
