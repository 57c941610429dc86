"""Per-edge weights for weighted (biased) and masked neighbour sampling.

Weights are checked once (finite, non-negative, one per edge), sampled as float32 (as DGL's
`prob` usually is) and turned into the arrays the fused op samples from: per edge its weight and
its destination's alias table entry (with the neighbour ids it gives, so that a CPU pick reads
one random line), per destination its count of positive weights (csrc/common/weighted_picks.h):
20 bytes an edge (28 with int64 indices) and 8 a node. Weights are given per edge id, as
DGL's `prob` edata and PyG's `weight_attr` are: a graph that keeps `edge_ids` (its edges'
original ids) has weights[edge_ids[p]] at CSC position p; otherwise position p's is weights[p].
A boolean mask is weights 1 (kept) and 0 (never sampled).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch

from gnnrepro import _ops
from gnnrepro.datasets.anonymous import random_access_tensor
from gnnrepro.graph import CSCGraph
from gnnrepro.sampling.typed import per_relation

__all__ = ["EdgeWeights", "check_weights", "edge_weights", "relation_weights"]


@dataclass(frozen=True)
class EdgeWeights:
    """One relation's sampling arrays, in CSC order: `weights` float32 [E], `table` int64
    [2E or 3E] (alias table entries) and `nonzero` int64 [N] (positive weights a destination)."""

    weights: torch.Tensor
    table: torch.Tensor
    nonzero: torch.Tensor

    def op_args(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return self.weights, self.table, self.nonzero

    def pin_memory(self) -> "EdgeWeights":
        return EdgeWeights(*(t.pin_memory() for t in self.op_args()))


def check_weights(weights: object, num_edges: int, name: str = "weights") -> torch.Tensor:
    """`weights` as given, checked: a float tensor (or a bool mask) with one entry per edge,
    finite, non-negative and within float32 (as it is sampled); a TypeError/ValueError naming
    `name` otherwise. The drop-ins check a peer's field under its own name with it."""
    if not isinstance(weights, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(weights).__name__}")
    if weights.dtype != torch.bool and not weights.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor (or a bool mask), got "
                        f"{weights.dtype}")
    if weights.dim() != 1 or weights.numel() != num_edges:
        raise ValueError(f"{name} must be 1-D with one entry per edge ({num_edges}), got "
                         f"shape {tuple(weights.shape)}")
    if weights.is_floating_point():
        bad = ~torch.isfinite(weights) | (weights < 0)
        if bool(bad.any()):
            first = int(bad.nonzero()[0, 0])
            raise ValueError(f"{name} must be finite and non-negative: {name}[{first}] = "
                             f"{float(weights[first])}")
        if bool((weights > torch.finfo(torch.float32).max).any()):
            raise ValueError(f"{name} must fit in float32 (the weights are sampled as "
                             f"float32): found values above "
                             f"{torch.finfo(torch.float32).max:.3g}")
    return weights


def edge_weights(graph: CSCGraph, weights: object, name: str = "weights") -> EdgeWeights:
    """`weights` (a float tensor, or a bool mask, one entry per edge id) of `graph` checked
    (check_weights) and prepared for the fused op."""
    sampled = check_weights(weights, graph.num_edges, name).to(device=graph.device,
                                                                dtype=torch.float32)
    if graph.edge_ids is not None:  # weights by edge id: CSC position p holds edge edge_ids[p]
        sampled = sampled[graph.edge_ids]
    sampled = sampled.contiguous()
    table, nonzero = _ops.ops.weight_table(graph.indptr, graph.indices, sampled)
    # random reads, one per pick: on huge pages, as `indices` (datasets.anonymous)
    return EdgeWeights(random_access_tensor(sampled), random_access_tensor(table), nonzero)


def relation_weights(weights: object, relations: Mapping[object, CSCGraph],
                     resolve: object) -> dict[object, EdgeWeights]:
    """{relation: weights} of a typed graph (relations named as `resolve` accepts them) as
    {canonical relation: EdgeWeights}; relations not named are sampled uniformly."""
    return per_relation(weights, "weights", resolve,
                        lambda rel, w, label: edge_weights(relations[rel], w, label))
