"""Block and MiniBatch: what a sampler produces and a model consumes.

A Block is one GNN layer's bipartite graph in DGL's convention: its first `num_dst` source nodes
are its destination nodes, in order, and it is stored as CSC (`indptr` over destinations,
`indices` into the block's local source ids).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["Block", "MiniBatch"]


@dataclass
class Block:
    """One sampled layer: CSC over `num_dst` destinations; `src_nodes` are global ids."""

    indptr: torch.Tensor     # int64 [num_dst + 1]
    indices: torch.Tensor    # int64 [num_edges], local source ids in [0, num_src)
    src_nodes: torch.Tensor  # int64 [num_src], global ids; the first num_dst are the destinations
    num_dst: int

    @property
    def num_src(self) -> int:
        return self.src_nodes.numel()

    @property
    def num_edges(self) -> int:
        return self.indices.numel()

    @property
    def dst_nodes(self) -> torch.Tensor:
        return self.src_nodes[: self.num_dst]

    def in_degrees(self) -> torch.Tensor:
        """Number of sampled neighbours of each destination (int64 [num_dst])."""
        return self.indptr[1:] - self.indptr[:-1]

    def edge_dst(self) -> torch.Tensor:
        """Local destination id of every edge (int64 [num_edges]): with `indices`, the block's
        edges as COO (src, dst) pairs."""
        return torch.repeat_interleave(
            torch.arange(self.num_dst, device=self.indptr.device), self.in_degrees(),
            output_size=self.num_edges)

    def to(self, device: torch.device | str, non_blocking: bool = False) -> "Block":
        return Block(self.indptr.to(device, non_blocking=non_blocking),
                     self.indices.to(device, non_blocking=non_blocking),
                     self.src_nodes.to(device, non_blocking=non_blocking), self.num_dst)

    def __repr__(self) -> str:
        return f"Block(num_src={self.num_src}, num_dst={self.num_dst}, num_edges={self.num_edges})"


@dataclass
class MiniBatch:
    """Seeds, the input nodes whose features the first layer reads, and blocks, input first."""

    seeds: torch.Tensor
    input_nodes: torch.Tensor
    blocks: list[Block]
    x: torch.Tensor | None = None
    y: torch.Tensor | None = None
    batch_id: int = 0

    @property
    def num_layers(self) -> int:
        return len(self.blocks)

    def to(self, device: torch.device | str, non_blocking: bool = False) -> "MiniBatch":
        """The batch on `device`; input_nodes that are the first block's src_nodes (as
        samplers make them) are moved once and stay shared."""
        move = (lambda t: None if t is None else t.to(device, non_blocking=non_blocking))
        blocks = [b.to(device, non_blocking) for b in self.blocks]
        shared = bool(blocks) and self.input_nodes is self.blocks[0].src_nodes
        return MiniBatch(move(self.seeds),
                         blocks[0].src_nodes if shared else move(self.input_nodes), blocks,
                         move(self.x), move(self.y), self.batch_id)
