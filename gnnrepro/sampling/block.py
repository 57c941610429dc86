"""Block and MiniBatch: what a sampler produces and a model consumes.

A Block is one GNN layer's bipartite graph in DGL's convention: its first `num_dst` source nodes
are its destination nodes, in order, and it is stored as CSC (`indptr` over destinations,
`indices` into the block's local source ids). A TypedBlock is one layer of a typed graph: a Block
per relation plus per node type its source ids (destinations first); a Block is its one-type,
one-relation case.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

__all__ = ["Block", "TypedBlock", "MiniBatch", "on_cpu"]

Relation = tuple[str, str, str]
#: A function applied to every tensor of a batch (a move, pinning, packing to numpy).
TensorFn = Callable[[Any], Any]


@dataclass
class Block:
    """One sampled layer: CSC over `num_dst` destinations; `src_nodes` are global ids.

    In a typed graph's relation whose source and destination types differ, `src_nodes` are the
    source type's and `dst_ids` the destination type's (both type-local ids)."""

    indptr: torch.Tensor     # int64 [num_dst + 1]
    indices: torch.Tensor    # int64 [num_edges], local source ids in [0, num_src)
    src_nodes: torch.Tensor  # int64 [num_src], global ids; the first num_dst are the destinations
    num_dst: int
    edge_ids: torch.Tensor | None = None  # int64 [num_edges]: the graph's id of each edge
    dst_ids: torch.Tensor | None = None   # the destinations, where they are not src_nodes' first
    # int64 [num_src], temporal (disjoint) sampling only: the index of the seed whose subgraph
    # each source belongs to (PyG's disjoint `batch`); a node reached from two seeds is two
    # sources.
    seed_index: torch.Tensor | None = None

    @property
    def num_src(self) -> int:
        return self.src_nodes.numel()

    @property
    def num_edges(self) -> int:
        return self.indices.numel()

    @property
    def dst_nodes(self) -> torch.Tensor:
        return self.src_nodes[: self.num_dst] if self.dst_ids is None else self.dst_ids

    def in_degrees(self) -> torch.Tensor:
        """Number of sampled neighbours of each destination (int64 [num_dst])."""
        return self.indptr[1:] - self.indptr[:-1]

    def edge_dst(self) -> torch.Tensor:
        """Local destination id of every edge (int64 [num_edges]): with `indices`, the block's
        edges as COO (src, dst) pairs."""
        return torch.repeat_interleave(
            torch.arange(self.num_dst, device=self.indptr.device), self.in_degrees(),
            output_size=self.num_edges)

    def apply(self, fn: TensorFn) -> "Block":
        """This block with `fn` applied to each of its tensors."""
        return Block(fn(self.indptr), fn(self.indices), fn(self.src_nodes), self.num_dst,
                     _maybe(fn, self.edge_ids), _maybe(fn, self.dst_ids),
                     _maybe(fn, self.seed_index))

    def tensors(self) -> list[torch.Tensor]:
        return [t for t in (self.indptr, self.indices, self.src_nodes, self.edge_ids,
                            self.dst_ids, self.seed_index) if t is not None]

    def to(self, device: torch.device | str, non_blocking: bool = False) -> "Block":
        return self.apply(lambda t: t.to(device, non_blocking=non_blocking))

    def __repr__(self) -> str:
        return f"Block(num_src={self.num_src}, num_dst={self.num_dst}, num_edges={self.num_edges})"


@dataclass
class TypedBlock:
    """One sampled layer of a typed graph: per relation a Block (CSC over its destination type's
    destinations, `indices` into its source type's sources), and per node type its source ids,
    the first `num_dst[type]` of which are its destinations, in order. Every relation of the
    graph is present, empty where nothing was sampled."""

    blocks: dict[Relation, Block]
    src_nodes: dict[str, torch.Tensor]
    num_dst: dict[str, int]
    seed_index: dict[str, torch.Tensor] | None = None  # per type: Block.seed_index

    @property
    def num_src(self) -> dict[str, int]:
        return {t: ids.numel() for t, ids in self.src_nodes.items()}

    @property
    def num_edges(self) -> dict[Relation, int]:
        return {rel: b.num_edges for rel, b in self.blocks.items()}

    @property
    def dst_nodes(self) -> dict[str, torch.Tensor]:
        return {t: ids[: self.num_dst[t]] for t, ids in self.src_nodes.items()}

    def apply(self, fn: TensorFn) -> "TypedBlock":
        """This block with `fn` applied to each of its tensors once (a relation's source ids
        stay its type's)."""
        src = {t: fn(ids) for t, ids in self.src_nodes.items()}
        seed_index = _maybe(fn, self.seed_index)
        return TypedBlock(
            {rel: relation_block(fn(b.indptr), fn(b.indices), _maybe(fn, b.edge_ids), rel, src,
                                 self.num_dst, seed_index)
             for rel, b in self.blocks.items()}, src, dict(self.num_dst), seed_index)

    def tensors(self) -> list[torch.Tensor]:
        out = list(self.src_nodes.values())
        out += list(self.seed_index.values()) if self.seed_index is not None else []
        for b in self.blocks.values():
            out += [t for t in (b.indptr, b.indices, b.edge_ids) if t is not None]
        return out

    def to(self, device: torch.device | str, non_blocking: bool = False) -> "TypedBlock":
        return self.apply(lambda t: t.to(device, non_blocking=non_blocking))

    def __repr__(self) -> str:
        return (f"TypedBlock(num_src={self.num_src}, num_dst={self.num_dst}, "
                f"num_edges={self.num_edges})")


def relation_block(indptr: torch.Tensor, indices: torch.Tensor, edge_ids: torch.Tensor | None,
                   rel: Relation, src_nodes: dict[str, torch.Tensor], num_dst: dict[str, int],
                   seed_index: dict[str, torch.Tensor] | None = None) -> Block:
    """The Block of relation `rel` in a typed layer whose per-type sources are `src_nodes`
    (and, sampled temporally, their seed indices `seed_index`)."""
    src_type, _, dst_type = rel
    n = num_dst[dst_type]
    dst_ids = None if src_type == dst_type else src_nodes[dst_type][:n]
    return Block(indptr, indices, src_nodes[src_type], n, edge_ids, dst_ids,
                 None if seed_index is None else seed_index[src_type])


def _maybe(fn: TensorFn, t: object) -> object:
    """`fn` of a tensor, or of each tensor of a dict; None stays None."""
    if t is None:
        return None
    if isinstance(t, dict):
        return {k: fn(v) for k, v in t.items()}
    return fn(t)


def on_cpu(ids: torch.Tensor | dict[str, torch.Tensor]) -> torch.Tensor | dict[str, torch.Tensor]:
    """Node ids (a tensor, or a dict by node type) on the CPU."""
    return _maybe(lambda t: t.cpu(), ids)


@dataclass
class MiniBatch:
    """Seeds, the input nodes whose features the first layer reads, and blocks, input first.

    On a typed graph seeds, input_nodes and x are dicts by node type and blocks TypedBlocks."""

    seeds: torch.Tensor | dict[str, torch.Tensor]
    input_nodes: torch.Tensor | dict[str, torch.Tensor]
    blocks: list[Block] | list[TypedBlock]
    x: torch.Tensor | dict[str, torch.Tensor] | None = None
    y: torch.Tensor | None = None
    batch_id: int = 0

    @property
    def is_typed(self) -> bool:
        return isinstance(self.seeds, dict)

    @property
    def seed_ids(self) -> torch.Tensor:
        """The ids whose labels the batch trains on: its seeds, or on a typed graph the seeds
        of its one seeded node type."""
        if not self.is_typed:
            return self.seeds
        if len(self.seeds) != 1:
            raise ValueError(f"a batch seeded with several node types ({sorted(self.seeds)}) "
                             "has no one label set")
        return next(iter(self.seeds.values()))

    @property
    def num_layers(self) -> int:
        return len(self.blocks)

    def to(self, device: torch.device | str, non_blocking: bool = False) -> "MiniBatch":
        """The batch on `device`; input_nodes that are the first block's src_nodes (as
        samplers make them) are moved once and stay shared."""
        return self.apply(lambda t: t.to(device, non_blocking=non_blocking))

    def apply(self, fn: TensorFn) -> "MiniBatch":
        """This batch with `fn` applied to each of its tensors once (input_nodes that are the
        first block's src_nodes stay shared)."""
        blocks = [b.apply(fn) for b in self.blocks]
        shared = bool(blocks) and self.input_nodes is self.blocks[0].src_nodes
        return MiniBatch(_maybe(fn, self.seeds),
                         blocks[0].src_nodes if shared else _maybe(fn, self.input_nodes),
                         blocks, _maybe(fn, self.x), _maybe(fn, self.y), self.batch_id)

    def tensors(self) -> list[torch.Tensor]:
        """Every tensor of the batch, once each (for record_stream)."""
        out = [t for field in (self.seeds, self.input_nodes, self.x, self.y) if field is not None
               for t in (field.values() if isinstance(field, dict) else [field])]
        return out + [t for b in self.blocks for t in b.tensors()]
