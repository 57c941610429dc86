"""Layer-wise full-neighbour inference: each layer computed once for every node that needs it.

Sampled evaluation (a mini-batch of seeds at a time, blocks sampled with the training fanouts)
touches about seeds x (f_L + f_L f_(L-1) + ...) edges and recomputes a node's hidden state once
for every batch that reaches it: over ogbn-products' 2.2M test ids, several training epochs of
work. Layer-wise inference, as DGL's and PyG's own examples evaluate, computes layer l's output
for exactly the nodes layer l+1 needs (the targets, then each set grown by its in-neighbours),
each node once, over all its in-neighbours: at most num_layers x num_edges edges, whatever the
number of targets, and exact (no sampling). Memory: one [needed nodes, hidden] tensor per layer
(two alive at a time: the one read and the one written), and per chunk of destinations its
edges.

Under a torch.distributed group each rank computes a contiguous share of every layer's nodes
and the shares are all-gathered before the next layer; the last layer's share stays local (the
caller sums the correct counts), so the result equals one process's.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator

import torch
import torch.distributed as dist
from torch import nn

from gnnrepro.checks import check_node_ids
from gnnrepro.features.store import FeatureStore, InMemoryFeatureStore
from gnnrepro.graph import CSCGraph
from gnnrepro.interop.layout import exposes_layers
from gnnrepro.models.graphsage import GraphSAGE
from gnnrepro.progress import Progress

__all__ = ["CHUNK_NODES", "SAMPLED_EDGE_WEIGHT", "checked_inputs", "layerwise_cost",
           "layerwise_predict", "sampled_cost", "supports_layerwise"]

#: Destinations per chunk: bounds the per-chunk edge and output tensors (a few MB each).
CHUNK_NODES = 16384
#: What one sampled evaluation edge costs against one layer-wise edge read: a sampled batch
#: also samples and relabels, gathers its input rows and recomputes nodes that batches share.
#: The ratio of the two measured costs per edge (benchmarks/NOTES.md, the evaluation
#: methods at products-sim 1.0).
SAMPLED_EDGE_WEIGHT = 2.4


def supports_layerwise(model: nn.Module) -> bool:
    """True for models layer-wise inference knows how to run: GraphSAGE itself (here; a
    subclass may compute something else in its forward) and any model that exposes its layers
    by a `forward_layer` method (gnnrepro.training.layer_by_layer)."""
    return type(model) is GraphSAGE or exposes_layers(model)


def layerwise_cost(graph: CSCGraph, num_layers: int) -> float:
    """Edges layer-wise inference reads, at most: every edge once per layer."""
    return float(num_layers) * graph.num_edges


def sampled_cost(graph: CSCGraph, fanouts: list[int], num_ids: int) -> float:
    """Edges sampled evaluation of `num_ids` seeds samples, about (per seed f_L + f_L f_(L-1)
    + ..., each fanout capped at the mean degree; -1, all neighbours, is the mean degree), in
    layer-wise edge reads (x SAMPLED_EDGE_WEIGHT)."""
    mean_degree = graph.num_edges / max(graph.num_nodes, 1)
    per_seed, reach = 0.0, 1.0
    for fanout in reversed(fanouts):
        reach *= mean_degree if fanout < 0 else min(float(fanout), mean_degree)
        per_seed += reach
    return SAMPLED_EDGE_WEIGHT * num_ids * per_seed


def _neighbours(graph: CSCGraph, nodes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(offsets int64 [len(nodes) + 1], in-neighbours int64, node by node) of sorted `nodes`."""
    indptr = graph.indptr
    first, last = int(nodes[0]), int(nodes[-1])
    if last - first + 1 == nodes.numel():  # a range: a slice of indices, no gather
        lo, hi = int(indptr[first]), int(indptr[last + 1])
        return indptr[first:last + 2] - lo, graph.indices[lo:hi].long()
    starts = indptr[nodes]
    counts = indptr[nodes + 1] - starts
    offsets = torch.zeros(nodes.numel() + 1, dtype=torch.int64, device=nodes.device)
    torch.cumsum(counts, 0, out=offsets[1:])
    total = int(offsets[-1])
    edges = torch.repeat_interleave(starts - offsets[:-1], counts, output_size=total)
    edges += torch.arange(total, device=nodes.device)
    return offsets, graph.indices[edges].long()


