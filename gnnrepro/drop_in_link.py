"""Drop-in link-prediction loaders with the peers' call signatures, each with its own semantics.

DGL: `as_edge_prediction_sampler(NeighborSampler(fanouts), exclude=..., reverse_eids=...,
negative_sampler=negative_sampler.Uniform(k))` passed to `gnnrepro.drop_in.DataLoader(g,
train_eids, sampler, ...)` yields DGL's `(input_nodes, pair_graph, neg_pair_graph, blocks)`
(`(input_nodes, pair_graph, blocks)` without a negative sampler): the pair graphs over the
batch's seed nodes (blocks[-1]'s destinations) with the positives' ids in
`pair_graph.edata[dgl.EID]`; negatives k per positive with the positive's source; `exclude`
None, "self" or "reverse_id" (with `reverse_eids`), as DGL's. The NeighborSampler's `prob` or
`mask` (an edata field) and `replace` sample as DGL's, `exclude` too (a batch's excluded edges
are weights zero for its blocks); the blocks carry DGL's `edata[dgl.EID]`.

PyG: `LinkNeighborLoader(data, num_neighbors, edge_label_index=..., edge_label=...,
neg_sampling=dict(mode="binary" | "triplet", amount=k), batch_size=...)` yields PyG's batches:
`x`, `edge_index`, `n_id` as NeighborLoader's, and per PyG's mode `edge_label_index` and
`edge_label` (binary: positives then negatives whose both endpoints are drawn uniformly, labels
1 and 0; no negatives: the given labels or ones) or `src_index`, `dst_pos_index`,
`dst_neg_index` (triplet: k destinations per positive's source), with `input_id` the batch's
label positions. Like PyG's, it excludes nothing (it relies on a disjoint split of the edges);
`replace` and `weight_attr` (data's per-edge weights in edge_index order) are PyG's. So are
`time_attr` (data's integer times per edge, or per node: an edge's is then its source's, as
drop_in.NeighborLoader takes them) with `edge_label_time` (each label edge's time) and
`temporal_strategy`: each endpoint and negative is then a seed of its own sampled at its label
edge's time, and a batch also carries `batch` (each node's seed), `e_id` and `edge_label_time`.

Both run on our fused sampler (LinkSampler) and pinned, multi-worker Loader.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from gnnrepro.datasets.dataset import Dataset
from gnnrepro.graph import CSCGraph
from gnnrepro.config.machine import resolve_workers
from gnnrepro.drop_in_hetero import (hetero_dataset, hetero_fanouts, hetero_times,
                                     hetero_view, hetero_weights, is_hetero_data)
from gnnrepro.interop.convert import (dgl_csc, dgl_edge_weights, pyg_edge_weights, pyg_graph,
                                      pyg_time_attr)
from gnnrepro.interop.dgl_view import to_dgl
from gnnrepro.interop.pyg_view import to_pyg
from gnnrepro.interop.view import OwningBatchView
from gnnrepro.linkpred.edge_batch import EdgeBatch
from gnnrepro.linkpred.link_sampler import LinkSampler
from gnnrepro.pipeline.loader import Loader
from gnnrepro.pipeline.plan import BatchPlan
from gnnrepro.sampling import FusedSampler

__all__ = ["DGLSampling", "EdgePredictionSampler", "LinkNeighborLoader",
           "as_edge_prediction_sampler", "dgl_sampling", "edge_prediction_loader"]


#: DGL's negative samplers by class name (Uniform is PerSourceUniform in DGL 2), and ours.
_DGL_NEGATIVE_SAMPLERS = {"Uniform": "uniform", "PerSourceUniform": "uniform",
                          "GlobalUniform": "global"}


@dataclass(frozen=True)
class DGLSampling:
    """How a DGL NeighborSampler samples: its fanouts (input layer first), the edata field its
    `prob` or `mask` names (None: uniformly) and `replace`."""

    fanouts: list[int]
    prob: str | None = None
    replace: bool = False

    def weights(self, g: Any) -> torch.Tensor | None:
        """The sampling weights of DGL graph `g` by DGL edge id (None: uniform)."""
        return None if self.prob is None else dgl_edge_weights(g, self.prob)


@dataclass(frozen=True)
class EdgePredictionSampler:
    """What `as_edge_prediction_sampler` returns: the loader's link settings."""

    sampling: DGLSampling
    exclude: str | None
    reverse_eids: torch.Tensor | None
    num_negatives: int
    negatives: str


