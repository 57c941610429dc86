"""A DGL graph or a PyG Data object as a gnnrepro Dataset, so a peer's user keeps their data.

Both keep the graph's edges as they are (direction, multi-edges, self loops): a node's
neighbours are its in-neighbours (the sources of the edges into it), as DGL's and PyG's
samplers read them. Features become float32 and labels int64 (a [N, 1] label column, as OGB's,
is flattened); the splits are the given ids, or the `train_mask` / `val_mask` / `test_mask` the
object carries. Nothing is copied that is already in the right dtype and layout, except the
graph's CSC, which is built once.

Per-edge sampling weights (DGL's NeighborSampler `prob`/`mask` edata, PyG's `weight_attr`)
are given by the peer's edge id: DGL's edge id, PyG's position in `edge_index`. The graph then
keeps those ids (`edge_ids=True`, CSCGraph.edge_ids: 8 bytes an edge), by which the sampler
reads the weights in place of CSC positions (gnnrepro.sampling.weights).
"""
from __future__ import annotations

from typing import Any

import torch

from gnnrepro.datasets.dataset import Dataset
from gnnrepro.graph import CSCGraph
from gnnrepro.sampling.temporal import check_time_tensor
from gnnrepro.sampling.weights import check_weights

__all__ = ["dgl_csc", "dgl_edge_weights", "from_dgl", "from_pyg", "pyg_edge_times",
           "pyg_edge_weights", "pyg_graph", "pyg_graph_is_adj_t", "pyg_time_attr"]

SPLITS = ("train", "val", "test")


def _split(name: str, given: Any, masks: dict[str, Any], num_nodes: int) -> torch.Tensor:
    """Split `name`'s ids: `given` (ids or a bool mask), else its mask, else none."""
    value = masks.get(name) if given is None else given
    if value is None:
        if name == "train":
            raise ValueError("train_idx: give the training ids (or a train_mask on the graph)")
        return torch.empty(0, dtype=torch.int64)
    value = torch.as_tensor(value)
    if value.dtype == torch.bool:
        if value.shape != (num_nodes,):
            raise ValueError(f"{name} mask has shape {tuple(value.shape)}, not ({num_nodes},)")
        value = torch.nonzero(value).flatten()
    if value.dtype not in (torch.int32, torch.int64) or value.dim() != 1:
        raise TypeError(f"{name}_idx must be 1-D integer node ids or a bool mask, got "
                        f"{value.dtype} {tuple(value.shape)}")
    return value.to(torch.int64).cpu()


def _dataset(graph: CSCGraph, features: Any, labels: Any, splits: dict[str, torch.Tensor],
             num_classes: int | None, name: str) -> Dataset:
    if features is None or labels is None:
        raise ValueError("the graph must carry node features and labels (or pass them)")
    features = torch.as_tensor(features).cpu().to(torch.float32).contiguous()
    labels = torch.as_tensor(labels).cpu()
    if labels.dim() == 2 and labels.shape[1] == 1:
        labels = labels.flatten()
    labels = labels.to(torch.int64)
    if num_classes is None:
        num_classes = int(labels.max()) + 1 if labels.numel() else 0
    return Dataset(graph=graph, features=features, labels=labels,
                   train_idx=splits["train"], val_idx=splits["val"], test_idx=splits["test"],
                   num_classes=num_classes, name=name, params={"source": name})


def dgl_csc(g: Any, *, edge_ids: bool = False) -> CSCGraph:
    """A DGLGraph's CSC over destinations (DGL's in-edges); with `edge_ids` it keeps DGL's edge
    ids (CSCGraph.edge_ids), by which its edata is indexed."""
    if not (hasattr(g, "adj_tensors") and hasattr(g, "ndata")):
        raise TypeError(f"g must be a DGLGraph, got {type(g).__name__}")
    indptr, indices, eids = g.adj_tensors("csc")
    keep = edge_ids and eids.numel() > 0  # none: DGL's ids are the CSC positions
    return CSCGraph(indptr.cpu().to(torch.int64), indices.cpu(),
                    edge_ids=eids.cpu().to(torch.int64) if keep else None)


