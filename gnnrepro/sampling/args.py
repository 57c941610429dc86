"""Argument checks shared by every sampler, so all raise the same clear errors before any C++."""
from __future__ import annotations

from collections.abc import Sequence

import torch

from gnnrepro.checks import check_id_tensor, check_node_ids
from gnnrepro.graph import CSCGraph

MAX_FANOUT = 2**31 - 1  # block sizes are counted in int32 local ids
_MASK64 = (1 << 64) - 1


def check_graph(graph: object) -> CSCGraph:
    if not isinstance(graph, CSCGraph):
        raise TypeError(f"graph must be a gnnrepro.CSCGraph, got {type(graph).__name__}")
    if graph.num_src_nodes != graph.num_nodes:
        raise ValueError(f"graph has {graph.num_src_nodes} source and {graph.num_nodes} "
                         "destination nodes: a bipartite relation is sampled as part of a "
                         "TypedGraph")
    return graph


def check_fanouts(fanouts: Sequence[int]) -> list[int]:
    """Fanouts as a list of ints, each -1 (all neighbours) or >= 1."""
    if isinstance(fanouts, (str, bytes)) or not isinstance(fanouts, Sequence):
        raise TypeError(f"fanouts must be a sequence of ints, got {type(fanouts).__name__}")
    if len(fanouts) == 0:
        raise ValueError("fanouts must not be empty (one fanout per GNN layer)")
    out = []
    for i, f in enumerate(fanouts):
        if isinstance(f, bool) or not isinstance(f, int):
            raise TypeError(f"fanouts[{i}] must be an int, got {type(f).__name__}")
        if f == 0 or f < -1 or f > MAX_FANOUT:
            raise ValueError(f"fanouts[{i}] = {f}: a fanout must be -1 (all neighbours) or in "
                             f"[1, {MAX_FANOUT}]")
        out.append(int(f))
    return out


def check_seed(seed: int, name: str = "seed") -> int:
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"{name} must be an int, got {type(seed).__name__}")
    if not -(2**63) <= seed < 2**63:
        raise ValueError(f"{name} = {seed} does not fit in int64")
    return seed


def check_seeds(seeds: object, graph: CSCGraph,
                device: torch.device | None = None) -> torch.Tensor:
    """Seeds as a contiguous int64 tensor on `device` (default: the graph's): 1-D, unique, in
    range."""
    seeds = check_node_ids(seeds, graph.num_nodes, "seeds",
                           graph.device if device is None else device)
    seeds = seeds.to(torch.int64).contiguous()
    if seeds.numel() and torch.unique(seeds).numel() != seeds.numel():
        raise ValueError("seeds must be unique node ids")
    return seeds


def seed_tensor(seeds: object, device: torch.device) -> torch.Tensor:
    """Seeds as a contiguous 1-D int64 tensor on `device`: type, shape and device only. For the
    fused op, which checks range and uniqueness itself (ValueError naming seeds) while it maps
    them, so the hot path passes over the seeds once."""
    return check_id_tensor(seeds, "seeds", device).to(torch.int64).contiguous()


def stream_seed(seed: int, batch_id: int) -> int:
    """A non-negative int31 that mixes (seed, batch_id), for RNGs seeded with one integer.

    Plain arithmetic like seed * K + batch_id collides ((0, K) and (1, 0)), and generators that
    seed their threads with seed + thread id need unrelated seeds for consecutive batches, so
    mix with the splitmix64 finaliser.
    """
    z = (seed * 0x9E3779B97F4A7C15 + batch_id + 1) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return (z ^ (z >> 31)) & 0x3FFFFFFF
