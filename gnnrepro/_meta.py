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


@torch.library.register_fake("gnnrepro::sample_fused_typed")
def _sample_fused_typed_fake(indptrs: list[torch.Tensor], indices: list[torch.Tensor],
                             src_types: list[int], dst_types: list[int], num_nodes: list[int],
                             seeds: list[torch.Tensor], fanouts: list[int], replace: bool,
                             seed: int, batch_id: int, return_eids: bool,
                             edge_weights: list[torch.Tensor | None],
                             alias_tables: list[torch.Tensor | None],
                             positive_counts: list[torch.Tensor | None],
                             edge_times: list[torch.Tensor | None], seed_times: list[torch.Tensor],
                             time_window: int, temporal_strategy: int,
                             excluded_edges: list[torch.Tensor | None],
                             node_map: torch.Tensor) -> list[torch.Tensor]:
    ctx = torch.library.get_ctx()
    rels, types = len(indptrs), len(num_nodes)
    per_rel = 3 if return_eids else 2
    per_type = 2 if seed_times else 1  # a temporal call adds each source's seed index
    per_layer = per_rel * rels + per_type * types
    layers = len(fanouts) // rels
    out: list[torch.Tensor] = [torch.empty(0)] * (per_layer * layers)
    num_dst = [s.shape[0] for s in seeds]
    ref = node_map.new_empty(0, dtype=torch.int64)
    for layer in range(layers - 1, -1, -1):  # outward from the seeds, like the op
        base = per_layer * layer
        for r in range(rels):
            num_edges = ctx.new_dynamic_size()
            out[base + per_rel * r] = ref.new_empty(num_dst[dst_types[r]] + 1)
            out[base + per_rel * r + 1] = ref.new_empty(num_edges)
            if return_eids:
                out[base + per_rel * r + 2] = ref.new_empty(num_edges)
        num_dst = [ctx.new_dynamic_size() for _ in range(types)]
        for t in range(types):
            for k in range(per_type):
                out[base + per_rel * rels + k * types + t] = ref.new_empty(num_dst[t])
    return out


@torch.library.register_fake("gnnrepro::weight_table")
def _weight_table_fake(indptr: torch.Tensor, indices: torch.Tensor,
                       weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    words = 2 if indices.dtype == torch.int32 else 3
    return indptr.new_empty(words * weights.shape[0]), indptr.new_empty(indptr.shape[0] - 1)


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


@torch.library.register_fake("gnnrepro::sparse_adam_")
def _sparse_adam_fake(param: torch.Tensor, exp_avg: torch.Tensor, exp_avg_sq: torch.Tensor,
                      indices: torch.Tensor, values: torch.Tensor, lr: float, beta1: float,
                      beta2: float, eps: float, step: int) -> None:
    return None


@torch.library.register_fake("gnnrepro::neighbour_mean_backward")
def _neighbour_mean_backward_fake(grad_mean: torch.Tensor, indptr: torch.Tensor,
                                  indices: torch.Tensor, num_src: int) -> torch.Tensor:
    return grad_mean.new_empty((num_src, grad_mean.shape[1]))