def dgl_edge_weights(g: Any, field: str) -> torch.Tensor:
    """`g.edata[field]`, the sampling weights or mask a DGL NeighborSampler's `prob` or `mask`
    names (one per DGL edge id), checked; a ValueError/TypeError naming the field."""
    if field not in g.edata:
        raise ValueError(f"NeighborSampler(prob/mask={field!r}): g.edata has no {field!r} "
                         f"(it has {sorted(g.edata.keys())})")
    return check_weights(g.edata[field], g.num_edges(), f"g.edata[{field!r}]")


def from_dgl(g: Any, train_idx: Any = None, val_idx: Any = None, test_idx: Any = None, *,
             feat: str = "feat", label: str = "label", num_classes: int | None = None,
             edge_ids: bool = False) -> Dataset:
    """A homogeneous DGLGraph with `g.ndata[feat]` and `g.ndata[label]` as a Dataset (its CSC
    over destinations: DGL's in-edges; `edge_ids`: keeping DGL's edge ids, see dgl_csc)."""
    graph = dgl_csc(g, edge_ids=edge_ids)
    masks = {s: g.ndata.get(f"{s}_mask") for s in SPLITS}
    splits = {s: _split(s, given, masks, graph.num_nodes)
              for s, given in zip(SPLITS, (train_idx, val_idx, test_idx))}
    return _dataset(graph, g.ndata.get(feat), g.ndata.get(label), splits, num_classes,
                    "dgl-graph")


def pyg_graph_is_adj_t(data: Any) -> bool:
    """Whether from_pyg reads `data`'s graph from its `adj_t` (it has no usable edge_index):
    PyG's NeighborLoader then hands batches over with `adj_t`, and so does ours."""
    edge_index = getattr(data, "edge_index", None)
    if isinstance(edge_index, torch.Tensor) and edge_index.dim() == 2 and edge_index.shape[0] == 2:
        return False
    adj_t = getattr(data, "adj_t", None)
    return hasattr(adj_t, "csr") or (isinstance(adj_t, torch.Tensor) and adj_t.layout in
                                     (torch.sparse_coo, torch.sparse_csr))


def pyg_graph(data: Any, *, edge_ids: bool = False) -> CSCGraph:
    """The graph of a PyG Data: its `edge_index` [2, E] (source -> target), else its `adj_t`
    (torch_sparse's SparseTensor or a torch.sparse tensor, row = target, column = source: its
    CSR is our CSC as it is; a COO one keeps its repeated edges, as edge_index does). With
    `edge_ids` it keeps each edge's position in `edge_index` (or in a COO adj_t's entries)
    as its id (CSCGraph.edge_ids); a CSR adj_t's entries are in CSC order already."""
    edge_index, adj_t = getattr(data, "edge_index", None), getattr(data, "adj_t", None)
    from_adj_t = pyg_graph_is_adj_t(data)
    if not from_adj_t and not (isinstance(edge_index, torch.Tensor) and edge_index.dim() == 2
                               and edge_index.shape[0] == 2):
        raise TypeError(f"data must be a PyG Data with edge_index [2, E] or a sparse adj_t, got "
                        f"{type(data).__name__} with edge_index {type(edge_index).__name__} and "
                        f"adj_t {type(adj_t).__name__}")
    num_nodes = int(data.num_nodes)
    index_dtype = torch.int32 if num_nodes < 2**31 else torch.int64
    if from_adj_t and isinstance(adj_t, torch.Tensor) and adj_t.layout == torch.sparse_coo:
        if adj_t.shape[0] != num_nodes:
            raise ValueError(f"adj_t has {adj_t.shape[0]} rows but data has {num_nodes} nodes")
        targets, sources = adj_t._indices()
        return CSCGraph.from_edges(sources.cpu(), targets.cpu(), num_nodes,
                                   index_dtype=index_dtype, keep_edge_ids=edge_ids)
    if not from_adj_t:
        return CSCGraph.from_edges(edge_index[0].cpu(), edge_index[1].cpu(), num_nodes,
                                   index_dtype=index_dtype, keep_edge_ids=edge_ids)
    if hasattr(adj_t, "csr"):  # torch_sparse.SparseTensor
        indptr, indices, _ = adj_t.csr()
    else:
        indptr, indices = adj_t.crow_indices(), adj_t.col_indices()
    if indptr.numel() != num_nodes + 1:
        raise ValueError(f"adj_t has {indptr.numel() - 1} rows but data has {num_nodes} nodes")
    return CSCGraph(indptr.cpu().to(torch.int64), indices.cpu().to(index_dtype))


