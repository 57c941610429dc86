// Row gather on the GPU: out[i, :] = src[index[i], :], the CUDA kernel of gnnrepro::gather_rows.
//
// `src` is either a CUDA tensor or a pinned (page-locked) CPU tensor that the GPU reads in place
// over UVA (zero-copy: only the gathered rows cross PCIe, no staging copy on the host); index
// and out are on the GPU. One warp copies one row, each lane moving 16-byte words when the
// row, src and out allow it (else 8, 4, 2 or 1 bytes), several loads in flight per lane. Rows
// are copied as bytes, so every dtype works.
//
// An index outside [0, src rows) is flagged on the device and raised after the kernel: that
// check costs one host sync per call (the CPU op raises too; a device assert would instead
// poison the CUDA context).
#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <cstdint>

#include "../common/cuda_utils.h"
#include "gather_args.h"

namespace gnnrepro {
namespace {

using ull = unsigned long long;

// Words each lane loads before it stores them, to keep several (PCIe) reads in flight.
constexpr int kUnroll = 4;

template <typename WordT, typename IdT>
__global__ void __launch_bounds__(kCudaThreads)
gather_rows_kernel(const WordT* __restrict__ src, int64_t num_rows, int64_t row_words,
                   const IdT* __restrict__ index, int64_t n, WordT* __restrict__ out,
                   ull* __restrict__ bad) {
  const int lane = static_cast<int>(threadIdx.x & 31);
  const int64_t warps = int64_t{gridDim.x} * blockDim.x / 32;
  for (int64_t i = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) / 32; i < n; i += warps) {
    const auto row = static_cast<int64_t>(index[i]);
    if (row < 0 || row >= num_rows) {
      if (lane == 0) atomicMin(bad, static_cast<ull>(i));
      continue;
    }
    const WordT* s = src + row * row_words;
    WordT* o = out + i * row_words;
    for (int64_t k0 = lane; k0 < row_words; k0 += 32 * kUnroll) {
      WordT w[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int64_t k = k0 + 32 * u;
        if (k < row_words) w[u] = s[k];
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int64_t k = k0 + 32 * u;
        if (k < row_words) o[k] = w[u];
      }
    }
  }
}

template <typename WordT, typename IdT>
void launch_gather(const void* src, int64_t num_rows, int64_t row_bytes, const IdT* index,
                   int64_t n, void* out, ull* bad, cudaStream_t stream) {
  gather_rows_kernel<WordT, IdT><<<cuda_blocks(n * 32), kCudaThreads, 0, stream>>>(
      static_cast<const WordT*>(src), num_rows, row_bytes / static_cast<int64_t>(sizeof(WordT)),
      index, n, static_cast<WordT*>(out), bad);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// The widest word (16, 8, 4, 2 or 1 bytes) that divides the row size and both base addresses.
template <typename IdT>
void launch_gather_widest(const void* src, int64_t num_rows, int64_t row_bytes, const IdT* index,
                          int64_t n, void* out, ull* bad, cudaStream_t stream) {
  const auto bits = static_cast<uint64_t>(row_bytes) | reinterpret_cast<uintptr_t>(src) |
                    reinterpret_cast<uintptr_t>(out);
  if (bits % 16 == 0) {
    launch_gather<uint4>(src, num_rows, row_bytes, index, n, out, bad, stream);
  } else if (bits % 8 == 0) {
    launch_gather<uint2>(src, num_rows, row_bytes, index, n, out, bad, stream);
  } else if (bits % 4 == 0) {
    launch_gather<uint32_t>(src, num_rows, row_bytes, index, n, out, bad, stream);
  } else if (bits % 2 == 0) {
    launch_gather<uint16_t>(src, num_rows, row_bytes, index, n, out, bad, stream);
  } else {
    launch_gather<uint8_t>(src, num_rows, row_bytes, index, n, out, bad, stream);
  }
}

at::Tensor gather_rows_cuda(const at::Tensor& src, const at::Tensor& index, at::Tensor& out) {
  check_gather_args(src, index, out);
  TORCH_CHECK(index.is_cuda() && out.is_cuda(),
              "on the GPU path index and out must be CUDA tensors (src may be pinned CPU memory), "
              "got index on ", index.device(), " and out on ", out.device());
  const at::Device device = index.device();
  TORCH_CHECK(out.device() == device, "out is on ", out.device(), " but index is on ", device);
  const int64_t n = index.numel();
  at::Tensor result = out.narrow(0, 0, n);
  if (n == 0 || src.size(1) == 0) return result;
  const c10::cuda::CUDAGuard device_guard(device);
  // A CUDA src on this device, or pinned host memory mapped for this device (UVA).
  const void* s = device_readable_ptr(src, "src", device);
  at::assert_no_overlap(result, src);
  const at::Tensor idx = index.contiguous();
  const int64_t row_bytes = src.size(1) * static_cast<int64_t>(src.element_size());
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(device.index());

  // Smallest position of an out-of-range index, ~0 if none.
  at::Tensor bad = at::empty({1}, index.options().dtype(at::kLong));
  auto* bad_ptr = reinterpret_cast<ull*>(bad.data_ptr<int64_t>());
  C10_CUDA_CHECK(cudaMemsetAsync(bad_ptr, 0xFF, sizeof(ull), stream));
  if (idx.scalar_type() == at::kInt) {
    launch_gather_widest(s, src.size(0), row_bytes, idx.const_data_ptr<int32_t>(), n,
                         out.data_ptr(), bad_ptr, stream);
  } else {
    launch_gather_widest(s, src.size(0), row_bytes, idx.const_data_ptr<int64_t>(), n,
                         out.data_ptr(), bad_ptr, stream);
  }
  ull first_bad = 0;
  C10_CUDA_CHECK(cudaMemcpyAsync(&first_bad, bad_ptr, sizeof(ull), cudaMemcpyDeviceToHost, stream));
  C10_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (first_bad != ~0ull) {
    const auto i = static_cast<int64_t>(first_bad);
    TORCH_CHECK(false, "index[", i, "] = ", idx[i].item<int64_t>(), " is outside [0, ",
                src.size(0), ")");
  }
  return result;
}

}  // namespace

TORCH_LIBRARY_IMPL(gnnrepro, CUDA, m) { m.impl("gather_rows", &gather_rows_cuda); }

}  // namespace gnnrepro
