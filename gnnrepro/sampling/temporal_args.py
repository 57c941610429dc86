"""A temporal FusedSampler's arguments, checked once: the time-sorted graph, per relation its
edge times, per node type its nodes' times (the seeds' default), the window and the strategy;
and per call the seeds' times."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch

from gnnrepro.checks import check_id_tensor
from gnnrepro.graph import CSCGraph
from gnnrepro.pinning import pin_in_place
from gnnrepro.sampling.temporal import (TEMPORAL_STRATEGIES, check_time_tensor,
                                        check_time_window, edge_times, relation_times)
from gnnrepro.typed_graph import TypedGraph

__all__ = ["TemporalArgs", "repeatable_seeds"]


def _masks_only(weights: object) -> bool:
    """Whether `weights` (FusedSampler's: None, a tensor, or a dict of them per relation) holds
    boolean masks only."""
    if weights is None:
        return True
    values = weights.values() if isinstance(weights, Mapping) else [weights]
    return all(isinstance(w, torch.Tensor) and w.dtype == torch.bool for w in values)


@dataclass(frozen=True)
class TemporalArgs:
    """What a temporal (or just disjoint) sampler passes the op: `graph` (its lists in time
    order), `edge_times` (per relation, None where untimed), `node_time` (per node type, None
    where not given), `window` (-1: none) and `strategy` (TEMPORAL_STRATEGIES' code). `timed`
    is False for disjoint sampling without times (every edge a candidate)."""

    graph: CSCGraph | TypedGraph
    edge_times: list[torch.Tensor | None]
    node_time: list[torch.Tensor | None]
    window: int
    strategy: int
    timed: bool = True

    @classmethod
    def build(cls, graph: CSCGraph | TypedGraph, times: object, node_time: object,
              strategy: object, window: object, *, weights: object, replace: bool,
              device: torch.device, disjoint: bool = False) -> TemporalArgs | None:
        """The arguments of FusedSampler(times=..., ...), or of FusedSampler(disjoint=True)
        without times; None where neither (after checking that no other temporal argument was
        given)."""
        if times is None:
            if node_time is not None or strategy != "uniform" or window is not None:
                raise ValueError("node_time, temporal_strategy and time_window need times (the "
                                 "edges' times)")
            if not disjoint:
                return None
        if times is None:  # disjoint, every edge a candidate: the op's untimed relations
            num_types = len(graph.num_nodes) if isinstance(graph, TypedGraph) else 1
            return cls(graph, [], [None] * num_types, -1, 0, timed=False)
        if strategy not in TEMPORAL_STRATEGIES:
            raise ValueError(f"temporal_strategy must be one of {sorted(TEMPORAL_STRATEGIES)}, "
                             f"got {strategy!r}")
        if strategy == "last" and replace:
            raise ValueError("temporal_strategy='last' picks the most recent edges without "
                             "replacement: replace must be False")
        if strategy == "last" and not _masks_only(weights):
            raise ValueError("temporal_strategy='last' picks the most recent edges, so weights' "
                             "magnitudes would go unused: give a boolean mask (the most recent "
                             "edges it keeps are taken), or weights with "
                             "temporal_strategy='uniform' (picks by weight among the "
                             "candidates)")
        window = check_time_window(window)
        if isinstance(graph, TypedGraph):
            by_rel = relation_times(times, graph.relations, graph.relation)
            sorted_graph = TypedGraph(graph.num_nodes, {
                rel: by_rel[rel].graph if rel in by_rel else csc
                for rel, csc in graph.relations.items()})
            rel_times = [by_rel[rel].times if rel in by_rel else None
                         for rel in graph.canonical_relations]
            node_times = _typed_node_time(node_time, graph)
        else:
            timed = edge_times(graph, times)
            sorted_graph, rel_times = timed.graph, [timed.times]
            node_times = [None if node_time is None
                          else check_time_tensor(node_time, "node_time", graph.num_nodes)]
        if device != graph.device:  # a GPU reads the CPU graph over UVA: its sorted copy too
            sorted_graph.pin_memory_()
            for t in rel_times:
                if t is not None and t.numel() and not pin_in_place(t):
                    raise RuntimeError("could not page-lock the edge times (cudaHostRegister "
                                       "failed: locked-memory limit?)")
        return cls(sorted_graph, rel_times, node_times, window, TEMPORAL_STRATEGIES[strategy])

    def times_by_edge_id(self, rel: int) -> torch.Tensor | None:
        """Relation `rel`'s (the graph's order) edge times indexed by the caller's edge ids,
        None where it is untimed."""
        if not self.edge_times or self.edge_times[rel] is None:
            return None
        csc = (list(self.graph.relations.values())[rel] if isinstance(self.graph, TypedGraph)
               else self.graph)
        times = self.edge_times[rel]
        if csc.edge_ids is None:
            return times
        out = torch.empty_like(times)
        out[csc.edge_ids] = times
        return out

    def seed_times(self, seeds: list[torch.Tensor], seed_time: object) -> list[torch.Tensor]:
        """Per node type its seeds' times, on the seeds' device: `seed_time` (a tensor for one
        seeded type, or a dict {node type: times}), else each seed's node_time (zeros if
        untimed: any time will do)."""
        if not self.timed:
            if seed_time is not None:
                raise ValueError("seed_time needs a temporal sampler (FusedSampler(..., "
                                 "times=...)); this one is disjoint without times")
            return [torch.zeros(s.numel(), dtype=torch.int64, device=s.device) for s in seeds]
        types = (list(self.graph.num_nodes) if isinstance(self.graph, TypedGraph)
                 else [None])
        if seed_time is not None and not isinstance(seed_time, Mapping):
            seeded = [t for t, s in zip(types, seeds) if s.numel()]
            if len(seeded) > 1:
                raise TypeError("seed_time of seeds of several node types must be a dict "
                                "{node type: times}")
            seed_time = {seeded[0] if seeded else types[0]: seed_time}
        out = []
        for ntype, ids, default in zip(types, seeds, self.node_time):
            name = "seed_time" if ntype is None else f"seed_time[{ntype!r}]"
            if seed_time is not None and ntype in seed_time:
                out.append(check_time_tensor(seed_time[ntype], name, ids.numel()).to(ids.device))
            elif ids.numel() == 0:
                out.append(torch.empty(0, dtype=torch.int64, device=ids.device))
            elif default is not None:
                out.append(default[ids.to(default.device)].to(ids.device).contiguous())
            else:
                raise ValueError(f"{name} is needed: the sampler has no node_time"
                                 f"{'' if ntype is None else f' for {ntype!r}'} to take the "
                                 "seeds' times from")
        return out


def repeatable_seeds(seeds: object, num_nodes: int, name: str,
                     device: torch.device) -> torch.Tensor:
    """Seeds of a temporal call (repeats allowed: one node at two times) as contiguous int64 on
    `device`, in [0, num_nodes); ValueError/TypeError naming `name` otherwise."""
    ids = check_id_tensor(seeds, name, device).to(torch.int64).contiguous()
    if ids.numel():
        lo, hi = (int(v) for v in torch.aminmax(ids))
        if lo < 0 or hi >= num_nodes:
            raise ValueError(f"{name} must lie in [0, {num_nodes}), found values in [{lo}, {hi}]")
    return ids


def _typed_node_time(node_time: object, graph: TypedGraph) -> list[torch.Tensor | None]:
    """Per node type (the graph's order) its nodes' times, None where not given."""
    if node_time is None:
        return [None] * len(graph.num_nodes)
    if not isinstance(node_time, Mapping):
        raise TypeError("node_time of a typed graph must be a dict {node type: times}, got "
                        f"{type(node_time).__name__}")
    for ntype in node_time:
        graph.node_type(ntype)
    return [check_time_tensor(node_time[t], f"node_time[{t!r}]", n) if t in node_time else None
            for t, n in graph.num_nodes.items()]
