// Helpers shared by the CUDA kernels (included from .cu files only).
#pragma once
#include <ATen/ATen.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace gnnrepro {

// Threads per block of the element-wise and warp-per-item kernels.
constexpr int kCudaThreads = 256;

// Blocks for `threads` threads of kCudaThreads each; kernels loop grid-stride past the cap.
inline unsigned int cuda_blocks(int64_t threads) {
  constexpr int64_t kMaxBlocks = int64_t{1} << 16;
  return static_cast<unsigned int>(
      std::clamp<int64_t>((threads + kCudaThreads - 1) / kCudaThreads, 1, kMaxBlocks));
}

// The address kernels on `device` read `t`'s data through: a CUDA tensor's own pointer (it must
// be on `device`), or the device mapping of a page-locked CPU tensor, read over PCIe/NVLink by
// unified virtual addressing (UVA). Pinned means allocated pinned (pin_memory()) or registered
// in place with cudaHostRegister. Empty tensors give nullptr and need not be pinned.
inline const void* device_readable_ptr(const at::Tensor& t, const char* name,
                                       const at::Device& device) {
  if (t.numel() == 0) return nullptr;
  if (t.is_cuda()) {
    TORCH_CHECK(t.device() == device, name, " is on ", t.device(), " but the op runs on ", device);
    return t.const_data_ptr();
  }
  TORCH_CHECK(t.is_cpu(), name, " must be a CUDA tensor or a pinned CPU tensor, got ", t.device());
  TORCH_CHECK(t.is_pinned(), name,
              " is a pageable CPU tensor: the GPU can read a CPU tensor only if it is pinned "
              "(pin_memory() or cudaHostRegister); pin it or move it to the GPU");
  void* mapped = nullptr;
  C10_CUDA_CHECK(cudaHostGetDevicePointer(&mapped, const_cast<void*>(t.const_data_ptr()), 0));
  return mapped;
}

}  // namespace gnnrepro
