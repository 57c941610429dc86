// weight_table on the GPU: one thread per destination runs the CPU kernel's routine
// (common/weighted_picks.h) over its list, so both give bit-identical tables.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <tuple>

#include "../common/cuda_utils.h"
#include "../common/weighted_picks.h"
#include "weight_table.h"

namespace gnnrepro {
namespace {

template <typename IdT>
__global__ void weight_table_kernel(const int64_t* __restrict__ indptr, int64_t num_nodes,
                                    const IdT* __restrict__ indices,
                                    const float* __restrict__ weights,
                                    int64_t* __restrict__ table, int64_t* __restrict__ nonzero) {
  for (int64_t v = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; v < num_nodes;
       v += int64_t{gridDim.x} * blockDim.x) {
    nonzero[v] = weight_table_range(weights, indices, indptr[v], indptr[v + 1], table);
  }
}

std::tuple<at::Tensor, at::Tensor> weight_table_cuda(const at::Tensor& indptr,
                                                     const at::Tensor& indices,
                                                     const at::Tensor& weights) {
  check_weight_table_args(indptr, indices, weights);  // ranges and values, before any read
  const c10::cuda::CUDAGuard device_guard(indptr.device());
  const int64_t num_nodes = indptr.numel() - 1;
  at::Tensor table = at::zeros({table_words(indices)}, indptr.options());
  at::Tensor nonzero = at::empty({num_nodes}, indptr.options());
  if (num_nodes > 0) {
    const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(indptr.device().index());
    if (indices.scalar_type() == at::kInt) {
      weight_table_kernel<int32_t><<<cuda_blocks(num_nodes), kCudaThreads, 0, stream>>>(
          indptr.data_ptr<int64_t>(), num_nodes, indices.data_ptr<int32_t>(),
          weights.data_ptr<float>(), table.data_ptr<int64_t>(), nonzero.data_ptr<int64_t>());
    } else {
      weight_table_kernel<int64_t><<<cuda_blocks(num_nodes), kCudaThreads, 0, stream>>>(
          indptr.data_ptr<int64_t>(), num_nodes, indices.data_ptr<int64_t>(),
          weights.data_ptr<float>(), table.data_ptr<int64_t>(), nonzero.data_ptr<int64_t>());
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  return {table, nonzero};
}

}  // namespace

TORCH_LIBRARY_IMPL(gnnrepro, CUDA, m) { m.impl("weight_table", &weight_table_cuda); }

}  // namespace gnnrepro
