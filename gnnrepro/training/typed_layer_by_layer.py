"""Layer-wise full-neighbour inference of a typed model (R-GCN, R-GAT, any TypedModel-like
model with `forward_layer(i, typed_block, h)` and `layer_inputs(input_nodes, x)`).

As for homogeneous models (gnnrepro.training.layer_by_layer): layer l's output is computed once
for every node layer l + 1 needs, over all its in-neighbours in every relation. The needed
sets are per node type: the targets for the last layer; before it each type's set of the next
layer plus, for every relation from that type, the in-neighbours of the relation's needed
destinations. A layer's destinations are taken type by type in chunks of at most CHUNK_NODES
nodes and CHUNK_EDGES in-edges (over the relations into that type), and each chunk becomes one
full-neighbour TypedBlock made by the fused sampler at fanout -1 (destinations first per type).
Layer 0 reads the featured types' rows from the run's features (a table or a store per type)
and the model's embeddings for the others; later layers read the previous layer's rows by
position. A type the model gives no output for at a layer (R-GAT outputs destination types
only) is absent from the next layer's input, as in the model's own forward.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

import torch
from torch import nn

from gnnrepro.features.store import FeatureStore
from gnnrepro.features.typed_store import TypedFeatureStore
from gnnrepro.progress import Progress
from gnnrepro.sampling.fused import FusedSampler
from gnnrepro.training.layer_by_layer import degree_chunks
from gnnrepro.training.layerwise import _neighbours
from gnnrepro.typed_graph import TypedGraph

__all__ = ["supports_typed_layerwise", "typed_layerwise_cost", "typed_needed_nodes",
           "typed_layer_by_layer_predict"]


def supports_typed_layerwise(model: nn.Module) -> bool:
    """Whether a typed model exposes what this inference calls."""
    return (callable(getattr(model, "forward_layer", None))
            and callable(getattr(model, "layer_inputs", None))
            and isinstance(getattr(model, "target", None), str)
            and isinstance(getattr(model, "layer_dims", None), list))


def typed_layerwise_cost(graph: TypedGraph, num_layers: int) -> float:
    """Edges layer-wise inference reads, at most: every edge of every relation once per layer."""
    return float(num_layers) * sum(graph.num_edges.values())


def typed_needed_nodes(graph: TypedGraph, target: str, targets: torch.Tensor,
                       num_layers: int) -> list[dict[str, torch.Tensor]]:
    """Per layer l (0 .. num_layers - 1) the sorted node ids of each type whose layer-l output
    is needed (see the module doc)."""
    sets = [{target: torch.unique(targets.cpu())}]
    for _ in range(num_layers - 1):
        current = sets[0]
        masks = {t: torch.zeros(n, dtype=torch.bool) for t, n in graph.num_nodes.items()}
        for t, ids in current.items():
            masks[t][ids] = True
        for rel in graph.canonical_relations:
            if rel[2] in current and current[rel[2]].numel():
                masks[rel[0]][_neighbours(graph.relations[rel], current[rel[2]])[1]] = True
        sets.insert(0, {t: m.nonzero().squeeze(1) for t, m in masks.items() if bool(m.any())})
    return sets


def _chunks(graph: TypedGraph, ntype: str, nodes: torch.Tensor) -> Iterator[torch.Tensor]:
    """Consecutive slices of `nodes`, each of at most CHUNK_NODES nodes and CHUNK_EDGES
    in-edges over the relations into `ntype` (or a single node)."""
    if nodes.numel() == 0:
        return
    degrees = torch.zeros(nodes.numel(), dtype=torch.int64)
    for rel, csc in graph.relations.items():
        if rel[2] == ntype:
            degrees += csc.indptr[nodes + 1] - csc.indptr[nodes]
    yield from degree_chunks(nodes, degrees)


def _input_rows(features: Mapping[str, torch.Tensor] | TypedFeatureStore,
                ids: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The featured types' rows of `ids` (CPU)."""
    if isinstance(features, TypedFeatureStore):
        return features.split_rows(features.gather(ids), ids)
    return {t: (x.gather(ids[t]) if isinstance(x, FeatureStore) else x[ids[t]])
            for t, x in features.items() if t in ids}


