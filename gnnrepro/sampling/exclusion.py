"""Edges excluded from a batch's sampling (link prediction: the batch's own edges and their
reverses, DGL's `exclude`): edge ids, as blocks report them, to the sorted CSC positions the op
takes (csrc/common/exclusion.h), on the graph's device."""
from __future__ import annotations

from collections.abc import Mapping

import torch

from gnnrepro.checks import check_id_tensor
from gnnrepro.graph import CSCGraph
from gnnrepro.sampling.typed import per_relation

__all__ = ["EdgePositions"]


class EdgePositions:
    """Edge id -> CSC position of one graph (built on first use where the graph keeps
    `edge_ids`: 8 bytes an edge id)."""

    def __init__(self, graph: CSCGraph):
        self.graph = graph
        self._position: torch.Tensor | None = None

    def sorted_positions(self, edge_ids: object, name: str,
                         device: torch.device) -> torch.Tensor:
        """The distinct CSC positions of `edge_ids` (ids of this graph's edges, on `device`:
        the sampler's), sorted, on the graph's device; a ValueError/TypeError naming `name`
        for anything else."""
        g = self.graph
        ids = check_id_tensor(edge_ids, name, device).to(g.indptr.device, torch.int64)
        ids = ids.reshape(-1)
        if ids.numel() == 0:
            return ids.contiguous()
        lo, hi = (int(v) for v in torch.aminmax(ids))
        position = self.build()
        limit = g.num_edges if position is None else position.numel()
        if lo < 0 or hi >= limit:
            raise ValueError(f"{name} must be edge ids in [0, {limit}), found values in "
                             f"[{lo}, {hi}]")
        if position is not None:
            ids = position[ids]
            if bool((ids < 0).any()):
                raise ValueError(f"{name} holds ids that are no edge of this graph")
        return torch.unique(ids)

    def build(self) -> torch.Tensor | None:
        """The edge id -> position map (None where ids are positions), built on first use."""
        ids = self.graph.edge_ids
        if ids is not None and self._position is None:
            size = int(ids.max()) + 1 if ids.numel() else 0
            position = torch.full((size,), -1, dtype=torch.int64, device=ids.device)
            position.index_copy_(0, ids, torch.arange(ids.numel(), device=ids.device))
            self._position = position
        return self._position


def excluded_args(exclude: object, positions: Mapping[object, EdgePositions],
                  order: list, device: torch.device,
                  resolve: object = None) -> list[torch.Tensor | None]:
    """The op's excluded_edges list (one entry per relation in `order`, None where nothing is
    excluded) from `exclude`: edge ids on `device` (one relation) or {relation: edge ids}."""
    if isinstance(exclude, Mapping):
        if resolve is None:
            raise TypeError("exclude of a homogeneous graph must be a tensor of edge ids")
        by_rel = per_relation(
            exclude, "exclude", resolve,
            lambda rel, ids, label: positions[rel].sorted_positions(ids, label, device))
        return [by_rel.get(rel) for rel in order]
    if len(order) != 1:
        raise TypeError("exclude of a typed graph must be a dict {relation: edge ids}")
    return [positions[order[0]].sorted_positions(exclude, "exclude", device)]