def dgl_sampling(sampler: Any) -> DGLSampling:
    """How a DGL NeighborSampler (or the fanouts themselves) samples; an edge_dir ours cannot
    sample is a ValueError naming the option."""
    if isinstance(sampler, Sequence) and not isinstance(sampler, str):
        return DGLSampling(list(sampler))
    fanouts = getattr(sampler, "fanouts", None)
    if fanouts is None:
        raise TypeError(f"sampler must be the fanouts (input layer first) or DGL's "
                        f"NeighborSampler, got {type(sampler).__name__}")
    if getattr(sampler, "edge_dir", "in") != "in":
        raise ValueError(f"NeighborSampler(edge_dir={sampler.edge_dir!r}): gnnrepro's sampler "
                         f"samples in-edges; give edge_dir='in'")
    # DGL keeps a `mask` in `prob` too: either names an edata field
    return DGLSampling(list(fanouts), getattr(sampler, "prob", None),
                       getattr(sampler, "replace", False))


def as_edge_prediction_sampler(sampler: Any, exclude: str | None = None,
                               reverse_eids: Any = None,
                               negative_sampler: Any = None) -> EdgePredictionSampler:
    """DGL's as_edge_prediction_sampler: `sampler` is DGL's NeighborSampler or its fanouts
    (input layer first); `negative_sampler` DGL's negative_sampler.Uniform(k) or
    GlobalUniform(k) (never a true edge), an int k, or None."""
    if exclude not in (None, "self", "reverse_id"):
        raise ValueError(f"exclude={exclude!r}: gnnrepro excludes None, 'self' or 'reverse_id' "
                         "(with reverse_eids); reverse_types is for heterographs")
    if negative_sampler is None:
        k, mode = 0, "uniform"
    elif isinstance(negative_sampler, int) and not isinstance(negative_sampler, bool):
        k, mode = negative_sampler, "uniform"
    elif type(negative_sampler).__name__ in _DGL_NEGATIVE_SAMPLERS:
        k = int(negative_sampler.k)
        mode = _DGL_NEGATIVE_SAMPLERS[type(negative_sampler).__name__]
    else:
        raise TypeError("negative_sampler must be DGL's negative_sampler.Uniform or "
                        f"GlobalUniform (or an int k), got {type(negative_sampler).__name__}")
    reverse = None if reverse_eids is None else torch.as_tensor(reverse_eids).to(torch.int64)
    return EdgePredictionSampler(dgl_sampling(sampler), exclude, reverse, k, mode)


def _unlabelled(graph: CSCGraph, features: Any, name: str) -> Dataset:
    """A Dataset of `graph` and its node features, without node labels or splits (the
    Loader's rows; link prediction's targets are edges)."""
    if not isinstance(features, torch.Tensor) or features.dim() != 2:
        raise ValueError(f"{name}: the graph's node features must be a 2-D tensor")
    empty = torch.empty(0, dtype=torch.int64)
    return Dataset(graph, features.cpu().float(), torch.full((graph.num_nodes,), -1), empty,
                   empty, empty, num_classes=0, name=name)


def _dgl_graph_data(g: Any, feat: str) -> tuple[Dataset, tuple[torch.Tensor, torch.Tensor]]:
    """A DGLGraph as a Dataset whose graph keeps DGL's edge ids, and its edges by id."""
    data = _unlabelled(dgl_csc(g, edge_ids=True), g.ndata.get(feat), f"g.ndata[{feat!r}]")
    src, dst = g.edges(order="eid")
    return data, (src.cpu().to(torch.int64), dst.cpu().to(torch.int64))