def pyg_edge_weights(data: Any, weight_attr: str, num_edges: int) -> torch.Tensor:
    """`data[weight_attr]`, PyG's NeighborLoader `weight_attr` (edge i's weight is that of
    `edge_index[:, i]`), checked for `num_edges` edges; a ValueError/TypeError naming it."""
    weights = _edge_attribute(data, weight_attr, "weight_attr")
    return check_weights(weights, num_edges, f"data.{weight_attr} (weight_attr)")


def pyg_edge_times(data: Any, time_attr: str, num_edges: int) -> torch.Tensor:
    """`data[time_attr]`, PyG's `time_attr` naming edge times (edge i's time is that of
    `edge_index[:, i]`), checked for `num_edges` integer times; a ValueError/TypeError naming
    it."""
    times = _edge_attribute(data, time_attr, "time_attr")
    return check_time_tensor(times, f"data.{time_attr} (time_attr)", num_edges)


def pyg_time_attr(data: Any, time_attr: str, graph: CSCGraph) -> tuple[torch.Tensor,
                                                                         torch.Tensor | None]:
    """PyG's `time_attr` on `graph` (pyg_graph's of `data`): its times per edge id, and the
    node times where `data[time_attr]` holds one time per node (as PyG's node-level temporal
    sampling, where a neighbour is a candidate while its own time is at most the seed's: the
    edge times are then their source's time, which the edge-time sampler filters the same
    way), else None."""
    times = _edge_attribute(data, time_attr, "time_attr")
    per_node = isinstance(times, torch.Tensor) and times.dim() == 1 and (
        times.numel() == graph.num_nodes != graph.num_edges
        or (times.numel() == graph.num_nodes == graph.num_edges
            and callable(getattr(data, "is_node_attr", None)) and data.is_node_attr(time_attr)
            and not data.is_edge_attr(time_attr)))
    if not per_node:
        return pyg_edge_times(data, time_attr, graph.num_edges), None
    node_time = check_time_tensor(times, f"data.{time_attr} (time_attr)", graph.num_nodes)
    by_position = node_time[graph.indices.long()]
    if graph.edge_ids is None:
        return by_position, node_time
    edge_time = torch.empty_like(by_position)
    edge_time[graph.edge_ids] = by_position
    return edge_time, node_time


def _edge_attribute(data: Any, attr: object, option: str) -> Any:
    """The attribute of `data` that option `option` names (TypeError/ValueError naming the
    option where it names none)."""
    if not isinstance(attr, str):
        raise TypeError(f"{option} must be the name of an edge attribute of data, got "
                        f"{type(attr).__name__}")
    value = getattr(data, attr, None)
    if value is None:
        raise ValueError(f"{option}={attr!r}: data has no attribute {attr!r}")
    return value


def from_pyg(data: Any, train_idx: Any = None, val_idx: Any = None, test_idx: Any = None, *,
             num_classes: int | None = None, edge_ids: bool = False) -> Dataset:
    """A PyG Data object (edge_index [2, E] source -> target, or adj_t; x, y) as a Dataset
    (`edge_ids`: keeping PyG's edge order, see pyg_graph)."""
    graph = pyg_graph(data, edge_ids=edge_ids)
    num_nodes = graph.num_nodes
    masks = {s: getattr(data, f"{s}_mask", None) for s in SPLITS}
    splits = {s: _split(s, given, masks, num_nodes)
              for s, given in zip(SPLITS, (train_idx, val_idx, test_idx))}
    return _dataset(graph, getattr(data, "x", None), getattr(data, "y", None), splits,
                    num_classes, "pyg-data")