def _layer_rows(model: nn.Module, index: int, src_nodes: Mapping[str, torch.Tensor],
                tables: dict[str, torch.Tensor], positions: dict[str, torch.Tensor],
                device: torch.device) -> dict[str, torch.Tensor]:
    """Layer `index`'s input rows of a block's sources: the previous layer's, by position; a
    type it reads with no sources here (none needed there either) gets no rows."""
    h = {}
    for t, ids in src_nodes.items():
        if t in tables:
            h[t] = tables[t][positions[t][ids.to(device)]]
        elif ids.numel() == 0 and t in model.layer_dims[index]:
            h[t] = torch.empty((0, model.layer_dims[index][t]), device=device)
    return h


@torch.no_grad()
def typed_layer_by_layer_predict(model: nn.Module, graph: TypedGraph,
                                 features: Mapping[str, torch.Tensor] | TypedFeatureStore,
                                 targets: torch.Tensor, device: torch.device, num_layers: int,
                                 heartbeat: Callable[[], None] | None = None,
                                 target: str | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(the sorted unique `targets`, their outputs): `num_layers` layers of
    `model.forward_layer`, each over every in-neighbour of every relation, in eval mode.
    `targets` are ids of node type `target` (default `model.target`: logits; another type's
    outputs are its embeddings, as link prediction scores them)."""
    if not supports_typed_layerwise(model):
        raise TypeError(f"model must have forward_layer(i, block, h), layer_inputs(input_nodes, "
                        f"x), layer_dims and a target node type for typed layer-wise inference "
                        f"(as gnnrepro.models.TypedModel), got {type(model).__name__}")
    if not isinstance(graph, TypedGraph):
        raise TypeError(f"graph must be a TypedGraph, got {type(graph).__name__}")
    was_training = model.training
    model.eval()
    try:
        return _predict(model, graph, features, targets, device, num_layers, heartbeat,
                        model.target if target is None else graph.node_type(target))
    finally:
        model.train(was_training)


def _predict(model: nn.Module, graph: TypedGraph,
             features: Mapping[str, torch.Tensor] | TypedFeatureStore, targets: torch.Tensor,
             device: torch.device, num_layers: int, heartbeat: Callable[[], None] | None,
             target: str) -> tuple[torch.Tensor, torch.Tensor]:
    sets = typed_needed_nodes(graph.to("cpu"), target, targets, num_layers)
    full = FusedSampler(graph.to("cpu"), [-1])
    tables: dict[str, torch.Tensor] = {}
    positions: dict[str, torch.Tensor] = {}
    total = sum(ids.numel() for layer in sets for ids in layer.values())
    with Progress("evaluate (layer-wise)", total, "nodes") as bar:
        for index, needed in enumerate(sets):
            parts: dict[str, list[torch.Tensor]] = {}
            for ntype, nodes in needed.items():
                for chunk in _chunks(graph, ntype, nodes):
                    block = full.sample({ntype: chunk}).blocks[0]
                    if index == 0:
                        h = model.layer_inputs({t: ids.to(device)
                                                for t, ids in block.src_nodes.items()},
                                               {t: x.to(device) for t, x in
                                                _input_rows(features, block.src_nodes).items()})
                    else:
                        h = _layer_rows(model, index, block.src_nodes, tables, positions, device)
                    out = model.forward_layer(index, block.to(device), h)
                    if ntype in out:
                        parts.setdefault(ntype, []).append(out[ntype])
                    bar.update(chunk.numel(), note=f"layer {index + 1}/{num_layers}")
                    if heartbeat is not None:
                        heartbeat()
            tables = {t: torch.cat(p) for t, p in parts.items()}
            positions = {}
            for t in tables:
                position = torch.full((graph.num_nodes[t],), -1, dtype=torch.int64)
                position[needed[t]] = torch.arange(needed[t].numel())
                positions[t] = position.to(device)
    return sets[-1][target], tables[target]
