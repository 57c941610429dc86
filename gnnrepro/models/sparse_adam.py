"""SparseAdam for learnt embeddings, its update of a CPU parameter's rows in one pass.

torch.optim.SparseAdam's update of the rows a sparse gradient names is eight separate passes
with their temporaries (gathers of both moments, their updates, index_adds back, the ratio,
another index_add): the largest part of an R-GCN step on the CPU (benchmarks/NOTES.md,
"SparseAdam in one pass"). This subclass coalesces the gradient as torch's does and then
updates each row's moments and parameter in one pass (`gnnrepro::sparse_adam_`: torch's
arithmetic, with a correctly rounded square root where torch's vectorised one may be an ulp
off). Its state, state_dict and name are torch's, so checkpoints and the
"Adam+SparseAdam" identity of results carry over. Other devices, dtypes, gradients and `maximize` take
torch's update (which refuses dense gradients).
"""
from __future__ import annotations

from collections.abc import Callable

import torch

from gnnrepro import _ops

__all__ = ["SparseAdam"]


def _fused(param: torch.Tensor, maximize: bool) -> bool:
    """Whether the one-pass CPU update serves `param` and its gradient (sparse in its first
    dimension, as nn.Embedding(sparse=True) gives it)."""
    return (not maximize and param.device.type == "cpu" and param.is_contiguous()
            and param.dtype in (torch.float32, torch.float64) and param.grad.is_sparse
            and param.grad.sparse_dim() == 1)


class SparseAdam(torch.optim.SparseAdam):
    """torch.optim.SparseAdam (same arguments and state, results equal to rounding), one pass
    per parameter on the CPU."""

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:
        """One update of every parameter with a gradient; `closure` re-evaluates the loss."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            maximize = group.get("maximize", False)
            if not all(_fused(p, maximize) for p in group["params"] if p.grad is not None):
                super().step()  # this group (and the others) as torch updates them
                return loss
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr = float(group["lr"])
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:  # as torch initialises it
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    state["exp_avg_sq"] = torch.zeros_like(p,
                                                           memory_format=torch.preserve_format)
                state["step"] += 1
                grad = p.grad.coalesce()
                if grad._values().numel() == 0:
                    continue
                _ops.ops.sparse_adam_(p, state["exp_avg"], state["exp_avg_sq"],
                                      grad._indices()[0].contiguous(),
                                      grad._values().contiguous(), lr, beta1, beta2,
                                      group["eps"], int(state["step"]))
        return loss
