"""Fake-tensor (Meta) kernels of the gnnrepro ops, so they trace under torch.compile and
FakeTensorMode: output shapes without running the op (sizes that depend on the data are new
symbolic sizes). csrc/ops.cpp names this module for torch to import."""
from __future__ import annotations

import torch

__all__: list[str] = []


@torch.library.register_fake("gnnrepro::sample_fused")
def _sample_fused_fake(indptr: torch.Tensor, indices: torch.Tensor, seeds: torch.Tensor,
                       fanouts: list[int], replace: bool, seed: int, batch_id: int,
                       node_map: torch.Tensor) -> list[torch.Tensor]:
    ctx = torch.library.get_ctx()
    out: list[torch.Tensor] = [torch.empty(0)] * (3 * len(fanouts))
    num_dst = seeds.shape[0]
    for layer in range(len(fanouts) - 1, -1, -1):  # outward from the seeds, like the op
        num_edges, num_src = ctx.new_dynamic_size(), ctx.new_dynamic_size()
        out[3 * layer] = seeds.new_empty(num_dst + 1)
        out[3 * layer + 1] = seeds.new_empty(num_edges)
        out[3 * layer + 2] = seeds.new_empty(num_src)
        num_dst = num_src
    return out


@torch.library.register_fake("gnnrepro::gather_rows")
def _gather_rows_fake(src: torch.Tensor, index: torch.Tensor, out: torch.Tensor) -> None:
    return None


@torch.library.register_fake("gnnrepro::relu_dropout")
def _relu_dropout_fake(h: torch.Tensor, p: float, seed: int) -> torch.Tensor:
    return torch.empty_like(h, memory_format=torch.contiguous_format)


@torch.library.register_fake("gnnrepro::relu_dropout_backward")
def _relu_dropout_backward_fake(grad: torch.Tensor, out: torch.Tensor,
                                p: float) -> torch.Tensor:
    return torch.empty_like(grad, memory_format=torch.contiguous_format)
