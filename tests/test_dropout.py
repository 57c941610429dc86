"""The fused ReLU + dropout (gnnrepro.models.dropout): distribution, gradients, determinism."""
from __future__ import annotations

import pytest
import torch

from gnnrepro._ops import ops
from gnnrepro.models.dropout import ReluDropout, relu_dropout


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_keeps_each_element_with_probability_one_minus_p_and_scales_it(p):
    h = torch.rand(400_003) + 0.5  # positive, odd length: a partial last draw and block
    out = ops.relu_dropout(h, p, 7)
    kept = out != 0
    n = h.numel()
    sd = (p * (1 - p) / n) ** 0.5
    assert abs(kept.float().mean().item() - (1 - p)) < 6 * sd
    scale = 65536 / (65536 - round(p * 65536))  # p is rounded to a multiple of 2^-16
    assert torch.allclose(out[kept], h[kept] * scale, rtol=1e-6)
    assert abs(out.mean().item() - h.mean().item()) < 0.02  # unbiased


def test_negative_inputs_give_zero_and_nan_stays_nan():
    h = torch.tensor([-1.0, -2.0, float("nan"), 3.0] * 1000)
    out = ops.relu_dropout(h, 0.5, 1)
    assert bool((out[0::4] == 0).all()) and bool((out[1::4] == 0).all())
    assert bool(out[2::4].isnan().all())


def test_the_same_seed_gives_the_same_mask_on_any_thread_count_and_other_seeds_differ():
    h = torch.rand(3, 50_000) + 0.1
    before = torch.get_num_threads()
    try:
        outs = []
        for threads in (1, 2, 4):
            torch.set_num_threads(threads)
            outs.append(ops.relu_dropout(h, 0.3, 123))
    finally:
        torch.set_num_threads(before)
    assert all(torch.equal(outs[0], o) for o in outs[1:])
    assert not torch.equal(outs[0], ops.relu_dropout(h, 0.3, 124))


def test_backward_is_the_mask_times_the_scale_and_passes_gradcheck():
    h = torch.randn(2, 37, dtype=torch.float64, requires_grad=True)
    torch.manual_seed(0)
    out = relu_dropout(h, 0.4)
    grad = torch.randn_like(out)
    (dh,) = torch.autograd.grad(out, h, grad)
    keep = (out != 0).double()
    scale = 65536 / (65536 - round(0.4 * 65536))
    assert torch.allclose(dh, grad * keep * scale)

    def fixed_seed(x: torch.Tensor) -> torch.Tensor:
        torch.manual_seed(5)
        return relu_dropout(x, 0.4)
    assert torch.autograd.gradcheck(fixed_seed, (h,))


def test_module_trains_with_the_default_generator_and_is_relu_in_eval():
    h = torch.randn(1000, 8)
    module = ReluDropout(0.5)
    torch.manual_seed(3)
    a = module(h)
    torch.manual_seed(3)
    assert torch.equal(a, module(h))  # reproducible by torch.manual_seed
    module.eval()
    assert torch.equal(module(h), torch.relu(h))
    assert torch.equal(ReluDropout(0.0).train()(h), torch.relu(h))


def test_half_and_bfloat16_inputs_keep_their_dtype():
    for dtype in (torch.float16, torch.bfloat16):
        out = ops.relu_dropout(torch.ones(1000, dtype=dtype), 0.5, 2)
        assert out.dtype == dtype and set(out.unique().tolist()) <= {0.0, 2.0}


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="dropout must lie in"):
        ReluDropout(1.0)
    with pytest.raises(TypeError, match="dropout must be a float"):
        ReluDropout("0.5")
    with pytest.raises(ValueError, match="p must lie in"):
        ops.relu_dropout(torch.ones(3), 1.5, 0)
    with pytest.raises(TypeError, match="h must be a floating-point tensor"):
        ops.relu_dropout(torch.ones(3, dtype=torch.int64), 0.5, 0)
    with pytest.raises(ValueError, match="same shape"):
        ops.relu_dropout_backward(torch.ones(3), torch.ones(4), 0.5)


def test_opcheck():
    h = torch.randn(5, 7)
    torch.library.opcheck(ops.relu_dropout, (h, 0.5, 3))
    torch.library.opcheck(ops.relu_dropout_backward, (h, ops.relu_dropout(h, 0.5, 3), 0.5))