def edge_prediction_loader(g: Any, train_eids: Any, sampler: EdgePredictionSampler, *,
                           device: Any = "cpu", batch_size: int = 1024, shuffle: bool = False,
                           drop_last: bool = False, feat: str = "feat",
                           **settings: Any) -> OwningBatchView:
    """The DGL DataLoader drop-in for an EdgePredictionSampler (module docstring); `settings`
    are our Loader's (workers, worker_kind, prefetch, ...)."""
    data, edges = _dgl_graph_data(g, feat)
    sampling = sampler.sampling
    seed = settings.pop("seed", 0)
    link = LinkSampler(FusedSampler(data.graph, sampling.fanouts, replace=sampling.replace,
                                    weights=sampling.weights(g), edge_ids=True), edges,
                       sampler.num_negatives, sampler.negatives, sampler.exclude,
                       sampler.reverse_eids, seed=seed)
    loader = _edge_loader(data, link, torch.as_tensor(train_eids).to(torch.int64), device,
                          batch_size, shuffle, drop_last, seed, settings)
    with_negatives = sampler.num_negatives > 0
    return OwningBatchView(loader, lambda batch: _to_dgl_pairs(batch, with_negatives))


#: The peers' loader arguments a drop-in takes for what ours does anyway: their worker
#: processes (ours chooses its own workers from the machine unless workers=... is given).
PEER_WORKER_ARGS = ("num_workers", "persistent_workers")


def _edge_loader(data: Dataset, link: LinkSampler, ids: torch.Tensor | int, device: Any,
                 batch_size: int, shuffle: bool, drop_last: bool, seed: int,
                 settings: dict[str, Any]) -> Loader:
    """Our Loader over the edge batches of `ids` (edge ids, or a count: 0..n-1), as the node
    drop-ins build theirs: the peers' worker arguments dropped, workers chosen from the
    machine unless `settings` gives them, the shuffle seeded by `seed`."""
    for name in PEER_WORKER_ARGS:
        settings.pop(name, None)
    settings.setdefault("workers", resolve_workers(None, str(device)))
    plan = BatchPlan(ids, batch_size, seed=seed, shuffle=shuffle, drop_last=drop_last)
    return Loader(data, link, device, batch_size, plan=plan, labels=data.labels, **settings)


def _to_dgl_pairs(batch: EdgeBatch, with_negatives: bool) -> tuple:
    """An EdgeBatch as DGL's (input_nodes, pair_graph[, neg_pair_graph], blocks)."""
    from gnnrepro.baselines.dgl_import import import_dgl
    dgl = import_dgl()
    input_nodes, _, blocks = to_dgl(dataclasses.replace(batch, y=None))  # no node labels
    n = batch.seeds.numel()
    pair = dgl.graph((batch.pos[0], batch.pos[1]), num_nodes=n)
    pair.edata[dgl.EID] = batch.edge_ids
    pair.ndata[dgl.NID] = batch.seeds
    if not with_negatives:
        return input_nodes, pair, blocks
    k = batch.neg_dst.shape[1]
    neg = dgl.graph((batch.pos[0].repeat_interleave(k), batch.neg_dst.reshape(-1)), num_nodes=n)
    neg.ndata[dgl.NID] = batch.seeds
    return input_nodes, pair, neg, blocks


