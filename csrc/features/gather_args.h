// Argument checks shared by the CPU and CUDA kernels of gnnrepro::gather_rows: shapes, dtypes
// and layout. Each kernel then checks where its tensors live.
#pragma once

#include <ATen/ATen.h>

namespace gnnrepro {

inline void check_gather_args(const at::Tensor& src, const at::Tensor& index,
                              const at::Tensor& out) {
  TORCH_CHECK(src.dim() == 2, "src must be 2-D, got ", src.dim(), "-D");
  TORCH_CHECK(src.is_contiguous(), "src must be contiguous");
  TORCH_CHECK(src.layout() == at::kStrided && !src.is_quantized(), "src must be a dense tensor");
  TORCH_CHECK(index.dim() == 1, "index must be 1-D, got ", index.dim(), "-D");
  TORCH_CHECK(index.scalar_type() == at::kLong || index.scalar_type() == at::kInt,
              "index must be int64 or int32, got ", index.scalar_type());
  TORCH_CHECK(out.dim() == 2, "out must be 2-D, got ", out.dim(), "-D");
  TORCH_CHECK(out.scalar_type() == src.scalar_type(), "out has dtype ", out.scalar_type(),
              " but src has ", src.scalar_type());
  TORCH_CHECK(out.is_contiguous(), "out must be contiguous");
  TORCH_CHECK(out.size(1) == src.size(1), "out has ", out.size(1), " columns but src has ",
              src.size(1));
  TORCH_CHECK(out.size(0) >= index.numel(), "out has ", out.size(0), " rows, fewer than the ",
              index.numel(), " indices");
}

}  // namespace gnnrepro
