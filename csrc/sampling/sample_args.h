// Argument checks of sample_fused shared by its CPU and CUDA kernels: shapes, dtypes, sizes. The
// Python wrapper checks these first with clear ValueError/TypeError (TORCH_CHECKs guard direct
// calls); the seeds' values are checked by the kernels alone (sample_errors.h).
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <limits>

namespace gnnrepro {

// Everything but where the tensors live: the CPU op wants one device, the CUDA op also takes a
// pinned host graph (read over UVA) and checks devices itself.
inline void check_sample_arg_values(const at::Tensor& indptr, const at::Tensor& indices,
                                    const at::Tensor& seeds, at::IntArrayRef fanouts,
                                    const at::Tensor& node_map) {
  TORCH_CHECK(indptr.dim() == 1 && indptr.numel() >= 1, "indptr must be 1-D with N+1 >= 1 entries");
  TORCH_CHECK(indptr.scalar_type() == at::kLong, "indptr must be int64");
  TORCH_CHECK(indices.dim() == 1, "indices must be 1-D");
  TORCH_CHECK(indices.scalar_type() == at::kLong || indices.scalar_type() == at::kInt,
              "indices must be int32 or int64");
  TORCH_CHECK(seeds.dim() == 1 && seeds.scalar_type() == at::kLong, "seeds must be 1-D int64");
  TORCH_CHECK(indptr.is_contiguous() && indices.is_contiguous() && seeds.is_contiguous() &&
                  node_map.is_contiguous(),
              "indptr, indices, seeds and node_map must be contiguous");
  const int64_t num_nodes = indptr.numel() - 1;
  TORCH_CHECK(node_map.dim() == 1 && node_map.scalar_type() == at::kInt &&
                  node_map.numel() == num_nodes,
              "node_map must be int32 [num_nodes]");
  TORCH_CHECK(num_nodes < std::numeric_limits<int32_t>::max(),
              "graphs with 2^31 - 1 or more nodes are not supported");
  // Unique seeds in [0, N) number at most N; checked first, so that no kernel sizes anything
  // (the CUDA scans take int counts) from a longer, necessarily invalid, seed list.
  TORCH_CHECK_VALUE(seeds.numel() <= num_nodes, "seeds must be unique node ids: seeds has ",
                    seeds.numel(), " entries but the graph has only ", num_nodes, " nodes");
  TORCH_CHECK(!fanouts.empty(), "fanouts must not be empty");
  for (int64_t f : fanouts) {
    TORCH_CHECK(f == -1 || (f >= 1 && f <= std::numeric_limits<int32_t>::max()),
                "every fanout must be -1 (all neighbours) or in [1, 2^31 - 1], got ", f);
  }
}

inline void check_sample_args(const at::Tensor& indptr, const at::Tensor& indices,
                              const at::Tensor& seeds, at::IntArrayRef fanouts,
                              const at::Tensor& node_map) {
  check_sample_arg_values(indptr, indices, seeds, fanouts, node_map);
  TORCH_CHECK(indptr.device() == indices.device() && indptr.device() == seeds.device() &&
                  indptr.device() == node_map.device(),
              "indptr, indices, seeds and node_map must be on one device");
}

}  // namespace gnnrepro
