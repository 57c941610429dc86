"""Edge times for temporal neighbour sampling (PyG's `edge_time` with disjoint subgraphs).

The fused op finds a destination's candidates at a seed's time by binary search, so it samples a
CSC whose edges are sorted by time within each destination (csrc/common/temporal_picks.h). Times
are given per edge id, as weights are (`weights.py`); a graph whose lists are not in time order
is sampled from a sorted copy that keeps the caller's edge ids (`CSCGraph.edge_ids`), so blocks
report the caller's ids. Seeds' times come per call, or from a per-node time (PyG's node
`time_attr`: a seed is sampled at its node's time).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch

from gnnrepro.datasets.anonymous import random_access_tensor
from gnnrepro.graph import CSCGraph
from gnnrepro.progress import announce
from gnnrepro.sampling.typed import per_relation

__all__ = ["TEMPORAL_STRATEGIES", "EdgeTimes", "edge_times", "relation_times",
           "check_time_tensor", "check_time_window"]

#: Graphs with at least this many edges say when their time-sorted copy is being made.
ANNOUNCE_EDGES = 10_000_000

#: PyG's temporal_strategy names, by the op's code (common/temporal_picks.h).
TEMPORAL_STRATEGIES = {"uniform": 0, "last": 1}


@dataclass(frozen=True)
class EdgeTimes:
    """One relation as the op samples it: `graph` (time-sorted lists, `edge_ids` naming the
    caller's edge ids where it reordered them) and `times` int64 [E] in `graph`'s CSC order."""

    graph: CSCGraph
    times: torch.Tensor


def check_time_tensor(times: object, name: str, length: int) -> torch.Tensor:
    """`times` as a contiguous int64 tensor of `length` entries; TypeError/ValueError naming
    `name` otherwise (times are integers, as PyG's are: seconds, days, steps)."""
    if not isinstance(times, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(times).__name__}")
    if times.dtype == torch.bool or times.is_floating_point() or times.is_complex():
        raise TypeError(f"{name} must be an integer tensor (int64 timestamps), got {times.dtype}")
    if times.dim() != 1 or times.numel() != length:
        raise ValueError(f"{name} must be 1-D with {length} entries, got shape "
                         f"{tuple(times.shape)}")
    return times.to(torch.int64).contiguous()


def check_time_window(window: object) -> int:
    """The op's time window: -1 for None, else a non-negative int (ValueError/TypeError naming
    time_window)."""
    if window is None:
        return -1
    if isinstance(window, bool) or not isinstance(window, int):
        raise TypeError(f"time_window must be an int or None, got {type(window).__name__}")
    if window < 0:
        raise ValueError(f"time_window must be >= 0 (or None: no lower bound), got {window}")
    return int(window)


def edge_times(graph: CSCGraph, times: object, name: str = "times") -> EdgeTimes:
    """`times` (one integer per edge id of `graph`) checked, with the graph sorted by time
    within each destination where it is not already (a copy: `graph` is left alone)."""
    times = check_time_tensor(times, name, graph.num_edges).to(graph.device)
    csc_times = times[graph.edge_ids] if graph.edge_ids is not None else times
    # The op's binary searches read the times at random, and the sorted copy's indices: on
    # huge pages where they fit (datasets.anonymous), as the cache puts `indices`.
    if _sorted_within_lists(graph.indptr, csc_times):
        return EdgeTimes(graph, random_access_tensor(csc_times.contiguous()))
    if graph.num_edges >= ANNOUNCE_EDGES:  # tens of seconds at ogbn-products' size
        announce(f"{name}: sorting {graph.num_edges:,} edges by time within their lists (once, "
                 "for the sampler)")
    order = _time_order(graph.indptr, csc_times)
    ids = graph.edge_ids[order] if graph.edge_ids is not None else order
    sorted_graph = CSCGraph(graph.indptr, random_access_tensor(graph.indices[order]),
                            validate=False, num_src_nodes=graph.num_src_nodes, edge_ids=ids)
    return EdgeTimes(sorted_graph, random_access_tensor(csc_times[order].contiguous()))


def relation_times(times: object, relations: Mapping[object, CSCGraph],
                   resolve: object) -> dict[object, EdgeTimes]:
    """{relation: times} of a typed graph (relations named as `resolve` accepts them) as
    {canonical relation: EdgeTimes}; relations not named are untimed (every edge a candidate
    at any time)."""
    return per_relation(times, "times", resolve,
                        lambda rel, t, label: edge_times(relations[rel], t, label))


def _sorted_within_lists(indptr: torch.Tensor, times: torch.Tensor) -> bool:
    """Whether `times` is non-decreasing over every neighbour list of the CSC `indptr`."""
    if times.numel() < 2:
        return True
    drops = times[1:] < times[:-1]
    starts = indptr[1:-1]
    starts = starts[(starts > 0) & (starts < times.numel())]
    drops[starts - 1] = False  # a new list may start earlier than the last one ended
    return not bool(drops.any())


def _time_order(indptr: torch.Tensor, times: torch.Tensor) -> torch.Tensor:
    """The CSC positions reordered by time within each list (stable: ties keep their order)."""
    owner = torch.repeat_interleave(torch.arange(indptr.numel() - 1, device=indptr.device),
                                    indptr[1:] - indptr[:-1], output_size=times.numel())
    order = torch.argsort(times, stable=True)
    return order[torch.argsort(owner[order], stable=True)]
