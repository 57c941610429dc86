// Row gather on the GPU: out[i, :] = src[index[i], :], the CUDA kernel of gnnrepro::gather_rows.
//
// `src` is either a CUDA tensor or a pinned (page-locked) CPU tensor that the GPU reads in place
// over UVA (zero-copy: only the gathered rows cross PCIe, no staging copy on the host); index
// and out are on the GPU. One warp copies one row, each lane moving 16-byte words when the
// row, src and out allow it (else 8, 4, 2 or 1 bytes), several loads in flight per lane. Rows
// are copied as bytes, so every dtype works.
//
// Stream-ordered: no allocation and no host sync, so a loader that issues copies on several
// streams is never blocked by a gather. That also means the op cannot raise on an index outside
// [0, src rows) (it would need a sync; a device assert would poison the CUDA context): such a
// row is never read and its out row is zero-filled. Callers check ids before (the row check and
// index math are common/gather_index.h's, shared with the CPU op).
#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <cstdint>

#include "../common/cuda_utils.h"
#include "../common/gather_index.h"
#include "gather_args.h"

namespace gnnrepro {
namespace {

// Words each lane loads before it stores them, to keep several (PCIe) reads in flight.
constexpr int kUnroll = 4;

template <typename WordT, typename IdT>
__global__ void __launch_bounds__(kCudaThreads)
gather_rows_kernel(const WordT* __restrict__ src, int64_t num_rows, int64_t row_words,
                   const IdT* __restrict__ index, int64_t n, WordT* __restrict__ out) {
  const int lane = static_cast<int>(threadIdx.x & 31);
  const int64_t warps = int64_t{gridDim.x} * blockDim.x / 32;
  for (int64_t i = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) / 32; i < n; i += warps) {
    const auto row = static_cast<int64_t>(index[i]);
    WordT* o = out + row_offset(i, row_words, 0);
    if (!row_in_range(row, num_rows)) {
      for (int64_t k = lane; k < row_words; k += 32) o[k] = WordT{};
      continue;
    }
    const WordT* s = src + row_offset(row, row_words, 0);
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
                   int64_t n, void* out, cudaStream_t stream) {
  gather_rows_kernel<WordT, IdT><<<cuda_blocks(n * 32), kCudaThreads, 0, stream>>>(
      static_cast<const WordT*>(src), num_rows, row_bytes / static_cast<int64_t>(sizeof(WordT)),
      index, n, static_cast<WordT*>(out));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// The widest word (16, 8, 4, 2 or 1 bytes) that divides the row size and both base addresses.
template <typename IdT>
void launch_gather_widest(const void* src, int64_t num_rows, int64_t row_bytes, const IdT* index,
                          int64_t n, void* out, cudaStream_t stream) {
  const auto bits = static_cast<uint64_t>(row_bytes) | reinterpret_cast<uintptr_t>(src) |
                    reinterpret_cast<uintptr_t>(out);
  if (bits % 16 == 0) {
    launch_gather<uint4>(src, num_rows, row_bytes, index, n, out, stream);
  } else if (bits % 8 == 0) {
    launch_gather<uint2>(src, num_rows, row_bytes, index, n, out, stream);
  } else if (bits % 4 == 0) {
    launch_gather<uint32_t>(src, num_rows, row_bytes, index, n, out, stream);
  } else if (bits % 2 == 0) {
    launch_gather<uint16_t>(src, num_rows, row_bytes, index, n, out, stream);
  } else {
    launch_gather<uint8_t>(src, num_rows, row_bytes, index, n, out, stream);
  }
}

void gather_rows_cuda(const at::Tensor& src, const at::Tensor& index, at::Tensor& out) {
  check_gather_args(src, index, out);
  TORCH_CHECK(index.is_cuda() && out.is_cuda(),
              "on the GPU path index and out must be CUDA tensors (src may be pinned CPU memory), "
              "got index on ", index.device(), " and out on ", out.device());
  const at::Device device = index.device();
  TORCH_CHECK(out.device() == device, "out is on ", out.device(), " but index is on ", device);
  const int64_t n = index.numel();
  if (n == 0 || src.size(1) == 0) return;
  const c10::cuda::CUDAGuard device_guard(device);
  // A CUDA src on this device, or pinned host memory mapped for this device (UVA).
  const void* s = device_readable_ptr(src, "src", device);
  at::assert_no_overlap(out.narrow(0, 0, n), src);
  const at::Tensor idx = index.contiguous();
  const int64_t row_bytes = src.size(1) * static_cast<int64_t>(src.element_size());
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(device.index());

  if (idx.scalar_type() == at::kInt) {
    launch_gather_widest(s, src.size(0), row_bytes, idx.const_data_ptr<int32_t>(), n,
                         out.data_ptr(), stream);
  } else {
    launch_gather_widest(s, src.size(0), row_bytes, idx.const_data_ptr<int64_t>(), n,
                         out.data_ptr(), stream);
  }
}

}  // namespace

TORCH_LIBRARY_IMPL(gnnrepro, CUDA, m) { m.impl("gather_rows", &gather_rows_cuda); }

}  // namespace gnnrepro
