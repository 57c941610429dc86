"""FusedSampler: the paper's SampleNeighbors fused with toBlockFast, as one C++ op per batch."""
from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable, Sequence

import torch

from gnnrepro import _ops
from gnnrepro.checks import check_bool, check_device
from gnnrepro.graph import CSCGraph
from gnnrepro.sampling.args import check_fanouts, check_graph, check_seed, seed_tensor
from gnnrepro.sampling.block import Block, MiniBatch
from gnnrepro.sampling.exclusion import EdgePositions, excluded_args
from gnnrepro.sampling.temporal_args import TemporalArgs, repeatable_seeds
from gnnrepro.sampling.typed import (check_typed_fanouts, op_graph_args, typed_blocks_from_op,
                                     typed_seed_tensors)
from gnnrepro.sampling.weights import EdgeWeights, edge_weights, relation_weights
from gnnrepro.typed_graph import TypedGraph

__all__ = ["FusedSampler", "blocks_from_op"]

# Every FusedSampler alive in this process. A fork while another thread is inside `sample`
# would hand the child that call's held lock (the thread does not exist in the child: the first
# call there would wait forever) and a half-written node map; the child gets fresh ones instead.
_LIVE_SAMPLERS: weakref.WeakSet[FusedSampler] = weakref.WeakSet()


def _reset_samplers_after_fork() -> None:
    for sampler in list(_LIVE_SAMPLERS):
        sampler._reset_after_fork()


os.register_at_fork(after_in_child=_reset_samplers_after_fork)


def blocks_from_op(flat: Sequence[torch.Tensor], with_edge_ids: bool = False,
                   graph_edge_ids: torch.Tensor | None = None,
                   with_seed_index: bool = False) -> list[Block]:
    """Turn the op's flat [indptr, indices, src_nodes] * L output into Blocks, input first.
    With `with_edge_ids` each layer has edge positions after `indices` (the edge ids being the
    graph's `edge_ids` at those positions where it keeps them); with `with_seed_index` (a
    temporal call) each source's seed index after `src_nodes`."""
    step = 3 + with_edge_ids + with_seed_index
    out = []
    for i in range(0, len(flat), step):
        eids = flat[i + 2] if with_edge_ids else None
        if eids is not None and graph_edge_ids is not None:
            eids = graph_edge_ids[eids.to(graph_edge_ids.device)].to(eids.device)
        src = flat[i + 2 + with_edge_ids]
        seed_index = flat[i + 3 + with_edge_ids] if with_seed_index else None
        out.append(Block(flat[i], flat[i + 1], src, flat[i].numel() - 1, eids,
                         seed_index=seed_index))
    return out


