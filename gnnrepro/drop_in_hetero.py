"""PyG's NeighborLoader on a HeteroData, as MLPerf's R-GAT reference and RelBench call it.

`NeighborLoader(data, num_neighbors, input_nodes=("paper", ids), ...)` with a HeteroData: the
typed graph (TypedGraph.from_pyg: edge ids are positions in each edge_index), features per node
type (`data[t].x`), the target type's labels (`data[t].y`), sampled by our typed fused op
through the typed Loader, handed over as the heterogeneous NeighborLoader's batches
(interop.to_pyg_hetero: x, edge_index, n_id, e_id, num_sampled_nodes/edges per type and
relation, batch_size and y of the target type, and `batch` per type when each seed is sampled on
its own). Node types whose features differ in width or dtype from the most rows' have their
rows gathered as the batch is handed over (the Loader's staging slots hold one width).

Temporal sampling takes PyG's `time_attr` naming node times (`data[t][time_attr]`, RelBench's:
a neighbour is a candidate while its own time is at most its seed's; relations from a type
without times are untimed) or edge times (`data[rel][time_attr]`), `input_time` per input node
(which may then repeat), `temporal_strategy` and `disjoint`; `weight_attr` names per-relation
edge weights. LinkNeighborLoader on a HeteroData (drop_in_link) shares these parts.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from gnnrepro.datasets.typed_dataset import TypedDataset
from gnnrepro.interop.typed_views import to_pyg_hetero
from gnnrepro.sampling.block import MiniBatch
from gnnrepro.sampling.temporal import check_time_tensor
from gnnrepro.typed_graph import TypedGraph

__all__ = ["hetero_dataset", "hetero_fanouts", "hetero_temporal", "hetero_times",
           "hetero_view", "hetero_weights", "is_hetero_data"]

Relation = tuple[str, str, str]


def is_hetero_data(data: Any) -> bool:
    """Whether `data` is a PyG HeteroData (node_types and edge_types, as PyG's)."""
    return hasattr(data, "node_types") and hasattr(data, "edge_types")


def _input_nodes(data: Any, input_nodes: Any) -> tuple[str, torch.Tensor]:
    """PyG's heterogeneous `input_nodes`: a node type, or (node type, ids, a bool mask or
    None: all of them)."""
    if isinstance(input_nodes, str):
        ntype, given = input_nodes, None
    elif isinstance(input_nodes, (tuple, list)) and len(input_nodes) == 2:
        ntype, given = input_nodes
    else:
        raise TypeError("input_nodes of a HeteroData must be a node type or (node type, ids "
                        f"or mask), as in PyG, got {type(input_nodes).__name__}")
    if ntype not in data.node_types:
        raise ValueError(f"input_nodes: {ntype!r} is not a node type of data "
                         f"({sorted(data.node_types)})")
    n = int(data[ntype].num_nodes)
    if given is None:
        return ntype, torch.arange(n)
    ids = torch.as_tensor(given)
    if ids.dtype == torch.bool:
        if ids.shape != (n,):
            raise ValueError(f"input_nodes mask of {ntype!r} has shape {tuple(ids.shape)}, "
                             f"not ({n},)")
        return ntype, torch.nonzero(ids).flatten()
    if ids.dtype not in (torch.int32, torch.int64) or ids.dim() != 1:
        raise TypeError(f"input_nodes ids of {ntype!r} must be 1-D integers or a bool mask, "
                        f"got {ids.dtype} {tuple(ids.shape)}")
    return ntype, ids.to(torch.int64).cpu()


def hetero_dataset(data: Any, input_nodes: Any) -> tuple[TypedDataset, dict[str, torch.Tensor]]:
    """`data` as a TypedDataset whose training ids are `input_nodes` (of their type), and the
    features it leaves out: the Loader's staging slots hold rows of one width and dtype, so
    the dataset keeps the featured types of the width and dtype with the most rows, and the
    others' rows are gathered as a batch is handed over (hetero_view)."""
    target, ids = _input_nodes(data, input_nodes)
    graph = TypedGraph.from_pyg(data)
    featured = {}
    for t in data.node_types:
        x = getattr(data[t], "x", None)
        if isinstance(x, torch.Tensor):
            featured[t] = x.cpu() if x.dtype in (torch.float32, torch.float16) else x.cpu().float()
    rows: dict[tuple, int] = {}
    for x in featured.values():
        rows[(x.shape[1], x.dtype)] = rows.get((x.shape[1], x.dtype), 0) + x.shape[0]
    kept = max(rows, key=rows.get) if rows else None
    features = {t: x for t, x in featured.items() if (x.shape[1], x.dtype) == kept}
    others = {t: x for t, x in featured.items() if t not in features}
    n = graph.num_nodes[target]
    y = getattr(data[target], "y", None)
    labels = (torch.full((n,), -1, dtype=torch.int64) if y is None
              else torch.as_tensor(y).cpu().reshape(n, -1)[:, 0].to(torch.int64))
    empty = torch.empty(0, dtype=torch.int64)
    num_classes = int(labels.max()) + 1 if labels.numel() and int(labels.max()) >= 0 else 0
    return TypedDataset(graph, features, labels, target, ids, empty, empty, num_classes,
                        "pyg-hetero-data", {"source": "pyg-hetero-data"}), others


def hetero_view(others: dict[str, torch.Tensor]) -> Callable[[MiniBatch], Any]:
    """The batch view: the heterogeneous NeighborLoader's batch (to_pyg_hetero), with the rows
    of the types the dataset left out (hetero_dataset) gathered onto the batch's device."""
    def view(mb: MiniBatch) -> Any:
        out = to_pyg_hetero(mb)
        for t, x in others.items():
            rows = x[mb.blocks[0].src_nodes[t].cpu()]
            out[t].x = rows.to(mb.blocks[0].src_nodes[t].device, non_blocking=True)
        return out
    return view


def hetero_fanouts(num_neighbors: Any, graph: TypedGraph) -> list:
    """PyG's num_neighbors (a list from the seeds outward, or {edge type: list}) as our
    fanouts: per GNN layer, input layer first, one int or {relation: int}."""
    if isinstance(num_neighbors, Mapping):
        lengths = {len(v) for v in num_neighbors.values()}
        if len(lengths) != 1:
            raise ValueError("num_neighbors: every edge type needs as many hops, got lengths "
                             f"{sorted(lengths)}")
        hops = lengths.pop()
        layers = [{graph.relation(tuple(rel)): int(v[h]) for rel, v in num_neighbors.items()}
                  for h in range(hops)]
        return list(reversed(layers))
    if isinstance(num_neighbors, (str, bytes)) or not isinstance(num_neighbors, Sequence):
        raise TypeError("num_neighbors must be a list of ints or {edge type: list}, got "
                        f"{type(num_neighbors).__name__}")
    return list(reversed(list(num_neighbors)))


def hetero_weights(data: Any, weight_attr: str | None) -> dict[Relation, Any] | None:
    """{relation: data[relation][weight_attr]} for the relations that hold it (the others
    sampled uniformly); None where no weight_attr."""
    if weight_attr is None:
        return None
    out = {tuple(rel): data[rel][weight_attr] for rel in data.edge_types
           if getattr(data[rel], weight_attr, None) is not None}
    if not out:
        raise ValueError(f"weight_attr={weight_attr!r}: no edge type of data has it")
    return out


def hetero_times(data: Any, graph: TypedGraph, time_attr: str
                 ) -> tuple[dict[Relation, torch.Tensor], dict[str, torch.Tensor]]:
    """PyG's `time_attr` on a HeteroData: per relation its edge times by edge id (edge ids are
    positions in edge_index), from `data[rel][time_attr]` or else its source type's node
    times (`data[t][time_attr]`: a neighbour is a candidate while its own time is at most its
    seed's); relations with neither are untimed. Also the node times per type."""
    node_time = {t: check_time_tensor(data[t][time_attr], f"data[{t!r}].{time_attr} "
                                      "(time_attr)", graph.num_nodes[t])
                 for t in data.node_types if getattr(data[t], time_attr, None) is not None}
    times = {}
    for rel in data.edge_types:
        rel = tuple(rel)
        edge_time = getattr(data[rel], time_attr, None)
        if edge_time is not None:
            times[rel] = check_time_tensor(edge_time, f"data[{rel!r}].{time_attr} (time_attr)",
                                           graph.num_edges[rel])
        elif rel[0] in node_time:
            times[rel] = node_time[rel[0]][data[rel].edge_index[0].cpu()]
    if not times:
        raise ValueError(f"time_attr={time_attr!r}: no node or edge type of data has it")
    return times, node_time


def hetero_temporal(data: Any, dataset: TypedDataset, time_attr: str | None, input_time: Any,
                    temporal_strategy: str, disjoint: bool
                    ) -> tuple[dict[str, Any], torch.Tensor | None]:
    """FusedSampler's temporal arguments (and edge_ids: PyG's batches carry e_id) and each input
    node's time (as drop_in's homogeneous _pyg_temporal): hetero_times' edge times, a seed's
    time its input_time or its own node time."""
    if time_attr is None:
        if input_time is not None:
            raise ValueError("input_time needs time_attr (data's node or edge times), as in PyG")
        if temporal_strategy != "uniform":
            raise ValueError("temporal_strategy needs time_attr (data's node or edge times)")
        return {"disjoint": disjoint, "edge_ids": True}, None  # PyG's batches carry e_id
    times, node_time = hetero_times(data, dataset.graph, time_attr)
    target, ids = dataset.target, dataset.train_idx
    if input_time is None and target not in node_time:
        raise ValueError(f"input_time is needed: the input nodes' type {target!r} has no "
                         f"{time_attr!r} to take their times from")
    seed_time = (node_time[target][ids] if input_time is None
                 else check_time_tensor(input_time, "input_time", ids.numel()))
    return ({"times": times, "temporal_strategy": temporal_strategy, "edge_ids": True},
            seed_time)
