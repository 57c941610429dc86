"""What the fused op needs from a typed graph, and its output as TypedBlocks.

The op (`sample_fused_typed`, csrc/ops.cpp) numbers node types and relations by position: the
TypedGraph's order. Fanouts are given as DGL and PyG take them: per layer one int for every
relation, or a dict naming every relation (by name or (src, name, dst)); -1 takes all
neighbours, 0 none. Seeds are a dict {node type: ids}. Every check here runs before any C++.
"""
from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from gnnrepro.checks import check_id_tensor
from gnnrepro.sampling.args import MAX_FANOUT
from gnnrepro.sampling.block import TypedBlock, relation_block
from gnnrepro.typed_graph import Relation, TypedGraph

__all__ = ["check_typed_fanouts", "typed_seed_tensors", "typed_blocks_from_op", "op_graph_args",
           "per_relation", "with_target"]


def check_typed_fanouts(fanouts: object, graph: TypedGraph) -> list[list[int]]:
    """Per GNN layer (input layer first) one fanout per relation, in the graph's order."""
    if isinstance(fanouts, (str, bytes, Mapping)) or not isinstance(fanouts, Sequence):
        raise TypeError("fanouts must be a sequence over layers of ints or of dicts "
                        f"{{relation: int}}, got {type(fanouts).__name__}")
    if len(fanouts) == 0:
        raise ValueError("fanouts must not be empty (one fanout per GNN layer)")
    rels = graph.canonical_relations
    out = []
    for i, layer in enumerate(fanouts):
        if isinstance(layer, Mapping):
            given: dict[Relation, int] = {}
            for key, f in layer.items():
                rel = graph.relation(key)
                if rel in given:
                    raise ValueError(f"fanouts[{i}] names relation {rel} twice")
                given[rel] = _check_fanout(f, f"fanouts[{i}][{key!r}]")
            missing = [rel for rel in rels if rel not in given]
            if missing:
                raise ValueError(f"fanouts[{i}] has no fanout for relation(s) {missing}: give "
                                 "every relation one (0 to sample none)")
            out.append([given[rel] for rel in rels])
        else:
            out.append([_check_fanout(layer, f"fanouts[{i}]")] * len(rels))
    return out


def per_relation(values: object, name: str, resolve: Callable[[object], Relation],
                 build: Callable[[Relation, object, str], Any]) -> dict[Relation, Any]:
    """A typed sampler's per-relation option `name` ({relation: value}, relations named as
    `resolve` accepts them) as {canonical relation: build(relation, value, label)}, label
    naming the entry for errors; TypeError/ValueError naming `name` for anything else."""
    if not isinstance(values, Mapping):
        raise TypeError(f"{name} of a typed graph must be a dict {{relation: {name}}}, got "
                        f"{type(values).__name__}")
    out: dict[Relation, Any] = {}
    for key, value in values.items():
        rel = resolve(key)
        if rel in out:
            raise ValueError(f"{name} names relation {rel} twice")
        out[rel] = build(rel, value, f"{name}[{key!r}]")
    return out


def with_target(sampler: object, target: str) -> object:
    """`sampler` (a typed FusedSampler) taking plain id tensors as `target` seeds, as a batch
    plan or an evaluation hands them over: itself if it does, else a copy that does (the
    caller's is left alone)."""
    if not hasattr(sampler, "target"):
        raise TypeError(f"sampler: {type(sampler).__name__} cannot sample a typed dataset "
                        "(use gnnrepro.sampling.FusedSampler on dataset.graph)")
    if sampler.target == target:
        return sampler
    sampler = copy.copy(sampler)
    sampler.target = target
    return sampler


def _check_fanout(f: object, name: str) -> int:
    if isinstance(f, bool) or not isinstance(f, int):
        raise TypeError(f"{name} must be an int, got {type(f).__name__}")
    if f < -1 or f > MAX_FANOUT:
        raise ValueError(f"{name} = {f}: a fanout must be -1 (all neighbours), 0 (none) or in "
                         f"[1, {MAX_FANOUT}]")
    return int(f)


