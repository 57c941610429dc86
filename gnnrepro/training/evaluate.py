"""Evaluation: accuracy of a model on node ids, by one of two methods.

* "sampled": mini-batches of the ids with blocks from a given sampler (the training fanouts).
  Batch b always holds ids[b * batch_size:][:batch_size] and uses batch_id b, so it is
  deterministic; with a torch.distributed group of several ranks each rank evaluates the
  batches b with b % world_size == rank.
* "layerwise": full-neighbour inference, each layer once per needed node
  (gnnrepro.training.layerwise for our GraphSAGE; layer_by_layer for any model with a
  `forward_layer`, in its layout); with several ranks each computes a share of every layer.
* "auto" (the default) picks the one that costs less for these ids, counted in edges (a
  sampled edge weighs SAMPLED_EDGE_WEIGHT layer-wise ones, as measured): layer-wise for a
  large split (ogbn-products' 2.2M test ids), sampled for a small one.

Either way the correct counts are summed over the ranks, which gives exactly the one-process
count. Input rows are read through `store`, the FeatureStore training reads (a disk store's hot
set, cache and direct reads; default: the dataset's table).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from gnnrepro.config import EVAL_METHODS
from gnnrepro.datasets.dataset import Dataset
from gnnrepro.datasets.typed_dataset import TypedDataset
from gnnrepro.features.store import FeatureStore
from gnnrepro.graph import CSCGraph
from gnnrepro.interop import model_logits
from gnnrepro.progress import Progress
from gnnrepro.models.graphsage import GraphSAGE
from gnnrepro.sampling.block import MiniBatch, on_cpu
from gnnrepro.sampling.typed import with_target
from gnnrepro.training.layer_by_layer import layer_by_layer_predict
from gnnrepro.training.layerwise import (SAMPLED_EDGE_WEIGHT, layerwise_cost,
                                         layerwise_predict, sampled_cost, supports_layerwise)
from gnnrepro.training.typed_layer_by_layer import (supports_typed_layerwise,
                                                    typed_layer_by_layer_predict,
                                                    typed_layerwise_cost)
from gnnrepro.typed_graph import TypedGraph

__all__ = ["EVAL_METHODS", "accuracy", "choose_eval_method", "correct_in", "count_correct",
           "input_rows", "rank_and_world"]


def rank_and_world() -> tuple[int, int]:
    """(rank, world size) of the torch.distributed process group, (0, 1) without one."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def choose_eval_method(method: str, model: nn.Module, sampler: Any, num_ids: int) -> str:
    """'layerwise' or 'sampled' for evaluating `num_ids` ids: `method` itself, or for 'auto'
    the one that costs less in weighted edges (sampled for models layer-wise inference
    cannot run).
    ValueError / TypeError name `method`."""
    if method not in EVAL_METHODS:
        raise ValueError(f"eval_method must be one of {', '.join(EVAL_METHODS)}, got {method!r}")
    graph = getattr(sampler, "graph", None)
    typed = isinstance(graph, TypedGraph)
    runnable = (supports_typed_layerwise(model) if typed
                else supports_layerwise(model) and isinstance(graph, CSCGraph))
    # Layer-wise inference aggregates every edge: a weighted (masked) or temporal sampler's
    # neighbourhoods are not those, and evaluating so would read masked or future edges.
    temporal = getattr(sampler, "temporal", None)
    if getattr(sampler, "weights", None) is not None or getattr(temporal, "timed", False):
        if method == "layerwise":
            raise ValueError("eval_method='layerwise' reads every edge, but this sampler is "
                             "weighted or temporal (its neighbourhoods exclude edges): use "
                             "eval_method='sampled'")
        return "sampled"
    if method == "layerwise" and not runnable:
        raise TypeError(f"eval_method='layerwise' needs a GraphSAGE model or one with "
                        f"forward_layer(i, ...) (gnnrepro.interop.exposes_layers; on a typed "
                        f"graph a TypedModel) and an evaluator with a CSCGraph or TypedGraph "
                        f"`graph`, got {type(model).__name__} and {type(sampler).__name__}; "
                        f"use eval_method='sampled'")
    if method != "auto":
        return method
    if not runnable:
        return "sampled"
    fanouts = list(sampler.fanouts)
    if typed:  # a layer's sampled edges: up to its fanouts summed over the relations
        layerwise = typed_layerwise_cost(graph, len(fanouts))
        mean_degree = sum(graph.num_edges.values()) / max(sum(graph.num_nodes.values()), 1)
        reach, per_seed = 1.0, 0.0
        for layer in reversed(fanouts):
            reach *= sum(mean_degree if f < 0 else min(float(f), mean_degree) for f in layer)
            per_seed += reach
        return "layerwise" if layerwise < SAMPLED_EDGE_WEIGHT * num_ids * per_seed else "sampled"
    cheaper = layerwise_cost(graph, len(fanouts)) < sampled_cost(graph, fanouts, num_ids)
    return "layerwise" if cheaper else "sampled"


