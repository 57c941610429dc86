// weight_table on the CPU: each destination's alias table and positive count
// (common/weighted_picks.h, the routine the CUDA kernel runs), in parallel over destinations.
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <tuple>

#include "../common/weighted_picks.h"
#include "weight_table.h"

namespace gnnrepro {
namespace {

template <typename IdT>
void build_tables(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& weights,
                  at::Tensor& table, at::Tensor& nonzero) {
  const int64_t* ip = indptr.data_ptr<int64_t>();
  const IdT* ix = indices.data_ptr<IdT>();
  const float* w = weights.data_ptr<float>();
  int64_t* t = table.data_ptr<int64_t>();
  int64_t* nz = nonzero.data_ptr<int64_t>();
  at::parallel_for(0, nonzero.numel(), 4096, [&](int64_t begin, int64_t end) {
    for (int64_t v = begin; v < end; ++v) nz[v] = weight_table_range(w, ix, ip[v], ip[v + 1], t);
  });
}

std::tuple<at::Tensor, at::Tensor> weight_table_cpu(const at::Tensor& indptr,
                                                    const at::Tensor& indices,
                                                    const at::Tensor& weights) {
  check_weight_table_args(indptr, indices, weights);
  TORCH_CHECK(indptr.device().is_cpu() && indices.device().is_cpu(),
              "the CPU op takes CPU tensors");
  at::Tensor table = at::zeros({table_words(indices)}, indptr.options());
  at::Tensor nonzero = at::empty({indptr.numel() - 1}, indptr.options());
  if (indices.scalar_type() == at::kInt) {
    build_tables<int32_t>(indptr, indices, weights, table, nonzero);
  } else {
    build_tables<int64_t>(indptr, indices, weights, table, nonzero);
  }
  return {table, nonzero};
}

}  // namespace

TORCH_LIBRARY_IMPL(gnnrepro, CPU, m) { m.impl("weight_table", &weight_table_cpu); }

}  // namespace gnnrepro