class FusedSampler:
    """Uniform neighbour sampler that builds DGL-style blocks in one fused pass per layer.

    `fanouts[i]` is GNN layer i's fanout (-1: all neighbours), so the seeds are sampled with
    `fanouts[-1]`. The same (seed, batch_id, seeds) gives bit-identical blocks on any number of
    threads (torch.set_num_threads), processes or devices.

    `device` is where the op runs, and where seeds and blocks live: by default the graph's.
    A GPU can also sample a CPU graph whose arrays are pinned (`graph.pin_memory_()`), reading
    them in place over UVA; seeds are then CUDA tensors.

    A TypedGraph is sampled by the same op, every relation into its destination type in one
    pass: `fanouts[i]` is one int for every relation or a dict naming each relation (0: none),
    seeds are {node type: ids} (or, with `target`, a tensor of that type's ids: what a
    Loader's batch plan hands over), and the blocks TypedBlocks. `edge_ids` makes every block
    carry the graph's ids of its edges (`Block.edge_ids`, DGL's EID, PyG's e_id).

    `weights` makes the sampling weighted (DGL's `prob`, PyG's `weight_attr`): one non-negative
    weight per edge id (a bool tensor: a mask), or on a typed graph {relation: weights} (the
    relations not named stay uniform). Only positive weights are picked: without replacement
    by successive sampling (each pick proportional to the weights not yet picked, as DGL's),
    min(fanout, positive weights) a destination; with `replace`, independent picks.

    `times` makes the sampling temporal (PyG's `edge_time`): one integer time per edge id
    (on a typed graph {relation: times}; relations not named are untimed). Each seed is then
    sampled at its own time at every hop, only edges no later than it (and, with
    `time_window` w, no earlier than its time - w), and on its own: seeds may repeat (one node
    at two times), a node reached from two seeds is two sources, and every block carries each
    source's seed index (`Block.seed_index`, PyG's disjoint `batch`). Seed times are
    `sample(..., seed_time=...)` or, by default, `node_time` at the seeds (PyG's node time
    attribute). `temporal_strategy` is PyG's: "uniform" picks, or the "last" (most recent)
    fanout edges, without replacement. With `weights` too (GraphBolt's temporal sampling with
    probabilities; strategy "uniform"), a destination picks among its candidates by weight,
    as above. Graph lists not in time order are sampled from a sorted
    copy (edge ids stay the caller's). `disjoint` samples each seed on its own without times
    (PyG's disjoint=True): repeated seeds, Block.seed_index; a temporal sampler always is.
    """

    name = "fused"

    def __init__(self, graph: CSCGraph | TypedGraph, fanouts: Sequence[int] | Sequence[dict],
                 replace: bool = False, seed: int = 0, device: torch.device | str | None = None,
                 edge_ids: bool = False, target: str | None = None, weights: object = None,
                 times: object = None, node_time: object = None,
                 temporal_strategy: str = "uniform", time_window: int | None = None,
                 disjoint: bool = False):
        self.typed = isinstance(graph, TypedGraph)
        if self.typed:
            self.graph = graph
            self.fanouts = check_typed_fanouts(fanouts, graph)
            self.target = None if target is None else graph.node_type(target)
        else:
            self.graph = check_graph(graph)
            self.fanouts = check_fanouts(fanouts)
            if target is not None:
                raise ValueError("target names a node type of a typed graph; this graph is "
                                 "homogeneous")
            self.target = None
        self.replace = check_bool("replace", replace)
        self.seed = check_seed(seed)
        self.edge_ids = check_bool("edge_ids", edge_ids)
        self.device = _sampling_device(self.graph, device)
        self.temporal = TemporalArgs.build(self.graph, times, node_time, temporal_strategy,
                                           time_window, weights=weights, replace=self.replace,
                                           device=self.device,
                                           disjoint=check_bool("disjoint", disjoint))
        self.weights = self._op_weights(weights)
        self._node_map: torch.Tensor | None = None  # dense relabel map, all -1 between calls
        self._edge_positions: dict | None = None  # per relation, for `exclude` (built on use)
        self._lock = threading.Lock()
        _LIVE_SAMPLERS.add(self)

    def _op_weights(self, weights: object) -> list[EdgeWeights | None] | None:
        """Per relation (the graph's order) its sampling arrays where the relation is weighted,
        where the op reads them (pinned for a GPU that samples a CPU graph)."""
        if weights is None:
            return None
        # a temporal sampler's lists are in time order: its tables are built over those
        g = self.graph if self.temporal is None else self.temporal.graph
        if self.typed:
            by_rel = relation_weights(weights, g.relations, g.relation)
            out = [by_rel.get(rel) for rel in g.canonical_relations]
        else:
            out = [edge_weights(g, weights)]
        if self.device != self.graph.device:
            out = [w.pin_memory() if w is not None else None for w in out]
        return out

    def _weight_args(self) -> tuple[list, list, list]:
        """The op's edge_weights, alias_tables and positive_counts lists (empty if uniform)."""
        if self.weights is None:
            return [], [], []
        args = [(None, None, None) if w is None else w.op_args() for w in self.weights]
        return [a[0] for a in args], [a[1] for a in args], [a[2] for a in args]

    def __getstate__(self) -> dict:
        # The op's node map is per sampler object: a copy (a worker process's unpickled one, a
        # worker thread's copy.copy) builds its own instead of sharing or pickling it.
        state = self.__dict__.copy()
        state["_node_map"] = None
        del state["_lock"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        _LIVE_SAMPLERS.add(self)

    def _reset_after_fork(self) -> None:
        """In a forked child: a new lock, and a new node map if a call was in flight."""
        if self._lock.locked():
            self._node_map = None
        self._lock = threading.Lock()

    def sample(self, seeds: torch.Tensor | dict[str, torch.Tensor], batch_id: int = 0,
               seed_time: torch.Tensor | dict[str, torch.Tensor] | None = None,
               exclude: torch.Tensor | dict | None = None) -> MiniBatch:
        """Sample the blocks of one mini-batch rooted at `seeds` (unique node ids in
        [0, num_nodes): the op checks both while it maps them, raising ValueError; on a typed
        graph {node type: ids}, checked here). A temporal sampler takes repeated seeds and
        samples each at its `seed_time` (default: its node_time). `exclude`: edge ids (as
        blocks report them, on this sampler's device like the seeds; on a typed graph
        {relation: edge ids}) this batch must not sample, each destination sampling among its
        other neighbours (DGL's `exclude_edges`); on a temporal sampler every seed's subgraph
        leaves them out (a link's own edge is no neighbour at its time)."""
        batch_id = check_seed(batch_id, "batch_id")
        excluded = self._excluded_args(exclude)
        if self.temporal is not None:
            return self._sample_temporal(seeds, batch_id, seed_time, excluded)
        if seed_time is not None:
            raise ValueError("seed_time needs a temporal sampler (FusedSampler(..., times=...))")
        if self.typed:
            return self._sample_typed(seeds, batch_id, excluded)
        seeds = seed_tensor(seeds, self.device)
        g = self.graph
        if self.edge_ids or self.weights is not None or excluded:
            weights = self._weight_args()
            flat = self._run(g.num_nodes, lambda node_map: _ops.ops.sample_fused_typed(
                [g.indptr], [g.indices], [0], [0], [g.num_nodes], [seeds], self.fanouts,
                self.replace, self.seed, batch_id, self.edge_ids, *weights, [], [], -1, 0,
                excluded, node_map))
            blocks = blocks_from_op(flat, self.edge_ids, g.edge_ids)
        else:
            flat = self._run(g.num_nodes, lambda node_map: _ops.ops.sample_fused(
                g.indptr, g.indices, seeds, self.fanouts, self.replace, self.seed, batch_id,
                node_map))
            blocks = blocks_from_op(flat)
        return MiniBatch(seeds, blocks[0].src_nodes, blocks, batch_id=batch_id)

    def prepare_exclusion(self) -> None:
        """Build now what `sample(..., exclude=...)` needs (per relation its edge id ->
        position map, 8 bytes an edge where the graph keeps edge ids), rather than in the first
        excluding call: a link-prediction loader's first batch then costs what the others do."""
        if self._edge_positions is None:
            g = self.graph if self.temporal is None else self.temporal.graph  # its positions
            rels = g.relations if self.typed else {None: g}
            self._edge_positions = {rel: EdgePositions(csc) for rel, csc in rels.items()}
            for positions in self._edge_positions.values():
                positions.build()

    def _excluded_args(self, exclude: object) -> list[torch.Tensor | None]:
        """The op's excluded_edges list for `exclude` (empty for None): positions on the
        graph's device, where its edge id maps live, pinned for a GPU that samples a CPU
        graph (the op reads them over UVA, as it reads the graph)."""
        if exclude is None:
            return []
        self.prepare_exclusion()
        if self.typed:
            out = excluded_args(exclude, self._edge_positions, self.graph.canonical_relations,
                                self.device, self.graph.relation)
        else:
            out = excluded_args(exclude, self._edge_positions, [None], self.device)
        if self.device != self.graph.device:
            out = [p.pin_memory() if p is not None else None for p in out]
        return out

    def _sample_typed(self, seeds: object, batch_id: int,
                      excluded: list[torch.Tensor | None]) -> MiniBatch:
        g = self.graph
        if isinstance(seeds, torch.Tensor) and self.target is not None:
            seeds = {self.target: seeds}
        seed_list = typed_seed_tensors(seeds, g, self.device)
        indptrs, indices, src_types, dst_types, num_nodes = op_graph_args(g)
        fanouts = [f for layer in self.fanouts for f in layer]
        weights = self._weight_args()
        flat = self._run(sum(num_nodes), lambda node_map: _ops.ops.sample_fused_typed(
            indptrs, indices, src_types, dst_types, num_nodes, seed_list, fanouts, self.replace,
            self.seed, batch_id, self.edge_ids, *weights, [], [], -1, 0, excluded, node_map))
        blocks = typed_blocks_from_op(flat, g, seed_list, self.edge_ids)
        seed_dict = {t: s for t, s in zip(g.node_types, seed_list) if t in seeds}
        return MiniBatch(seed_dict, blocks[0].src_nodes, blocks, batch_id=batch_id)

    def _sample_temporal(self, seeds: object, batch_id: int, seed_time: object,
                         excluded: list[torch.Tensor | None]) -> MiniBatch:
        """sample() of a temporal or disjoint sampler: one op call, typed or not, each seed on
        its own."""
        t = self.temporal
        g = t.graph  # self.graph with its lists in time order (edge ids: the caller's)
        if self.typed:
            if isinstance(seeds, torch.Tensor) and self.target is not None:
                seeds = {self.target: seeds}
                if isinstance(seed_time, torch.Tensor):
                    seed_time = {self.target: seed_time}
            seed_list = typed_seed_tensors(seeds, g, self.device, unique=False)
            indptrs, indices, src_types, dst_types, num_nodes = op_graph_args(g)
            fanouts = [f for layer in self.fanouts for f in layer]
        else:
            seed_list = [repeatable_seeds(seeds, g.num_nodes, "seeds", self.device)]
            indptrs, indices, src_types, dst_types = [g.indptr], [g.indices], [0], [0]
            num_nodes, fanouts = [g.num_nodes], self.fanouts
        times = t.seed_times(seed_list, seed_time)
        flat = self._run(sum(num_nodes), lambda node_map: _ops.ops.sample_fused_typed(
            indptrs, indices, src_types, dst_types, num_nodes, seed_list, fanouts, self.replace,
            self.seed, batch_id, self.edge_ids, *self._weight_args(), t.edge_times, times,
            t.window, t.strategy, excluded, node_map))
        if not self.typed:
            blocks = blocks_from_op(flat, self.edge_ids, g.edge_ids, with_seed_index=True)
            return MiniBatch(seed_list[0], blocks[0].src_nodes, blocks, batch_id=batch_id)
        blocks = typed_blocks_from_op(flat, g, seed_list, self.edge_ids, with_seed_index=True)
        seed_dict = {nt: s for nt, s in zip(g.node_types, seed_list) if nt in seeds}
        return MiniBatch(seed_dict, blocks[0].src_nodes, blocks, batch_id=batch_id)

    def _run(self, map_size: int,
             op: Callable[[torch.Tensor], list[torch.Tensor]]) -> list[torch.Tensor]:
        """Runs `op(node_map)` with this sampler's node map, one call at a time."""
        with self._lock:  # the node map is shared by calls on this sampler
            if self._node_map is None:
                self._node_map = torch.full((map_size,), -1, dtype=torch.int32,
                                            device=self.device)
            return op(self._node_map)


def _sampling_device(graph: CSCGraph | TypedGraph, device: object) -> torch.device:
    """Where the op runs: the graph's device, or a GPU that reads a pinned CPU graph over UVA."""
    if device is None:
        device = graph.device
        if device.type != "cuda":
            return device
    device = check_device(device)
    if device.type == "cuda" and not _ops.cuda_compiled():
        raise RuntimeError("this build of gnnrepro has no CUDA kernels: reinstall it with a CUDA "
                           "torch and nvcc present (or FORCE_CUDA=1)")
    if device == graph.device:
        return device
    if device.type == "cuda" and graph.device.type == "cpu":
        csc_list = graph.relations.values() if isinstance(graph, TypedGraph) else [graph]
        if not all(c.indptr.is_pinned() and (c.indices.numel() == 0 or c.indices.is_pinned())
                   for c in csc_list):
            raise ValueError(f"sampling on {device} from a CPU graph needs its arrays pinned: "
                             "call graph.pin_memory_() first, or move the graph to the GPU")
        return device
    raise ValueError(f"a graph on {graph.device} cannot be sampled on {device}")
