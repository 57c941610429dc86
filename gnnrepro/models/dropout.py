"""ReLU followed by dropout, fused into one C++ pass on the CPU (and one for its backward).

Why: torch's CPU dropout draws a Bernoulli sample per element serially, then multiplies, and so
costs a large share of a GraphSAGE step on a few cores; the fused op draws its keep decisions
from a counter-based generator in parallel, in the same pass as the ReLU (measured:
benchmarks/NOTES.md, "The model's dropout"). Each call's generator seed comes from torch's
default generator, so `torch.manual_seed` makes training reproducible as before. Same
distribution as `dropout(relu(h))` (keep probability 1 - p to within 2^-32), not the same
random stream. Other devices use torch's own ops.
"""
from __future__ import annotations

import torch
from torch import nn

from gnnrepro import _ops

__all__ = ["ReluDropout", "check_dropout", "relu_dropout"]

_SEED_BOUND = 2 ** 62


class _ReluDropoutCPU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, h: torch.Tensor, p: float, seed: int) -> torch.Tensor:
        out = _ops.ops.relu_dropout(h, p, seed)
        ctx.save_for_backward(out)
        ctx.p = p
        return out

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        (out,) = ctx.saved_tensors
        return _ops.ops.relu_dropout_backward(grad, out, ctx.p), None, None


def relu_dropout(h: torch.Tensor, p: float, training: bool = True) -> torch.Tensor:
    """`dropout(relu(h), p)` when training, `relu(h)` otherwise."""
    if not training or p == 0.0:
        return torch.relu(h)
    if h.device.type != "cpu" or not h.is_floating_point():
        return nn.functional.dropout(torch.relu(h), p, True)
    seed = int(torch.randint(_SEED_BOUND, (1,)).item())
    return _ReluDropoutCPU.apply(h, p, seed)


def check_dropout(dropout: float) -> float:
    """`dropout` as a float in [0, 1), else TypeError / ValueError naming it."""
    if isinstance(dropout, bool) or not isinstance(dropout, (int, float)):
        raise TypeError(f"dropout must be a float, got {type(dropout).__name__}")
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"dropout must lie in [0, 1), got {dropout}")
    return float(dropout)


class ReluDropout(nn.Module):
    """nn.ReLU then nn.Dropout(dropout), as one module (see the module doc)."""

    def __init__(self, dropout: float):
        super().__init__()
        self.p = check_dropout(dropout)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return relu_dropout(h, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"