def _chunks(nodes: torch.Tensor, size: int = CHUNK_NODES) -> list[torch.Tensor]:
    return list(torch.split(nodes, size)) if nodes.numel() else []


def needed_nodes(graph: CSCGraph, targets: torch.Tensor, num_layers: int) -> list[torch.Tensor]:
    """Sorted node ids whose output of layer l is needed, for l = 0 .. num_layers - 1: the
    targets for the last layer, each earlier set the next one plus its in-neighbours."""
    n = graph.num_nodes
    sets = [torch.unique(targets.to(graph.indptr.device))]
    for _ in range(num_layers - 1):
        current = sets[0]
        if current.numel() == n:  # every node already: so are all earlier sets
            sets.insert(0, current)
            continue
        mask = torch.zeros(n, dtype=torch.bool, device=current.device)
        mask[current] = True
        for chunk in _chunks(current):
            mask[_neighbours(graph, chunk)[1]] = True
        sets.insert(0, mask.nonzero().squeeze(1))
    return sets


def _device_of(table: torch.Tensor | FeatureStore) -> torch.device:
    """Where a table's rows live (a store's: host memory)."""
    return torch.device("cpu") if isinstance(table, FeatureStore) else table.device


def _rows(table: torch.Tensor | FeatureStore, ids: torch.Tensor) -> torch.Tensor:
    """Rows `ids` of a tensor or (gathered from) a store."""
    return table.gather(ids) if isinstance(table, FeatureStore) else table[ids]


def _row_chunks(table: torch.Tensor | FeatureStore) -> list[torch.Tensor] | Iterator[torch.Tensor]:
    """The table's rows in order, CHUNK_NODES at a time."""
    if not isinstance(table, FeatureStore):
        return torch.split(table, CHUNK_NODES)
    return (table.gather(torch.arange(lo, min(lo + CHUNK_NODES, table.num_nodes)))
            for lo in range(0, table.num_nodes, CHUNK_NODES))


def _neighbour_mean(table: torch.Tensor | FeatureStore, neighbours: torch.Tensor,
                    offsets: torch.Tensor) -> torch.Tensor:
    """Mean of the rows `neighbours` per destination (CSR `offsets`); from a store, each
    distinct neighbour's row is gathered once."""
    if isinstance(table, FeatureStore):
        neighbours, inverse = torch.unique(neighbours, return_inverse=True)
        table, neighbours = table.gather(neighbours), inverse
    return nn.functional.embedding_bag(neighbours, table, offsets, mode="mean",
                                       include_last_offset=True)


def _share(nodes: torch.Tensor, rank: int, world_size: int) -> tuple[int, int]:
    """[lo, hi) of `nodes` that `rank` computes: contiguous, sizes differing by at most one."""
    n = nodes.numel()
    return rank * n // world_size, (rank + 1) * n // world_size