def LinkNeighborLoader(data: Any, num_neighbors: Sequence[int], *,  # noqa: N802
                       edge_label_index: Any = None, edge_label: Any = None,
                       neg_sampling: dict | None = None, neg_sampling_ratio: float | None = None,
                       replace: bool = False, weight_attr: str | None = None,
                       time_attr: str | None = None, edge_label_time: Any = None,
                       temporal_strategy: str = "uniform",
                       batch_size: int = 1024, shuffle: bool = False, drop_last: bool = False,
                       device: Any = "cpu", **settings: Any) -> OwningBatchView:
    """PyG's LinkNeighborLoader on our loader (module docstring). `num_neighbors` counts from
    the seeds, as PyG's; `neg_sampling_ratio=r` is PyG's older spelling of binary negatives;
    `replace` and `weight_attr` as NeighborLoader's (gnnrepro.drop_in); `time_attr` and
    `edge_label_time` go together, as in PyG."""
    if neg_sampling is None and neg_sampling_ratio is not None:
        neg_sampling = {"mode": "binary", "amount": neg_sampling_ratio}
    mode, amount = "none", 0
    if neg_sampling is not None:
        mode = neg_sampling.get("mode")
        amount = neg_sampling.get("amount", 1)
        if mode not in ("binary", "triplet"):
            raise ValueError(f"neg_sampling mode must be 'binary' or 'triplet', got {mode!r}")
        if int(amount) != amount or amount < 1:
            raise ValueError(f"neg_sampling amount must be a whole number >= 1 here, got "
                             f"{amount}")
        amount = int(amount)
    if (time_attr is None) != (edge_label_time is None):
        raise ValueError("time_attr and edge_label_time go together (as in PyG): time_attr "
                         "names data's edge times, edge_label_time gives each label edge's")
    if is_hetero_data(data):
        return _hetero_link_loader(data, num_neighbors, edge_label_index, edge_label, mode,
                                   amount, replace, weight_attr, time_attr, edge_label_time,
                                   temporal_strategy, batch_size, shuffle, drop_last, device,
                                   settings)
    timed = time_attr is not None
    dataset = _unlabelled(pyg_graph(data, edge_ids=weight_attr is not None or timed),
                          getattr(data, "x", None), "data.x")
    weights = (None if weight_attr is None
               else pyg_edge_weights(data, weight_attr, dataset.graph.num_edges))
    times = None if not timed else pyg_time_attr(data, time_attr, dataset.graph)[0]
    label_index = data.edge_index if edge_label_index is None else edge_label_index
    label_index = torch.as_tensor(label_index).to(torch.int64)
    labels = (None if edge_label is None else torch.as_tensor(edge_label))
    seed = settings.pop("seed", 0)
    temporal = {} if not timed else {"times": times, "temporal_strategy": temporal_strategy,
                                     "edge_ids": True}
    link = LinkSampler(FusedSampler(dataset.graph, list(reversed(list(num_neighbors))),
                                    replace=replace, weights=weights, **temporal),
                       (label_index[0], label_index[1]), amount, exclude=None, seed=seed,
                       negative_sources="uniform" if mode == "binary" else "positive",
                       edge_time=edge_label_time)
    loader = _edge_loader(dataset, link, label_index.shape[1], device, batch_size, shuffle,
                          drop_last, seed, settings)
    return OwningBatchView(loader, lambda batch: _to_pyg_link(batch, mode, labels,
                                                              link.edge_time))


def _to_pyg_link(batch: EdgeBatch, mode: str, labels: torch.Tensor | None,
                 label_time: torch.Tensor | None) -> Any:
    """An EdgeBatch as LinkNeighborLoader's batch in `mode` ("none", "binary", "triplet");
    with `label_time` (the label edges' times) its edge_label_time, negatives at their
    positive's."""
    out = to_pyg(batch)
    del out.y, out.batch_size  # node-level fields of NeighborLoader's batches
    for name, value in _link_fields(batch, mode, labels, label_time).items():
        setattr(out, name, value)
    return out


