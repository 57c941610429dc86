"""A Block's neighbour mean of h (and its destination rows), with a lean backward on the CPU.

SAGEConv needs h[:num_dst] (for W_self) and the mean of each destination's sampled neighbours
(for W_neigh); R-GCN needs the mean alone, per relation. Written as a slice plus
`embedding_bag`, autograd gives h two gradients of h's full size and adds them: the slice's
backward zero-fills a [num_src, d] tensor to copy num_dst rows into, the bag's backward fills
another, and the sum writes a third. Here the bag's gradient is the buffer and the
destination rows' gradient is added into its first num_dst rows in place: one [num_src, d]
buffer instead of three (measured: benchmarks/NOTES.md, "the model's gradient buffers").

On the CPU the bag's gradient comes from `gnnrepro::neighbour_mean_backward` (a counting sort
by source instead of torch's sort: benchmarks/NOTES.md, "the neighbour mean's backward");
elsewhere from torch's embedding_bag backward.
"""
from __future__ import annotations

import torch

from gnnrepro import _ops
from gnnrepro.sampling.block import Block

__all__ = ["dst_rows_and_neighbour_mean", "neighbour_mean"]

_MEAN = 1  # embedding_bag's mode number for "mean"


class _DstRowsAndMean(torch.autograd.Function):
    """(h, indices, indptr, num_dst, with_dst) -> (h[:num_dst] as a copy if with_dst, else an
    empty tensor; mean over each bag of h)."""

    @staticmethod
    def forward(ctx, h: torch.Tensor, indices: torch.Tensor, indptr: torch.Tensor,
                num_dst: int, with_dst: bool) -> tuple[torch.Tensor, torch.Tensor]:
        ctx.num_src, ctx.width = h.shape[0], h.shape[1]
        ctx.num_dst = num_dst
        ctx.cpu = h.device.type == "cpu"
        if ctx.cpu:
            mean = _bag_mean(indices, h, indptr)
            ctx.save_for_backward(indices, indptr)
        else:
            mean, offset2bag, bag_size, max_indices = torch.ops.aten._embedding_bag(
                h, indices, indptr, False, _MEAN, False, None, True)
            ctx.save_for_backward(indices, offset2bag, bag_size, max_indices)
        dst = h[:num_dst].clone() if with_dst else h.new_empty(0)
        return dst, mean

    @staticmethod
    def backward(ctx, grad_dst: torch.Tensor | None, grad_mean: torch.Tensor | None):
        if grad_mean is None:
            grad_h = grad_dst.new_zeros((ctx.num_src, ctx.width))
        elif ctx.cpu:
            indices, indptr = ctx.saved_tensors
            grad_h = _ops.ops.neighbour_mean_backward(grad_mean, indptr, indices, ctx.num_src)
        else:
            indices, offset2bag, bag_size, max_indices = ctx.saved_tensors
            grad_h = torch.ops.aten._embedding_bag_dense_backward(
                grad_mean.contiguous(), indices, offset2bag, bag_size, max_indices, ctx.num_src,
                False, _MEAN, None)
        if grad_dst is not None and grad_dst.numel():
            grad_h[:ctx.num_dst] += grad_dst
        return grad_h, None, None, None, None


def _apply(block: Block, h: torch.Tensor, with_dst: bool) -> tuple[torch.Tensor, torch.Tensor]:
    # aten._embedding_bag reads its index tensors' memory in order (F.embedding_bag makes them
    # contiguous first): a strided view would be read wrongly.
    return _DstRowsAndMean.apply(h, block.indices.contiguous(), block.indptr.contiguous(),
                                 block.num_dst, with_dst)


def _bag_mean(indices: torch.Tensor, h: torch.Tensor, indptr: torch.Tensor) -> torch.Tensor:
    """The mean of h's rows `indices` over each bag of the CSC `indptr` (zeros for none)."""
    return torch.nn.functional.embedding_bag(indices, h, indptr, mode="mean",
                                             include_last_offset=True)


def dst_rows_and_neighbour_mean(block: Block,
                                h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(h[:block.num_dst], the mean of h over each destination's sampled neighbours; zeros for
    none). A multi-edge counts once per copy; indices are bounds-checked."""
    if not h.requires_grad:  # no gradient buffers to save: a view and the bag
        return h[:block.num_dst], _bag_mean(block.indices, h, block.indptr)
    return _apply(block, h, True)


def neighbour_mean(block: Block, h: torch.Tensor) -> torch.Tensor:
    """The mean of h over each destination's sampled neighbours (zeros for none), as
    dst_rows_and_neighbour_mean's second value."""
    if not h.requires_grad:
        return _bag_mean(block.indices, h, block.indptr)
    return _apply(block, h, False)[1]