def _all_gather_rows(part: torch.Tensor, total: int, world_size: int) -> torch.Tensor:
    """Every rank's `part` (rows lo..hi of a [total, d] tensor by _share), concatenated."""
    size = -(-total // world_size) + 1
    padded = part.new_zeros((size, part.shape[1]))
    padded[:part.shape[0]] = part
    pieces = [torch.empty_like(padded) for _ in range(world_size)]
    dist.all_gather(pieces, padded)
    bounds = [(r * total // world_size, (r + 1) * total // world_size) for r in range(world_size)]
    return torch.cat([p[:hi - lo] for p, (lo, hi) in zip(pieces, bounds)])


def checked_inputs(graph: CSCGraph, features: torch.Tensor | FeatureStore, targets: torch.Tensor
                   ) -> tuple[torch.Tensor | FeatureStore, torch.Tensor]:
    """(the table to read rows from, the targets on the graph's device), or a ValueError /
    TypeError naming `features` or `targets`. An in-memory store is read as its tensor."""
    if isinstance(features, InMemoryFeatureStore):
        features = features.features
    shape = ((features.num_nodes, features.dim) if isinstance(features, FeatureStore)
             else tuple(features.shape))
    if len(shape) != 2 or shape[0] != graph.num_nodes:
        raise ValueError(f"features must have one row per node ({graph.num_nodes}), got shape "
                         f"{shape}")
    if isinstance(targets, torch.Tensor):  # on any device: the graph's is where they are used
        targets = targets.to(graph.indptr.device)
    return features, check_node_ids(targets, graph.num_nodes, "targets", graph.indptr.device)


@torch.no_grad()
def layerwise_predict(model: GraphSAGE, graph: CSCGraph, features: torch.Tensor | FeatureStore,
                      targets: torch.Tensor, device: torch.device, rank: int = 0,
                      world_size: int = 1,
                      heartbeat: Callable[[], None] | None = None
                      ) -> tuple[torch.Tensor, torch.Tensor]:
    """(this rank's share of the sorted unique `targets`, the model's logits for them), with
    every layer aggregating over all in-neighbours, in eval mode (no dropout).

    `features` is the [num_nodes, F] table (in memory or memory-mapped), read where it lives:
    the first layer's neighbour means are taken there and moved to `device`; or a
    FeatureStore, whose rows are gathered a chunk at a time (a disk store reads each needed
    row once per use, through its hot set and cache). Hidden states live on `device`.
    `targets` may be on any device (they are taken to the graph's: on a GPU sampler's graph
    with the split's ids on the CPU, an H100 run failed here once). `heartbeat` is called
    after every chunk."""
    if type(model) is not GraphSAGE:
        raise TypeError(f"model must be a GraphSAGE for layer-wise inference here (a model "
                        f"with forward_layer: layer_by_layer_predict), got "
                        f"{type(model).__name__}")
    features, targets = checked_inputs(graph, features, targets)
    was_training = model.training
    model.eval()
    try:
        return _predict(model, graph, features, targets, device, rank, world_size, heartbeat)
    finally:
        model.train(was_training)


def _predict(model: GraphSAGE, graph: CSCGraph, features: torch.Tensor | FeatureStore,
             targets: torch.Tensor,
             device: torch.device, rank: int, world_size: int,
             heartbeat: Callable[[], None] | None) -> tuple[torch.Tensor, torch.Tensor]:
    sets = needed_nodes(graph, targets, model.num_layers)
    table, position = features, None  # rows by global id for layer 0
    total_chunks = sum(-(-(hi - lo) // CHUNK_NODES) for lo, hi in
                       (_share(s, rank, world_size) for s in sets))
    with Progress("evaluate (layer-wise)", total_chunks, "chunks") as bar:
        for layer_index, (conv, nodes) in enumerate(zip(model.layers, sets)):
            last = layer_index == model.num_layers - 1
            lo, hi = _share(nodes, rank, world_size)
            where = _device_of(table)
            neigh_table = table
            if conv.projects_first:  # W_neigh first, once per row, where the rows live
                neigh_table = torch.cat([conv.fc_neigh(rows.to(device)).to(where)
                                         for rows in _row_chunks(table)])
            mine = torch.empty((hi - lo, conv.fc_self.out_features), device=device,
                               dtype=conv.fc_self.weight.dtype)
            row = 0
            for chunk in _chunks(nodes[lo:hi]):
                offsets, neighbours = _neighbours(graph, chunk)
                if position is not None:
                    neighbours, chunk_rows = position[neighbours], position[chunk]
                else:
                    chunk_rows = chunk
                mean = _neighbour_mean(neigh_table, neighbours.to(where), offsets.to(where))
                h = conv.combine(_rows(table, chunk_rows.to(where)).to(device), mean.to(device))
                mine[row:row + chunk.numel()] = h if last else model.relu_dropout(h)
                row += chunk.numel()
                bar.update(note=f"layer {layer_index + 1}/{model.num_layers}")
                if heartbeat is not None:
                    heartbeat()
            if last:
                return nodes[lo:hi], mine
            del neigh_table, table  # the previous layer's rows: not needed any more
            table = mine if world_size == 1 else _all_gather_rows(mine, nodes.numel(),
                                                                   world_size)
            position = torch.full((graph.num_nodes,), -1, dtype=torch.int64,
                                  device=nodes.device)
            position[nodes] = torch.arange(nodes.numel(), device=nodes.device)
    raise AssertionError("unreachable: a GraphSAGE has at least one layer")
