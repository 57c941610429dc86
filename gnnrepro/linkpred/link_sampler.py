"""LinkSampler: edge mini-batches for link prediction on the fused sampler (DGL's
`as_edge_prediction_sampler`, the semantics of each drop-in stated where it is built).

`sample(edge_ids, batch_id)` takes ids of positive edges (of the graph, or of its one relation
`relation` on a typed graph; their endpoints come from `edges`), draws `num_negatives`
destinations per positive (gnnrepro.linkpred.negatives), and samples the blocks of the unique
endpoints in one op call. `exclude` keeps the batch's own edges out of its sampled graph, as
DGL's `exclude` does: "self" the positives, "reverse_id" also their reverses given
`reverse_eids` (edge e's reverse is reverse_eids[e]; an involution), None nothing (PyG's
LinkNeighborLoader, which relies on a disjoint split instead). On a typed graph the reverses
are edges of the reverse relation (mag's `cited_by` for `cites`, DGL's `reverse_etypes`):
`reverse_eids={reverse relation: ids}`, edge e's reverse being edge ids[e] there.

On a temporal sampler (FusedSampler(times=...), PyG's LinkNeighborLoader with `time_attr`)
each endpoint and negative is a seed of its own, sampled at its edge's time: `edge_time` (PyG's
`edge_label_time`, one per entry of `edges`), by default the sampler's times of those edges.
A positive's own edge is then a candidate at its time: exclude="self" keeps it out.
"""
from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import torch

from gnnrepro.checks import check_id_tensor, check_int
from gnnrepro.linkpred.edge_batch import EdgeBatch
from gnnrepro.linkpred.negatives import NEGATIVE_MODES, EdgeSet, draw_negatives
from gnnrepro.sampling.args import check_seed
from gnnrepro.sampling.temporal import check_time_tensor
from gnnrepro.typed_graph import Relation, TypedGraph

__all__ = ["EXCLUDE_MODES", "NEGATIVE_SOURCES", "LinkSampler", "check_reverse_eids"]

EXCLUDE_MODES = (None, "self", "reverse_id")
#: A negative's source: its positive's (DGL's, PyG's triplet mode), or uniform over the
#: source nodes like its destination (PyG's binary mode).
NEGATIVE_SOURCES = ("positive", "uniform")


def check_reverse_eids(reverse_eids: object, num_edges: int,
                       num_reverse_edges: int | None = None) -> torch.Tensor:
    """`reverse_eids` as int64 [num_edges]: ids in [0, num_reverse_edges) of another relation's
    edges, or (num_reverse_edges None) an involution on [0, num_edges) (the reverse of an
    edge's reverse is the edge); ValueError/TypeError naming reverse_eids otherwise."""
    rev = check_id_tensor(reverse_eids, "reverse_eids", torch.device("cpu")).to(torch.int64)
    if rev.shape != (num_edges,):
        raise ValueError(f"reverse_eids must have one entry per edge ({num_edges}), got shape "
                         f"{tuple(rev.shape)}")
    limit = num_edges if num_reverse_edges is None else num_reverse_edges
    if num_edges:
        lo, hi = (int(v) for v in torch.aminmax(rev))
        if lo < 0 or hi >= limit:
            raise ValueError(f"reverse_eids must lie in [0, {limit}), found [{lo}, {hi}]")
        if num_reverse_edges is not None:
            return rev.contiguous()
        bad = rev[rev] != torch.arange(num_edges)
        if bool(bad.any()):
            e = int(bad.nonzero()[0, 0])
            raise ValueError(f"reverse_eids must be an involution: reverse_eids[{e}] = "
                             f"{int(rev[e])} but reverse_eids[{int(rev[e])}] = "
                             f"{int(rev[rev[e]])}")
    return rev.contiguous()


