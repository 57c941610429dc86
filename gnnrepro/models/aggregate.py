"""A Block's destination rows and neighbour mean of h, with one gradient buffer for both.

SAGEConv needs h[:num_dst] (for W_self) and the mean of each destination's sampled neighbours
(for W_neigh). Written as a slice plus `embedding_bag`, autograd gives h two gradients of
h's full size and adds them: the slice's backward zero-fills a [num_src, d] tensor to copy
num_dst rows into, the bag's backward fills another, and the sum writes a third. Here the
bag's gradient is the buffer and the destination rows' gradient is added into its first
num_dst rows in place: one [num_src, d] buffer instead of three (measured:
benchmarks/NOTES.md, "the model's gradient buffers").
"""
from __future__ import annotations

import torch

from gnnrepro.sampling.block import Block

__all__ = ["dst_rows_and_neighbour_mean"]

_MEAN = 1  # embedding_bag's mode number for "mean"


class _DstRowsAndMean(torch.autograd.Function):
    """(h, indices, indptr, num_dst) -> (h[:num_dst] as a copy, mean over each bag of h)."""

    @staticmethod
    def forward(ctx, h: torch.Tensor, indices: torch.Tensor, indptr: torch.Tensor,
                num_dst: int) -> tuple[torch.Tensor, torch.Tensor]:
        mean, offset2bag, bag_size, max_indices = torch.ops.aten._embedding_bag(
            h, indices, indptr, False, _MEAN, False, None, True)
        ctx.save_for_backward(indices, offset2bag, bag_size, max_indices)
        ctx.num_src = h.shape[0]
        ctx.num_dst = num_dst
        return h[:num_dst].clone(), mean

    @staticmethod
    def backward(ctx, grad_dst: torch.Tensor | None, grad_mean: torch.Tensor | None):
        indices, offset2bag, bag_size, max_indices = ctx.saved_tensors
        if grad_mean is None:
            grad_h = grad_dst.new_zeros((ctx.num_src, grad_dst.shape[1]))
        else:
            grad_h = torch.ops.aten._embedding_bag_dense_backward(
                grad_mean.contiguous(), indices, offset2bag, bag_size, max_indices, ctx.num_src,
                False, _MEAN, None)
        if grad_dst is not None:
            grad_h[:ctx.num_dst] += grad_dst
        return grad_h, None, None, None


def dst_rows_and_neighbour_mean(block: Block,
                                h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(h[:block.num_dst], the mean of h over each destination's sampled neighbours; zeros for
    none). A multi-edge counts once per copy; indices are bounds-checked."""
    if not h.requires_grad:  # no gradient buffers to save: a view and the bag
        return h[:block.num_dst], torch.nn.functional.embedding_bag(
            block.indices, h, block.indptr, mode="mean", include_last_offset=True)
    # aten._embedding_bag reads its index tensors' memory in order (F.embedding_bag makes them
    # contiguous first): a strided view would be read wrongly.
    return _DstRowsAndMean.apply(h, block.indices.contiguous(), block.indptr.contiguous(),
                                 block.num_dst)
