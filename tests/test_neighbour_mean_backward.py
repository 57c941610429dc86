"""gnnrepro::neighbour_mean_backward and the means built on it: torch's embedding_bag gradient
(empty bags, multi-edges, sources with no edge, both index dtypes), the same bits at any thread
count, gradcheck through neighbour_mean, and clear refusals of bad CSCs."""
from __future__ import annotations

import pytest
import torch

from gnnrepro import _ops
from gnnrepro.models.aggregate import neighbour_mean
from gnnrepro.sampling.block import Block


def _csc(num_dst: int, num_src: int, max_deg: int, seed: int,
         dtype: torch.dtype = torch.int64) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    deg = torch.randint(0, max_deg + 1, (num_dst,), generator=gen)  # some bags empty
    indptr = torch.cat([torch.zeros(1, dtype=torch.int64), deg.cumsum(0)])
    indices = torch.randint(0, num_src, (int(indptr[-1]),), generator=gen)  # repeats too
    return indptr.to(dtype), indices.to(dtype)


def _torch_grad(grad_mean, indptr, indices, num_src):
    h = torch.zeros(num_src, grad_mean.shape[1], dtype=grad_mean.dtype, requires_grad=True)
    mean = torch.nn.functional.embedding_bag(indices, h, indptr, mode="mean",
                                             include_last_offset=True)
    mean.backward(grad_mean)
    return h.grad


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
@pytest.mark.parametrize("shape", [(1, 1, 1), (40, 300, 6), (500, 60, 20)])
def test_equals_torchs_embedding_bag_gradient(dtype, shape):
    num_dst, num_src, max_deg = shape
    indptr, indices = _csc(num_dst, num_src, max_deg, seed=num_dst, dtype=dtype)
    grad_mean = torch.randn(num_dst, 9, dtype=torch.float64)
    ours = _ops.ops.neighbour_mean_backward(grad_mean, indptr, indices, num_src)
    torch.testing.assert_close(ours, _torch_grad(grad_mean, indptr, indices, num_src))
    untouched = torch.ones(num_src, dtype=torch.bool)
    untouched[indices.long()] = False
    assert torch.equal(ours[untouched], torch.zeros_like(ours[untouched]))


def test_same_bits_at_any_thread_count():
    indptr, indices = _csc(3000, 2000, 15, seed=1)
    grad_mean = torch.randn(3000, 33)
    before = torch.get_num_threads()
    try:
        outs = []
        for threads in (1, 2, 3):
            torch.set_num_threads(threads)
            outs.append(_ops.ops.neighbour_mean_backward(grad_mean, indptr, indices, 2000))
    finally:
        torch.set_num_threads(before)
    assert torch.equal(outs[0], outs[1]) and torch.equal(outs[0], outs[2])


def test_gradcheck_through_neighbour_mean():
    indptr, indices = _csc(7, 11, 4, seed=3)
    block = Block(indptr, indices, torch.arange(11), 7)
    h = torch.randn(11, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: neighbour_mean(block, x), (h,))
    torch.testing.assert_close(neighbour_mean(block, h), neighbour_mean(block, h.detach()))


@pytest.mark.parametrize("indptr,indices,grad,error,match", [
    ([0, 2, 3], [0, 5, 1], (2, 4), IndexError, "outside"),
    ([0, 2, 3], [0, -1, 1], (2, 4), IndexError, "outside"),
    ([0, 3, 2], [0, 1, 1], (2, 4), ValueError, "non-decreasing"),
    ([1, 2, 3], [0, 1, 1], (2, 4), ValueError, "indptr\\[0\\]"),
    ([0, 2, 4], [0, 1, 1], (2, 4), ValueError, "exceeds"),
    ([0, 2], [0, 1], (2, 4), ValueError, "num_dst \\+ 1"),
    ([0, 2, 3], [0, 1, 1], (6,), ValueError, "2-D"),
])
def test_refuses_bad_cscs(indptr, indices, grad, error, match):
    with pytest.raises(error, match=match):
        _ops.ops.neighbour_mean_backward(torch.ones(grad), torch.tensor(indptr),
                                         torch.tensor(indices), 5)


def test_refuses_mixed_index_dtypes_and_integer_gradients():
    with pytest.raises(TypeError, match="both be int64 or both int32"):
        _ops.ops.neighbour_mean_backward(torch.ones(2, 3), torch.tensor([0, 1, 2]),
                                         torch.tensor([0, 1], dtype=torch.int32), 4)
    with pytest.raises(TypeError, match="floating point"):
        _ops.ops.neighbour_mean_backward(torch.ones(2, 3, dtype=torch.int64),
                                         torch.tensor([0, 1, 2]), torch.tensor([0, 1]), 4)
