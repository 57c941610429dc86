// The gradient of a neighbour mean with respect to its source rows: the backward of
// embedding_bag(mode="mean") over a block's CSC, without a sort.
//
// Forward: mean[v] = (1 / deg v) * sum over edges e of v of h[indices[e]]. Backward:
// grad_h[u] = sum over edges e with indices[e] == u of grad_mean[dst e] / deg(dst e).
// torch's CPU backward sorts the edges by source (O(E log E)) and then accumulates; here a
// counting sort by source (two O(E) passes: the edges are already grouped by destination, and
// stay in that order within each source) gives every source its destinations, and each
// source's row is then summed on its own, in parallel, with no atomics: the result does not
// depend on the thread count. torch's was the second largest part of an R-GCN step
// (benchmarks/NOTES.md, "the neighbour mean's backward").
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace gnnrepro {
namespace {

constexpr int64_t kGrainElements = 1 << 14;

// Destination of every edge, grouped by source: CSR `rowptr` [num_src + 1] over sources and
// `dst` [E], each source's destinations in increasing order. Checks indptr and indices.
template <typename index_t>
void group_by_source(const index_t* indptr, const index_t* indices, int64_t num_dst,
                     int64_t num_src, std::vector<int64_t>& rowptr, std::vector<index_t>& dst) {
  TORCH_CHECK_VALUE(indptr[0] == 0, "indptr[0] must be 0, got ", indptr[0]);
  for (int64_t v = 0; v < num_dst; ++v) {
    TORCH_CHECK_VALUE(indptr[v + 1] >= indptr[v], "indptr must be non-decreasing, got ",
                      indptr[v], " then ", indptr[v + 1], " at ", v);
  }
  const int64_t num_edges = indptr[num_dst];
  rowptr.assign(num_src + 1, 0);
  for (int64_t e = 0; e < num_edges; ++e) {
    const int64_t u = indices[e];
    TORCH_CHECK_INDEX(u >= 0 && u < num_src, "indices[", e, "] = ", u, " is outside [0, ",
                      num_src, ")");
    ++rowptr[u + 1];
  }
  for (int64_t u = 0; u < num_src; ++u) rowptr[u + 1] += rowptr[u];
  std::vector<int64_t> cursor(rowptr.begin(), rowptr.end() - 1);
  dst.resize(num_edges);
  for (int64_t v = 0; v < num_dst; ++v) {
    for (int64_t e = indptr[v]; e < indptr[v + 1]; ++e) {
      dst[cursor[indices[e]]++] = static_cast<index_t>(v);
    }
  }
}

at::Tensor neighbour_mean_backward_cpu(const at::Tensor& grad_mean, const at::Tensor& indptr,
                                       const at::Tensor& indices, int64_t num_src) {
  TORCH_CHECK_VALUE(grad_mean.dim() == 2 && grad_mean.device().is_cpu(),
                    "grad_mean must be a 2-D CPU tensor [num_dst, d], got ", grad_mean.sizes());
  TORCH_CHECK_TYPE(at::isFloatingType(grad_mean.scalar_type()),
                   "grad_mean must be floating point, got ", grad_mean.scalar_type());
  TORCH_CHECK_TYPE(indptr.scalar_type() == indices.scalar_type() &&
                   (indptr.scalar_type() == at::kLong || indptr.scalar_type() == at::kInt),
                   "indptr and indices must both be int64 or both int32, got ",
                   indptr.scalar_type(), " and ", indices.scalar_type());
  const int64_t num_dst = grad_mean.size(0), width = grad_mean.size(1);
  TORCH_CHECK_VALUE(indptr.dim() == 1 && indptr.numel() == num_dst + 1 && indptr.device().is_cpu(),
                    "indptr must be a 1-D CPU tensor of num_dst + 1 = ", num_dst + 1,
                    " entries, got ", indptr.sizes());
  TORCH_CHECK_VALUE(indices.dim() == 1 && indices.device().is_cpu(),
                    "indices must be a 1-D CPU tensor");
  TORCH_CHECK_VALUE(num_src >= 0, "num_src must be >= 0, got ", num_src);
  const at::Tensor ptr = indptr.contiguous(), idx = indices.contiguous();
  const at::Tensor grad = grad_mean.contiguous();
  at::Tensor grad_h = at::empty({num_src, width}, grad.options());
  AT_DISPATCH_INDEX_TYPES(ptr.scalar_type(), "neighbour_mean_backward", [&] {
    const index_t* p = ptr.const_data_ptr<index_t>();
    TORCH_CHECK_VALUE(static_cast<int64_t>(p[num_dst]) <= idx.numel(),
                      "indptr[-1] = ", p[num_dst], " exceeds the ", idx.numel(), " indices");
    std::vector<int64_t> rowptr;
    std::vector<index_t> dst;
    group_by_source<index_t>(p, idx.const_data_ptr<index_t>(), num_dst, num_src, rowptr, dst);
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, grad.scalar_type(),
                                    "neighbour_mean_backward", [&] {
      using acc_t = at::opmath_type<scalar_t>;
      const scalar_t* g = grad.const_data_ptr<scalar_t>();
      scalar_t* out = grad_h.data_ptr<scalar_t>();
      const int64_t grain = std::max<int64_t>(1, kGrainElements / std::max<int64_t>(width, 1));
      at::parallel_for(0, num_src, grain, [&](int64_t begin, int64_t end) {
        std::vector<acc_t> acc(width);
        for (int64_t u = begin; u < end; ++u) {
          std::fill(acc.begin(), acc.end(), acc_t(0));
          for (int64_t k = rowptr[u]; k < rowptr[u + 1]; ++k) {
            const int64_t v = dst[k];
            const acc_t inv = acc_t(1) / static_cast<acc_t>(p[v + 1] - p[v]);
            const scalar_t* gv = g + v * width;
            for (int64_t j = 0; j < width; ++j) acc[j] += static_cast<acc_t>(gv[j]) * inv;
          }
          scalar_t* row = out + u * width;
          for (int64_t j = 0; j < width; ++j) row[j] = static_cast<scalar_t>(acc[j]);
        }
      });
    });
  });
  return grad_h;
}

}  // namespace

TORCH_LIBRARY_IMPL(gnnrepro, CPU, m) {
  m.impl("neighbour_mean_backward", &neighbour_mean_backward_cpu);
}

}  // namespace gnnrepro
