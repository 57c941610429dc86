"""Drop-in loaders with the peers' call signatures: a DGL or PyG script changes its import.

`DataLoader(g, train_idx, sampler, device=..., batch_size=..., shuffle=..., drop_last=...,
num_workers=..., use_uva=...)` takes DGL's DataLoader's arguments (a DGLGraph with ndata
"feat" and "label", the ids, and DGL's NeighborSampler or its fanouts, input layer first) and
yields DGL's `(input_nodes, output_nodes, blocks)`. `NeighborLoader(data, num_neighbors=...,
batch_size=..., input_nodes=..., shuffle=..., num_workers=...)` takes PyG's (a Data, fanouts
from the seeds outward) and yields its batches. Both sample as the peer's do with replacement
(`NeighborSampler(replace=True)`, `replace=True`) and weighted or masked (DGL's
`NeighborSampler(prob="w")` or `mask="m"`: `g.edata["w"]` by DGL edge id; PyG's
`weight_attr="w"`: `data.w` in `edge_index` order). Both are our fused sampler and pinned,
multi-worker loader underneath (gnnrepro.training.make_loader with the fused+pinned pipeline;
any TrainConfig setting passes through `settings`, `num_workers` is left to our loader's own
choice of workers); iterate them epoch after epoch, `len()` is the batches per epoch,
`close()` stops the workers.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from gnnrepro.config import TrainConfig
from gnnrepro.drop_in_link import (PEER_WORKER_ARGS, EdgePredictionSampler, LinkNeighborLoader,
                                   as_edge_prediction_sampler, dgl_sampling,
                                   edge_prediction_loader)
from gnnrepro.drop_in_hetero import (hetero_dataset, hetero_fanouts, hetero_temporal,
                                     hetero_view, hetero_weights, is_hetero_data)
from gnnrepro.interop import from_dgl, from_pyg, to_dgl, to_pyg, to_pyg_sparse
from gnnrepro.interop.convert import pyg_edge_weights, pyg_graph_is_adj_t, pyg_time_attr
from gnnrepro.interop.view import OwningBatchView
from gnnrepro.sampling.temporal import check_time_tensor
from gnnrepro.training.pipelines import make_loader

__all__ = ["DataLoader", "LinkNeighborLoader", "NeighborLoader", "as_edge_prediction_sampler"]




def _config(fanouts: Sequence[int], device: Any, batch_size: int, settings: dict) -> TrainConfig:
    """The loader's settings; a peer's argument that is no setting of ours is named (a
    TypeError), with what our loader does instead where that is the question."""
    known = {f.name for f in dataclasses.fields(TrainConfig)}
    for name in PEER_WORKER_ARGS:
        settings.pop(name, None)
    unknown = sorted(set(settings) - known)
    if unknown:
        raise TypeError(f"{', '.join(unknown)}: not settings of gnnrepro's loader (shuffle and "
                        f"drop_last are, as in the peers'; workers are chosen from the "
                        f"machine unless workers=... is given); its settings: "
                        f"{', '.join(sorted(known))}")
    device = str(device) if isinstance(device, torch.device) else device
    return TrainConfig(fanouts=tuple(fanouts), batch_size=batch_size, device=device,
                       **settings)


def DataLoader(g: Any, train_idx: Any, sampler: Any, *, device: Any = "cpu",  # noqa: N802
               batch_size: int = 1024, shuffle: bool = False, drop_last: bool = False,
               use_uva: bool = False, feat: str = "feat", label: str = "label",
               **settings: Any) -> OwningBatchView:
    """DGL's `DataLoader(g, train_idx, NeighborSampler(fanouts), device=..., batch_size=...,
    shuffle=..., drop_last=..., num_workers=..., use_uva=...)` on our loader: `sampler` is
    DGL's NeighborSampler (or MultiLayerFullNeighborSampler; its `prob` or `mask`, an edata
    field, and `replace` as DGL's) or its fanouts, input layer first; `shuffle` (False by
    default) and `drop_last` as DGL's; `use_uva` samples on the GPU from the graph in pinned
    host memory, as DGL's does (sampler_device="uva"). Yields `(input_nodes, output_nodes,
    blocks)` with the batch's features in `blocks[0].srcdata["feat"]` and labels in
    `blocks[-1].dstdata["label"]`.
    With `sampler` from gnnrepro.drop_in_link.as_edge_prediction_sampler, `train_idx` are edge
    ids and it yields DGL's edge-prediction batches (gnnrepro.drop_in_link)."""
    if isinstance(sampler, EdgePredictionSampler):  # DGL's as_edge_prediction_sampler's
        if use_uva:
            raise ValueError("use_uva=True: the edge-prediction drop-in samples on the CPU "
                             "(link prediction does not drive a GPU sampler yet)")
        return edge_prediction_loader(g, train_idx, sampler, device=device,
                                      batch_size=batch_size, shuffle=shuffle,
                                      drop_last=drop_last, feat=feat, **settings)
    if use_uva:
        if not str(device).startswith("cuda"):
            raise ValueError(f"use_uva=True samples on the GPU: device must be cuda, got "
                             f"{device!r}")
        settings.setdefault("sampler_device", "uva")
    sampling = dgl_sampling(sampler)
    config = _config(sampling.fanouts, device, batch_size, settings)
    data = from_dgl(g, train_idx, feat=feat, label=label, edge_ids=sampling.prob is not None)
    weights = sampling.weights(g)
    return OwningBatchView(make_loader(data, config, shuffle=shuffle, drop_last=drop_last,
                               weights=weights, replace=sampling.replace), to_dgl)


def NeighborLoader(data: Any, num_neighbors: Sequence[int], *, batch_size: int = 1024,  # noqa: N802
                   input_nodes: Any = None, input_time: Any = None, replace: bool = False,
                   weight_attr: str | None = None, time_attr: str | None = None,
                   temporal_strategy: str = "uniform", disjoint: bool = False,
                   shuffle: bool = False, drop_last: bool = False, device: Any = "cpu",
                   **settings: Any) -> OwningBatchView:
    """PyG's `NeighborLoader(data, num_neighbors, batch_size=..., input_nodes=...)` on our
    loader (sampled on our side, every batch on `device`): yields Data batches with `x`,
    `edge_index`, `y`, `batch_size` and `n_id` (`adj_t` in place of `edge_index` where `data`'s
    graph is an adj_t, as PyG's NeighborLoader does). `num_neighbors` counts from the seeds, as in
    PyG; `input_nodes` is the seeds' ids or mask (None: every node, as in PyG); `replace`,
    `weight_attr` (data's per-edge weights, edge i that of edge_index[:, i]), `shuffle`
    (False by default, as PyG's) and `drop_last` as PyG's; `num_workers` is taken and left to
    our loader, which chooses its workers. `time_attr` (data's per-edge integer times) with
    `input_time` (each seed's time), `temporal_strategy` and `disjoint` are PyG's temporal
    sampling: each seed sampled on its own, no edge later than its time (`time_attr` naming
    node times: no neighbour later than it; seeds then default to their own times); input
    nodes may repeat, each at its own input_time; batches then carry `batch` (each node's
    seed) and `e_id`. `weight_attr` with `time_attr` picks by weight among the candidates
    (strategy "uniform"; PyG has no such sampler)."""
    if is_hetero_data(data):
        return _hetero_loader(data, num_neighbors, input_nodes, input_time, replace,
                              weight_attr, time_attr, temporal_strategy, disjoint, shuffle,
                              drop_last, device, batch_size, settings)
    fanouts = list(reversed(list(num_neighbors)))  # ours count from the input layer
    config = _config(fanouts, device, batch_size, settings)
    if input_nodes is None:
        input_nodes = torch.ones(data.num_nodes, dtype=torch.bool)
    dataset = from_pyg(data, train_idx=input_nodes,
                       edge_ids=weight_attr is not None or time_attr is not None)
    weights = (None if weight_attr is None
               else pyg_edge_weights(data, weight_attr, dataset.graph.num_edges))
    temporal, seed_time = _pyg_temporal(data, dataset, time_attr, input_time,
                                        temporal_strategy, disjoint)
    sparse = pyg_graph_is_adj_t(data)
    return OwningBatchView(make_loader(dataset, config, shuffle=shuffle, drop_last=drop_last,
                               weights=weights, replace=replace, temporal=temporal,
                               seed_time=seed_time),
                   to_pyg_sparse if sparse else to_pyg)


def _hetero_loader(data: Any, num_neighbors: Any, input_nodes: Any, input_time: Any,
                   replace: bool, weight_attr: str | None, time_attr: str | None,
                   temporal_strategy: str, disjoint: bool, shuffle: bool, drop_last: bool,
                   device: Any, batch_size: int, settings: dict) -> OwningBatchView:
    """NeighborLoader on a HeteroData (gnnrepro.drop_in_hetero)."""
    if input_nodes is None:
        raise ValueError("input_nodes is needed with a HeteroData: a node type or (node type, "
                         "ids or mask), as in PyG")
    dataset, others = hetero_dataset(data, input_nodes)
    fanouts = hetero_fanouts(num_neighbors, dataset.graph)
    per_relation = any(isinstance(layer, Mapping) for layer in fanouts)
    # the config records one fanout a layer (-1 where a relation takes all, else the largest);
    # the sampler takes them per relation
    config = _config([(-1 if -1 in layer.values() else max(1, *layer.values()))
                      if isinstance(layer, Mapping) else layer for layer in fanouts],
                     device, batch_size, settings)
    temporal, seed_time = hetero_temporal(data, dataset, time_attr, input_time,
                                          temporal_strategy, disjoint)
    return OwningBatchView(make_loader(dataset, config, shuffle=shuffle, drop_last=drop_last,
                                       weights=hetero_weights(data, weight_attr),
                                       replace=replace, temporal=temporal,
                                       seed_time=seed_time,
                                       relation_fanouts=fanouts if per_relation else None),
                           hetero_view(others))


def _pyg_temporal(data: Any, dataset: Any, time_attr: str | None, input_time: Any,
                  temporal_strategy: str, disjoint: bool) -> tuple[dict[str, Any] | None,
                                                                   torch.Tensor | None]:
    """FusedSampler's temporal arguments for PyG's NeighborLoader(time_attr=..., input_time=...,
    temporal_strategy=..., disjoint=...), and each input node's time (input nodes may repeat,
    one time each): (None, None) where not temporal. `time_attr` names edge times (one per
    edge_index column; input_time then needed) or node times (a neighbour's time must not pass
    its seed's; a seed's time is input_time or its own node time)."""
    if time_attr is None:
        if input_time is not None:
            raise ValueError("input_time needs time_attr (data's edge or node times), as in PyG")
        if temporal_strategy != "uniform":
            raise ValueError("temporal_strategy needs time_attr (data's edge or node times)")
        return ({"disjoint": True} if disjoint else None), None
    times, node_time = pyg_time_attr(data, time_attr, dataset.graph)
    seeds = dataset.train_idx
    if input_time is None and node_time is None:
        raise ValueError("input_time is needed with time_attr naming edge times: each input "
                         "node's time (PyG's input_time), at which it is sampled")
    seed_time = (node_time[seeds] if input_time is None
                 else check_time_tensor(input_time, "input_time", seeds.numel()))
    return ({"times": times, "temporal_strategy": temporal_strategy, "edge_ids": True},
            seed_time)