def _link_fields(batch: EdgeBatch, mode: str, labels: torch.Tensor | None,
                 label_time: torch.Tensor | None) -> dict[str, torch.Tensor]:
    """LinkNeighborLoader's edge-level fields of `batch` in `mode`: input_id, edge_label_time
    (with `label_time`), and edge_label_index + edge_label (binary, none) or src_index,
    dst_pos_index, dst_neg_index (triplet), in the rows of the batch's seeds."""
    out = {"input_id": batch.edge_ids}
    if label_time is not None:
        t = label_time[batch.edge_ids]
        out["edge_label_time"] = (torch.cat([t, t.repeat_interleave(batch.neg_dst.shape[1])])
                                  if mode == "binary" else t)
    pos_label = (torch.ones(batch.edge_ids.numel()) if labels is None
                 else labels[batch.edge_ids])
    if mode == "triplet":
        out.update(src_index=batch.pos[0], dst_pos_index=batch.pos[1],
                   dst_neg_index=batch.neg_dst)
    elif mode == "binary":
        neg = torch.stack([batch.neg_src.reshape(-1), batch.neg_dst.reshape(-1)])
        out["edge_label_index"] = torch.cat([batch.pos, neg], dim=1)
        out["edge_label"] = torch.cat([pos_label, torch.zeros(neg.shape[1],
                                                              dtype=pos_label.dtype)])
    else:
        out["edge_label_index"], out["edge_label"] = batch.pos, pos_label
    return out


def _hetero_link_loader(data: Any, num_neighbors: Any, edge_label_index: Any, edge_label: Any,
                        mode: str, amount: int, replace: bool, weight_attr: str | None,
                        time_attr: str | None, edge_label_time: Any, temporal_strategy: str,
                        batch_size: int, shuffle: bool, drop_last: bool, device: Any,
                        settings: dict[str, Any]) -> OwningBatchView:
    """LinkNeighborLoader on a HeteroData: `edge_label_index` is (edge type, [2, N] label edges
    or None: the type's edge_index); batches are the heterogeneous loader's
    (drop_in_hetero.hetero_view) with the edge-level fields on the edge type, triplet indices
    on its node types, as PyG's."""
    if not isinstance(edge_label_index, (tuple, list)) or len(edge_label_index) != 2:
        raise TypeError("edge_label_index of a HeteroData must be (edge type, label edges or "
                        "None), as in PyG")
    key, given = edge_label_index
    rel = tuple(key) if isinstance(key, (tuple, list)) else key
    if rel not in [tuple(r) for r in data.edge_types]:
        raise ValueError(f"edge_label_index: {key!r} is not an edge type of data "
                         f"({sorted(tuple(r) for r in data.edge_types)})")
    dataset, others = hetero_dataset(data, (rel[2], torch.empty(0, dtype=torch.int64)))
    graph = dataset.graph
    label_index = torch.as_tensor(data[rel].edge_index if given is None else given)
    label_index = label_index.to(torch.int64).cpu()
    labels = None if edge_label is None else torch.as_tensor(edge_label)
    temporal = {"edge_ids": True}
    if time_attr is not None:
        temporal.update(times=hetero_times(data, graph, time_attr)[0],
                        temporal_strategy=temporal_strategy)
    seed = settings.pop("seed", 0)
    link = LinkSampler(FusedSampler(graph, hetero_fanouts(num_neighbors, graph),
                                    replace=replace, weights=hetero_weights(data, weight_attr),
                                    **temporal),
                       (label_index[0], label_index[1]), amount, exclude=None, seed=seed,
                       negative_sources="uniform" if mode == "binary" else "positive",
                       relation=rel, edge_time=edge_label_time)
    loader = _edge_loader(dataset, link, label_index.shape[1], device, batch_size, shuffle,
                          drop_last, seed, settings)
    view = hetero_view(others)

    def to_batch(batch: EdgeBatch) -> Any:
        out = view(batch)
        target = next(iter(batch.seeds))
        for name in ("y", "batch_size"):  # node-level fields of NeighborLoader's batches
            if name in out[target]:
                del out[target][name]
        for name, value in _link_fields(batch, mode, labels, link.edge_time).items():
            where = {"src_index": rel[0], "dst_pos_index": rel[2],
                     "dst_neg_index": rel[2]}.get(name, rel)
            out[where][name] = value
        return out
    return OwningBatchView(loader, to_batch)
