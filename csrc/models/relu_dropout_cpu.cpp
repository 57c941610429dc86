// ReLU followed by dropout in one pass over the activations, and its backward in one more.
//
// Why: torch's CPU dropout draws a Bernoulli per element from a serial Mersenne Twister and
// then multiplies: a serial pass over every activation that makes up a large share of a
// GraphSAGE training step on the CPU (benchmarks/NOTES.md). Here the keep decisions come from
// the counter-based generator of common/dropout_mask.h (four elements per 64-bit draw), in
// parallel, fused with the ReLU and the 1 / (1 - p) scale. The backward needs no mask: an
// output element is positive exactly when its input was positive and kept.
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <torch/library.h>

#include <algorithm>

#include "../common/dropout_mask.h"

namespace gnnrepro {
namespace {

constexpr int64_t kGrain = 1 << 15;
// Elements per block of the forward: a multiple of kDropoutLanes, so blocks start on a draw.
constexpr int64_t kBlock = 4096;

void check_p(double p) {
  TORCH_CHECK_VALUE(p >= 0.0 && p < 1.0, "p must lie in [0, 1), got ", p);
}

at::Tensor relu_dropout_cpu(const at::Tensor& h, double p, int64_t seed) {
  check_p(p);
  TORCH_CHECK_TYPE(at::isFloatingType(h.scalar_type()), "h must be a floating-point tensor, got ",
                   h.scalar_type());
  const at::Tensor in = h.contiguous();
  at::Tensor out = at::empty_like(in);
  const int64_t n = in.numel();
  const uint64_t key = mix64(static_cast<uint64_t>(seed));
  const uint32_t threshold = dropout_threshold(p);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, in.scalar_type(), "relu_dropout",
                                  [&] {
    const scalar_t* x = in.const_data_ptr<scalar_t>();
    scalar_t* y = out.data_ptr<scalar_t>();
    using acc_t = at::opmath_type<scalar_t>;
    const auto scale = static_cast<acc_t>(dropout_scale(p));
    at::parallel_for(0, (n + kBlock - 1) / kBlock, 1, [&](int64_t begin, int64_t end) {
      acc_t factor[kBlock];  // per element of a block: scale if kept, else 0
      for (int64_t block = begin; block < end; ++block) {
        const int64_t first = block * kBlock, len = std::min(kBlock, n - first);
        const int64_t draw0 = first / kDropoutLanes;
        for (int64_t j = 0; j < kBlock / kDropoutLanes; ++j) {
          const uint64_t r = draw(key, static_cast<uint64_t>(draw0 + j));
          for (int lane = 0; lane < kDropoutLanes; ++lane) {
            factor[j * kDropoutLanes + lane] =
                static_cast<acc_t>(dropout_keep(r, lane, threshold)) * scale;
          }
        }
        // Branch-free and vectorizable: keep bits and signs are random, so branches would
        // mispredict about once per element. A NaN stays NaN, as in torch's relu and dropout.
        const scalar_t* xb = x + first;
        scalar_t* yb = y + first;
        for (int64_t k = 0; k < len; ++k) {
          const acc_t v = static_cast<acc_t>(xb[k]) * factor[k];
          yb[k] = static_cast<scalar_t>(v < acc_t(0) ? acc_t(0) : v);
        }
      }
    });
  });
  return out;
}

at::Tensor relu_dropout_backward_cpu(const at::Tensor& grad, const at::Tensor& out, double p) {
  check_p(p);
  TORCH_CHECK_VALUE(grad.sizes() == out.sizes(), "grad and out must have the same shape, got ",
                    grad.sizes(), " and ", out.sizes());
  TORCH_CHECK_TYPE(grad.scalar_type() == out.scalar_type(),
                   "grad and out must have the same dtype, got ", grad.scalar_type(), " and ",
                   out.scalar_type());
  const at::Tensor g = grad.contiguous(), o = out.contiguous();
  at::Tensor dx = at::empty_like(g);
  const int64_t n = g.numel();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, g.scalar_type(),
                                  "relu_dropout_backward", [&] {
    const scalar_t* gp = g.const_data_ptr<scalar_t>();
    const scalar_t* op = o.const_data_ptr<scalar_t>();
    scalar_t* dp = dx.data_ptr<scalar_t>();
    const auto scale = static_cast<scalar_t>(dropout_scale(p));
    const scalar_t zero = 0;
    at::parallel_for(0, n, kGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        dp[i] = gp[i] * (static_cast<scalar_t>(op[i] > zero) * scale);  // branch-free
      }
    });
  });
  return dx;
}

}  // namespace

TORCH_LIBRARY_IMPL(gnnrepro, CPU, m) {
  m.impl("relu_dropout", &relu_dropout_cpu);
  m.impl("relu_dropout_backward", &relu_dropout_backward_cpu);
}

}  // namespace gnnrepro
