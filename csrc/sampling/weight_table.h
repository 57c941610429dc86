// weight_table's argument checks, shared by its CPU and CUDA kernels: the weights and the CSC
// they belong to are checked whole (with ATen ops, once per graph) before any kernel reads them.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>

namespace gnnrepro {

inline void check_weight_table_args(const at::Tensor& indptr, const at::Tensor& indices,
                                    const at::Tensor& weights) {
  TORCH_CHECK(indptr.dim() == 1 && indptr.numel() >= 1 && indptr.scalar_type() == at::kLong &&
                  indptr.is_contiguous(),
              "indptr must be contiguous int64 [N+1]");
  TORCH_CHECK(weights.dim() == 1 && weights.is_contiguous() && weights.scalar_type() == at::kFloat,
              "weights must be contiguous float32, one per edge");
  TORCH_CHECK(indices.dim() == 1 && indices.is_contiguous() &&
                  (indices.scalar_type() == at::kInt || indices.scalar_type() == at::kLong),
              "indices must be contiguous int32 or int64");
  TORCH_CHECK(indices.numel() == weights.numel(), "weights must have one entry per edge (",
              indices.numel(), "), got ", weights.numel());
  TORCH_CHECK(indptr.device() == weights.device() && indices.device() == weights.device(),
              "indptr, indices and weights must be on one device");
  const int64_t num_edges = weights.numel();
  if (indptr.numel() > 1) {
    TORCH_CHECK_VALUE(indptr.min().item<int64_t>() >= 0 &&
                          indptr.max().item<int64_t>() <= num_edges &&
                          (indptr.diff() >= 0).all().item<bool>(),
                      "indptr must be non-decreasing within [0, ", num_edges,
                      "] (weights has one entry per edge)");
    // Alias offsets are 32-bit (common/weighted_picks.h, table_entry).
    TORCH_CHECK_VALUE(indptr.diff().max().item<int64_t>() < (int64_t{1} << 32),
                      "a destination with 2^32 or more in-edges cannot be sampled by weight");
  }
  if (num_edges > 0) {
    TORCH_CHECK_VALUE(at::isfinite(weights).all().item<bool>(),
                      "weights must be finite (found NaN or infinity)");
    TORCH_CHECK_VALUE(weights.min().item<float>() >= 0.0f, "weights must be non-negative");
  }
}

// The table's int64 words: kTableWords (common/weighted_picks.h) per edge.
inline int64_t table_words(const at::Tensor& indices) {
  return indices.numel() * (indices.scalar_type() == at::kInt ? 2 : 3);
}

}  // namespace gnnrepro
