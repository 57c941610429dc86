"""Layer-wise full-neighbour inference for any model that exposes its layers.

A model with `forward_layer(i, ...)` (gnnrepro.interop.exposes_layers: what its forward does
for layer i, the activation after it included) is evaluated as our GraphSAGE is
(gnnrepro.training.layerwise): layer l's output computed once for each node layer l + 1
needs, over all its in-neighbours. Each layer's destinations are taken in chunks of at most
CHUNK_NODES nodes and CHUNK_EDGES in-edges; a chunk becomes one full-neighbour Block (its
destinations first among its sources, then their other in-neighbours, each once) in the model's
layout, and the layer reads its sources' rows of the previous layer's output (of the features
for layer 0). So a model of `dgl.nn` or `torch_geometric.nn` layers is evaluated exactly, at
most num_layers x num_edges edge reads, like DGL's and PyG's own examples' `inference`.
Memory: one [needed nodes, hidden] tensor per layer (two alive), and per chunk at most
CHUNK_EDGES + CHUNK_NODES source rows (a node with more in-edges is a chunk of its own: its
degree + 1 rows).

Under a torch.distributed group each rank computes a contiguous share of every layer's nodes,
all-gathered before the next layer, as in layerwise.py.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator

import torch
import torch.distributed as dist
from torch import nn

from gnnrepro.features.store import FeatureStore
from gnnrepro.graph import CSCGraph
from gnnrepro.interop.layout import check_layout, exposes_layers, layer_output
from gnnrepro.progress import Progress
from gnnrepro.sampling.block import Block
from gnnrepro.training.layerwise import (CHUNK_NODES, _all_gather_rows, _device_of, _neighbours,
                                         _rows, _share, checked_inputs, needed_nodes)

__all__ = ["CHUNK_EDGES", "degree_chunks", "full_neighbour_block", "layer_by_layer_predict"]

#: In-edges per chunk at most (a node with more is a chunk of its own): bounds the chunk's
#: source rows, [CHUNK_EDGES + CHUNK_NODES, d], whatever the degrees.
CHUNK_EDGES = 1 << 18


def full_neighbour_block(graph: CSCGraph, chunk: torch.Tensor) -> Block:
    """The Block of sorted unique `chunk`'s in-edges in `graph`, all of them: destinations
    `chunk` (the first sources, in order), then every other in-neighbour once (ascending)."""
    offsets, neighbours = _neighbours(graph, chunk)
    num_dst = chunk.numel()
    unique, inverse = torch.unique(torch.cat([chunk, neighbours]), return_inverse=True)
    is_dst = torch.zeros(unique.numel(), dtype=torch.bool, device=unique.device)
    is_dst[inverse[:num_dst]] = True
    order = torch.cat([inverse[:num_dst], (~is_dst).nonzero().squeeze(1)])
    local = torch.empty_like(order)
    local[order] = torch.arange(order.numel(), device=order.device)
    return Block(offsets, local[inverse[num_dst:]], unique[order], num_dst)


def _joined(parts: list[torch.Tensor], device: torch.device, dtype: torch.dtype,
            world_size: int) -> torch.Tensor:
    """The chunks' outputs in order; a rank with no nodes in this layer gets [0, d] of `dtype`
    (the model's) with the group's width d (the all-gather needs both), found by one
    all-reduce."""
    if world_size == 1:
        return torch.cat(parts) if parts else torch.empty((0, 0), device=device, dtype=dtype)
    width = torch.tensor([parts[0].shape[1] if parts else 0], device=device)
    dist.all_reduce(width, op=dist.ReduceOp.MAX)
    return (torch.cat(parts) if parts else
            torch.empty((0, int(width)), device=device, dtype=dtype))


def _edge_chunks(graph: CSCGraph, nodes: torch.Tensor) -> Iterator[torch.Tensor]:
    """Consecutive slices of sorted `nodes`, each of at most CHUNK_NODES nodes and
    CHUNK_EDGES in-edges (or a single node)."""
    if nodes.numel() == 0:
        return
    yield from degree_chunks(nodes, (graph.indptr[nodes + 1] - graph.indptr[nodes]).cpu())


def degree_chunks(nodes: torch.Tensor, degrees: torch.Tensor) -> Iterator[torch.Tensor]:
    """Consecutive slices of `nodes` (of in-degrees `degrees`), each of at most CHUNK_NODES
    nodes and CHUNK_EDGES in-edges (or a single node)."""
    ends = torch.cumsum(degrees, 0)
    start, done = 0, 0
    while start < nodes.numel():
        end = int(torch.searchsorted(ends, done + CHUNK_EDGES, right=True))
        end = min(max(end, start + 1), start + CHUNK_NODES)
        yield nodes[start:end]
        done, start = int(ends[end - 1]), end


@torch.no_grad()
def layer_by_layer_predict(model: nn.Module, graph: CSCGraph,
                           features: torch.Tensor | FeatureStore, targets: torch.Tensor,
                           device: torch.device, layout: str, num_layers: int, rank: int = 0,
                           world_size: int = 1, heartbeat: Callable[[], None] | None = None
                           ) -> tuple[torch.Tensor, torch.Tensor]:
    """(this rank's share of the sorted unique `targets`, the model's logits for them):
    `num_layers` layers of `model.forward_layer`, each over every in-neighbour, in eval mode.

    `features`: the [num_nodes, F] table or a FeatureStore (rows gathered per chunk);
    `layout`: how the model's layers take a block (gnnrepro.interop.LAYER_CALLS). Hidden
    states live on `device`. TypeError for a model without forward_layer."""
    if not exposes_layers(model):
        raise TypeError(f"model must have a forward_layer(i, ...) method for layer-by-layer "
                        f"inference, got {type(model).__name__}")
    layout = check_layout(layout)
    features, targets = checked_inputs(graph, features, targets)
    was_training = model.training
    model.eval()
    try:
        return _predict(model, graph, features, targets, device, layout, num_layers, rank,
                        world_size, heartbeat)
    finally:
        model.train(was_training)


def _predict(model: nn.Module, graph: CSCGraph, features: torch.Tensor | FeatureStore,
             targets: torch.Tensor, device: torch.device, layout: str, num_layers: int,
             rank: int, world_size: int, heartbeat: Callable[[], None] | None
             ) -> tuple[torch.Tensor, torch.Tensor]:
    sets = needed_nodes(graph, targets, num_layers)
    dtype = next((p.dtype for p in model.parameters()), torch.get_default_dtype())
    table, position = features, None  # rows by global id for layer 0
    total = sum(hi - lo for lo, hi in (_share(s, rank, world_size) for s in sets))
    with Progress("evaluate (layer-wise)", total, "nodes") as bar:
        for layer_index, nodes in enumerate(sets):
            last = layer_index == num_layers - 1
            lo, hi = _share(nodes, rank, world_size)
            where = _device_of(table)
            parts = []
            for chunk in _edge_chunks(graph, nodes[lo:hi]):
                block = full_neighbour_block(graph, chunk)
                rows = block.src_nodes if position is None else position[block.src_nodes]
                h = _rows(table, rows.to(where)).to(device)
                parts.append(layer_output(model, layer_index, block.to(device), h, layout))
                bar.update(chunk.numel(), note=f"layer {layer_index + 1}/{num_layers}")
                if heartbeat is not None:
                    heartbeat()
            mine = _joined(parts, device, dtype, world_size)
            if last:
                return nodes[lo:hi], mine
            del table, parts
            table = mine if world_size == 1 else _all_gather_rows(mine, nodes.numel(),
                                                                   world_size)
            position = torch.full((graph.num_nodes,), -1, dtype=torch.int64,
                                  device=nodes.device)
            position[nodes] = torch.arange(nodes.numel(), device=nodes.device)
    raise AssertionError("unreachable: num_layers >= 1")