@torch.no_grad()
def count_correct(model: nn.Module, dataset: Dataset, sampler: Any, ids: torch.Tensor,
                  device: torch.device, batch_size: int, rank: int = 0, world_size: int = 1,
                  heartbeat: Callable[[], None] | None = None,
                  method: str = "sampled", store: FeatureStore | None = None,
                  layout: str = "blocks") -> torch.Tensor:
    """Correct predictions (int64 scalar on `device`) on this rank's share of `ids`, in eval
    mode (no dropout, no grad). "sampled": the evaluation batches b with b % world_size ==
    rank, on blocks sampled by `sampler` (on its own device; blocks and features are moved to
    `device`). "layerwise": this rank's share of every layer over `sampler.graph`, all
    neighbours (each id counted once). Rows come from `store` (None: dataset.features); the
    model takes its batches in `layout` (gnnrepro.interop.LAYOUTS)."""
    if method == "layerwise":
        table = dataset.features if store is None else store
        if isinstance(dataset, TypedDataset):
            if world_size > 1:
                raise ValueError("typed layer-wise evaluation runs in one process; "
                                 "data-parallel typed training is out of scope")
            nodes, logits = typed_layer_by_layer_predict(model, sampler.graph, table, ids,
                                                         device, len(sampler.fanouts),
                                                         heartbeat)
        elif type(model) is GraphSAGE:
            nodes, logits = layerwise_predict(model, sampler.graph, table, ids, device, rank,
                                              world_size, heartbeat)
        else:
            nodes, logits = layer_by_layer_predict(model, sampler.graph, table, ids, device,
                                                   layout, len(sampler.fanouts), rank,
                                                   world_size, heartbeat)
        nodes = nodes.cpu()
        if nodes.numel() == 0:  # this rank's share is empty (its logits may have no columns)
            return torch.zeros((), dtype=torch.int64, device=device)
        # each node is computed once: an id given k times counts k times, as when sampled
        unique, counts = torch.unique(ids.cpu(), return_counts=True)
        times = counts[torch.searchsorted(unique, nodes)].to(device)
        hits = logits.argmax(dim=1) == dataset.labels[nodes].to(device)
        return (hits * times).sum()
    if method != "sampled":
        raise ValueError(f"method must be 'sampled' or 'layerwise', got {method!r}")
    sampler_device = getattr(sampler, "device", torch.device("cpu"))
    steps = range(rank, -(-ids.numel() // batch_size), world_size)
    if isinstance(dataset, TypedDataset):
        sampler = with_target(sampler, dataset.target)

    def batches() -> Iterator[MiniBatch]:
        for b in steps:
            seeds = ids[b * batch_size: (b + 1) * batch_size]
            mb = sampler.sample(seeds.to(sampler_device), b)
            mb.x = input_rows(dataset, store, on_cpu(mb.input_nodes))
            mb.y = dataset.labels[seeds]
            yield mb
            del mb  # before the next batch's rows: one batch's at a time

    return correct_in(model, batches(), len(steps), device, heartbeat, layout)[0]


def input_rows(dataset: Dataset | TypedDataset, store: FeatureStore | None, ids: Any) -> Any:
    """The input rows of a batch's `ids` (CPU; a dict by node type on a typed dataset), read
    through `store`, or (None) from the dataset's tables."""
    if store is not None:
        return store.split_rows(store.gather(ids), ids)
    if isinstance(dataset, TypedDataset):
        return {t: x[ids[t]] for t, x in dataset.features.items() if t in ids}
    return dataset.features[ids]


@torch.no_grad()
def correct_in(model: nn.Module, batches: Iterable[MiniBatch], total: int,
               device: torch.device,
               heartbeat: Callable[[], None] | None = None,
               layout: str = "blocks") -> torch.Tensor:
    """[correct predictions, seeds] (int64 [2] on `device`) over `total` `batches` (each
    with its rows `x` and labels `y`, moved to `device` here, and given to the model in
    `layout`), in eval mode (no dropout, no grad): the one way every split of every stack is
    counted."""
    was_training = model.training
    model.eval()
    counts = torch.zeros(2, dtype=torch.int64, device=device)
    with Progress("evaluate (sampled)", total, "batches") as bar:
        for mb in batches:
            placed = mb.to(device)
            pred = model_logits(model, placed, layout).argmax(dim=1)
            counts[0] += (pred == placed.y).sum()
            counts[1] += placed.y.numel()
            del mb, placed, pred  # before the next batch's rows: one batch's at a time
            bar.update()
            if heartbeat is not None:
                heartbeat()
    model.train(was_training)
    return counts


def accuracy(model: nn.Module, dataset: Dataset, sampler: Any, ids: torch.Tensor,
             device: torch.device, batch_size: int,
             heartbeat: Callable[[], None] | None = None, method: str = "auto",
             store: FeatureStore | None = None, layout: str = "blocks") -> float:
    """Accuracy (a fraction in [0, 1]) on node ids `ids` by `method` (EVAL_METHODS), NaN for
    no ids; the whole group's under a torch.distributed process group (every rank must call
    it). An id given k times counts k times by either method. Rows are read through `store`
    (None: dataset.features); the model takes its batches in `layout`."""
    if ids.numel() == 0:
        return float("nan")
    rank, world_size = rank_and_world()
    method = choose_eval_method(method, model, sampler, ids.numel())
    correct = count_correct(model, dataset, sampler, ids, device, batch_size, rank, world_size,
                            heartbeat, method, store, layout)
    if world_size > 1:
        dist.all_reduce(correct)
    return correct.item() / ids.numel()