class LinkSampler:
    """Edge mini-batches with negatives over `sampler` (a FusedSampler on the graph whose edges
    these are); see the module docstring. `edges` = (src, dst), int64, one entry per edge id of
    the graph (or of `relation`). On a typed graph `relation` is the predicted relation and
    `reverse_eids` a dict {reverse relation: ids}. `edge_time`: a temporal sampler's seed
    times per edge (module docstring)."""

    thread_use = "copy"  # a worker thread samples with its own copy, as FusedSampler's

    def __init__(self, sampler: Any, edges: tuple[torch.Tensor, torch.Tensor],
                 num_negatives: int = 1, negatives: str = "uniform", exclude: str | None = None,
                 reverse_eids: torch.Tensor | Mapping[object, torch.Tensor] | None = None,
                 relation: object = None, seed: int = 0, negative_sources: str = "positive",
                 edge_time: torch.Tensor | None = None):
        self.sampler = sampler
        self.graph = sampler.graph
        self.typed = isinstance(self.graph, TypedGraph)
        if self.typed:
            if relation is None:
                raise ValueError("relation: name the relation whose edges are predicted")
            self.relation = self.graph.relation(relation, "relation")
            csc = self.graph.relations[self.relation]
        else:
            if relation is not None:
                raise ValueError("relation names a relation of a typed graph; this graph is "
                                 "homogeneous")
            self.relation, csc = None, self.graph
        self.src, self.dst = _check_edges(edges, csc)
        self.num_negatives = check_int("num_negatives", num_negatives, 0)
        if negatives not in NEGATIVE_MODES:
            raise ValueError(f"negatives must be one of {NEGATIVE_MODES}, got {negatives!r}")
        self.negatives = negatives
        if negative_sources not in NEGATIVE_SOURCES:
            raise ValueError(f"negative_sources must be one of {NEGATIVE_SOURCES}, got "
                             f"{negative_sources!r}")
        if negative_sources == "uniform" and negatives == "global":
            raise ValueError("negatives='global' draws destinations for the positives' "
                             "sources: it needs negative_sources='positive'")
        self.negative_sources = negative_sources
        self._edge_set = EdgeSet(csc) if negatives == "global" else None
        if exclude not in EXCLUDE_MODES:
            raise ValueError(f"exclude must be one of {EXCLUDE_MODES}, got {exclude!r}")
        if (exclude == "reverse_id") != (reverse_eids is not None):
            where = f" of relation {self.relation}" if self.typed else ""
            raise ValueError(f"reverse_eids is needed with exclude='reverse_id', and only "
                             f"there: the map of each edge{where} to its reverse")
        self.exclude = exclude
        if exclude is not None:
            sampler.prepare_exclusion()  # its edge id maps now, not in the first batch
        self.reverse_relation, self.reverse_eids = self._reverse_map(reverse_eids)
        self.seed = check_seed(seed)
        #: the sampler's temporal arguments (None: not temporal or disjoint), as the Loader
        #: reads a sampler's: each seed on its own bounds a batch's rows per seed
        self.temporal = getattr(sampler, "temporal", None)
        self.edge_time = self._edge_times(edge_time)
        self.fanouts = sampler.fanouts
        self.device = sampler.device
        self.target = getattr(sampler, "target", None)
        # a batch's seeds per positive: its endpoints and negatives (the Loader's staging bound)
        sources = 1 + (self.num_negatives if negative_sources == "uniform" else 0)
        self.nodes_per_seed = sources + 1 + self.num_negatives
        #: on a typed graph, those seeds by node type
        self.seed_types = None
        if self.typed:
            self.seed_types = {self.relation[0]: sources}
            self.seed_types[self.relation[2]] = (self.seed_types.get(self.relation[2], 0)
                                                 + 1 + self.num_negatives)

    def __copy__(self) -> "LinkSampler":
        out = LinkSampler.__new__(LinkSampler)
        out.__dict__.update(self.__dict__)
        out.sampler = copy.copy(self.sampler)  # a thread worker's own node map and lock
        return out

    def sample(self, edge_ids: torch.Tensor, batch_id: int = 0) -> EdgeBatch:
        """The EdgeBatch of positive edges `edge_ids` (module docstring)."""
        batch_id = check_seed(batch_id, "batch_id")
        ids = check_id_tensor(edge_ids, "edge_ids", torch.device("cpu")).to(torch.int64)
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= self.src.numel()):
            raise ValueError(f"edge_ids must lie in [0, {self.src.numel()})")
        src, dst = self.src[ids], self.dst[ids]
        num_dst_nodes = (self.graph.num_nodes[self.relation[2]] if self.typed
                         else self.graph.num_nodes)
        neg = draw_negatives(src, self.num_negatives, num_dst_nodes, self.seed, batch_id,
                             self.negatives, self._edge_set)
        neg_src = None
        if self.negative_sources == "uniform":
            num_src_nodes = (self.graph.num_nodes[self.relation[0]] if self.typed
                             else self.graph.num_nodes)
            neg_src = draw_negatives(src, self.num_negatives, num_src_nodes, self.seed,
                                     batch_id, stream=1)
        sources = [src] + ([] if neg_src is None else [neg_src.reshape(-1)])
        targets = [dst, neg.reshape(-1)]
        seed_time = None
        if self.temporal is not None:  # every endpoint and negative a seed of its own
            seeds, src_rows, dst_rows, seed_time = self._row_seeds(sources, targets, ids)
        elif self.typed and self.relation[0] != self.relation[2]:
            src_type, _, dst_type = self.relation
            (src_seeds, src_rows), (dst_seeds, dst_rows) = (_rows(sources), _rows(targets))
            seeds = {src_type: src_seeds, dst_type: dst_seeds}
        else:
            all_seeds, rows = _rows(sources + targets)
            split = sum(t.numel() for t in sources)
            src_rows, dst_rows = rows[:split], rows[split:]
            seeds = {self.relation[0]: all_seeds} if self.typed else all_seeds
        b = ids.numel()
        pos = torch.stack([src_rows[:b], dst_rows[:b]])
        neg_src_rows = None if neg_src is None else src_rows[b:].reshape(b, -1)
        mb = self.sampler.sample(seeds, batch_id, seed_time=seed_time,
                                 exclude=self._excluded(ids))
        return EdgeBatch(mb.seeds, mb.input_nodes, mb.blocks, batch_id=batch_id, pos=pos,
                         neg_dst=dst_rows[b:].reshape(b, -1), edge_ids=ids,
                         neg_src=neg_src_rows, relation=self.relation)

    def _edge_times(self, edge_time: object) -> torch.Tensor | None:
        """Per entry of `edges` its seed time on a timed sampler (`edge_time`, else the
        sampler's times of those edges), None on any other."""
        temporal = self.temporal
        if temporal is None or not temporal.timed:
            if edge_time is not None:
                raise ValueError("edge_time needs a temporal sampler (FusedSampler(..., "
                                 "times=...))")
            return None
        if edge_time is not None:
            return check_time_tensor(edge_time, "edge_time", self.src.numel())
        rel = self.graph.canonical_relations.index(self.relation) if self.typed else 0
        times = temporal.times_by_edge_id(rel)
        if times is None or times.numel() != self.src.numel():
            raise ValueError("edge_time is needed: the sampler has no times of these edges "
                             "(edges are not the graph's own, one per edge id, of a timed "
                             "relation)")
        return times

    def _row_seeds(self, sources: list[torch.Tensor], targets: list[torch.Tensor],
                   ids: torch.Tensor) -> tuple[Any, torch.Tensor, torch.Tensor, Any]:
        """(seeds, source rows, destination rows, seed times) where each endpoint and negative
        is a seed of its own, at its positive's time (None: an untimed disjoint sampler)."""
        src_seeds, dst_seeds = torch.cat(sources), torch.cat(targets)
        times = None
        if self.edge_time is not None:  # a part holds each positive's entries in a row
            t, b = self.edge_time[ids], max(ids.numel(), 1)
            times = [torch.cat([t.repeat_interleave(p.numel() // b) for p in parts])
                     for parts in (sources, targets)]
        src_rows = torch.arange(src_seeds.numel())
        if self.typed and self.relation[0] != self.relation[2]:
            seeds = {self.relation[0]: src_seeds, self.relation[2]: dst_seeds}
            return (seeds, src_rows, torch.arange(dst_seeds.numel()),
                    None if times is None else dict(zip(seeds, times)))
        seeds = torch.cat([src_seeds, dst_seeds])
        dst_rows = torch.arange(dst_seeds.numel()) + src_seeds.numel()
        times = None if times is None else torch.cat(times)
        if self.typed:
            seeds = {self.relation[0]: seeds}
            times = None if times is None else {self.relation[0]: times}
        return seeds, src_rows, dst_rows, times

    def _reverse_map(self, reverse_eids: object) -> tuple[Relation | None, torch.Tensor | None]:
        """(the relation holding the reverses, or None: the predicted one; the checked map)."""
        if reverse_eids is None:
            return None, None
        if not self.typed:
            return None, check_reverse_eids(reverse_eids, self.src.numel())
        if not isinstance(reverse_eids, Mapping) or len(reverse_eids) != 1:
            raise ValueError(f"reverse_eids of a typed graph must be a dict {{reverse relation: "
                             f"ids}} naming the one relation that holds the reverses of "
                             f"{self.relation}'s edges, got {type(reverse_eids).__name__}")
        (key, ids), = reverse_eids.items()
        rev = self.graph.relation(key, "reverse_eids")
        if (rev[0], rev[2]) != (self.relation[2], self.relation[0]):
            raise ValueError(f"reverse_eids: {rev} cannot hold the reverses of {self.relation}'s "
                             f"edges (a reverse runs from {self.relation[2]!r} to "
                             f"{self.relation[0]!r})")
        if rev == self.relation:
            return None, check_reverse_eids(ids, self.src.numel())
        return rev, check_reverse_eids(ids, self.src.numel(),
                                       self.graph.relations[rev].num_edges)

    def _excluded(self, ids: torch.Tensor) -> torch.Tensor | dict | None:
        """The edge ids the batch's sampling leaves out ({relation: ids} on a typed graph)."""
        if self.exclude is None:
            return None
        if self.exclude == "self":
            own, reverses = ids, None
        elif self.reverse_relation is None:
            own, reverses = torch.cat([ids, self.reverse_eids[ids]]), None
        else:
            own, reverses = ids, self.reverse_eids[ids]
        if not self.typed:
            return own
        out = {self.relation: own}
        if reverses is not None:
            out[self.reverse_relation] = reverses
        return out


def _rows(parts: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """(the unique ids of `parts` concatenated, each entry's row among them)."""
    return torch.unique(torch.cat(parts), return_inverse=True)


def _check_edges(edges: object, csc: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """(src, dst) int64, one per edge id, in range of the graph's source and destination
    nodes."""
    if not isinstance(edges, (tuple, list)) or len(edges) != 2:
        raise TypeError("edges must be a pair (src, dst) of tensors, one entry per edge id")
    src = check_id_tensor(edges[0], "edges[0]", torch.device("cpu")).to(torch.int64)
    dst = check_id_tensor(edges[1], "edges[1]", torch.device("cpu")).to(torch.int64)
    if src.shape != dst.shape or src.dim() != 1:
        raise ValueError(f"edges must be two 1-D tensors of one length, got {tuple(src.shape)} "
                         f"and {tuple(dst.shape)}")
    for t, n, name in ((src, csc.num_src_nodes, "edges[0]"), (dst, csc.num_nodes, "edges[1]")):
        if t.numel() and (int(t.min()) < 0 or int(t.max()) >= n):
            raise ValueError(f"{name} must be node ids in [0, {n})")
    return src.contiguous(), dst.contiguous()