def typed_seed_tensors(seeds: object, graph: TypedGraph, device: torch.device,
                       unique: bool = True) -> list[torch.Tensor]:
    """Seeds {node type: ids} as one contiguous int64 tensor per node type (empty where none),
    in range and (if `unique`: a temporal call's may repeat) unique per type, else a
    ValueError/TypeError naming the type."""
    if not isinstance(seeds, Mapping):
        raise TypeError("seeds of a typed graph must be a dict {node type: ids}, got "
                        f"{type(seeds).__name__}")
    for ntype in seeds:
        graph.node_type(ntype)
    out = []
    for ntype, n in graph.num_nodes.items():
        if ntype not in seeds:
            out.append(torch.empty(0, dtype=torch.int64, device=device))
            continue
        ids = check_id_tensor(seeds[ntype], f"seeds[{ntype!r}]", device).to(torch.int64)
        if ids.numel():
            lo, hi = (int(v) for v in torch.aminmax(ids))
            if lo < 0 or hi >= n:
                raise ValueError(f"seeds[{ntype!r}] must lie in [0, {n}) (node type {ntype!r} "
                                 f"has {n} nodes), found values in [{lo}, {hi}]")
            if unique and torch.unique(ids).numel() != ids.numel():
                raise ValueError(f"seeds[{ntype!r}] must be unique node ids")
        out.append(ids.contiguous())
    return out


def op_graph_args(graph: TypedGraph) -> tuple[list[torch.Tensor], list[torch.Tensor], list[int],
                                              list[int], list[int]]:
    """indptrs, indices, src_types, dst_types, num_nodes: the op's graph arguments."""
    types = {t: i for i, t in enumerate(graph.node_types)}
    rels = graph.canonical_relations
    return ([graph.relations[r].indptr for r in rels], [graph.relations[r].indices for r in rels],
            [types[r[0]] for r in rels], [types[r[2]] for r in rels],
            list(graph.num_nodes.values()))


def typed_blocks_from_op(flat: Sequence[torch.Tensor], graph: TypedGraph,
                         seeds: Sequence[torch.Tensor], edge_ids: bool,
                         with_seed_index: bool = False) -> list[TypedBlock]:
    """The op's flat output (per layer: per relation indptr, indices[, edge ids], then per type
    source nodes[, then per type their seed indices: a temporal call]) as TypedBlocks, input
    layer first. A layer's destinations of each type are the sources of the layer after it
    (the seeds for the last)."""
    rels, types = graph.canonical_relations, graph.node_types
    per_rel = 3 if edge_ids else 2
    per_layer = per_rel * len(rels) + len(types) * (2 if with_seed_index else 1)
    blocks = []
    num_dst = {t: s.numel() for t, s in zip(types, seeds)}
    for base in reversed(range(0, len(flat), per_layer)):
        types_base = base + per_rel * len(rels)
        src = {t: flat[types_base + i] for i, t in enumerate(types)}
        seed_index = ({t: flat[types_base + len(types) + i] for i, t in enumerate(types)}
                      if with_seed_index else None)
        rel_blocks = {}
        for k, rel in enumerate(rels):
            eids = flat[base + per_rel * k + 2] if edge_ids else None
            rel_eids = graph.relations[rel].edge_ids if eids is not None else None
            if rel_eids is not None:  # the graph's own ids (read where they are kept)
                eids = rel_eids[eids.to(rel_eids.device)].to(eids.device)
            rel_blocks[rel] = relation_block(flat[base + per_rel * k],
                                             flat[base + per_rel * k + 1], eids, rel, src,
                                             num_dst, seed_index)
        blocks.append(TypedBlock(rel_blocks, src, num_dst, seed_index))
        num_dst = {t: ids.numel() for t, ids in src.items()}
    blocks.reverse()
    return blocks
