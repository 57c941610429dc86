// SparseAdam's update of the rows a sparse gradient names, in one pass over those rows.
//
// Why: torch.optim.SparseAdam makes eight passes over the gradient's rows (two gathers of the
// moments, their updates, two index_adds back, the ratio, another index_add into the
// parameter), each a separate kernel with its own temporaries: the largest part of an R-GCN
// step with learnt embeddings on the CPU (benchmarks/NOTES.md, "SparseAdam in one pass").
// Here each named row's moments and parameter are read and written once. The arithmetic is
// torch's, operation for operation, in the tensor's dtype (no fused multiply-add: setup.py
// compiles with -ffp-contract=off); the square root is correctly rounded, where torch's
// vectorised one may round an ulp off, so results equal torch.optim.SparseAdam's to rounding
// and the update computed in Python's floats bit for bit (tests/test_sparse_adam.py):
//   m' = m + (g - m) * (1 - beta1);  v' = v + (g * g - v) * (1 - beta2)
//   param += -step_size * (m' / (sqrt(v') + eps)),  step_size = lr * sqrt(bc2) / bc1.
#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <cmath>
#include <cstdint>

namespace gnnrepro {
namespace {

constexpr int64_t kGrainElements = 1 << 14;

void check_state(const char* name, const at::Tensor& t, const at::Tensor& param) {
  TORCH_CHECK_VALUE(t.sizes() == param.sizes(), name, " must have param's shape ", param.sizes(),
                    ", got ", t.sizes());
  TORCH_CHECK_TYPE(t.scalar_type() == param.scalar_type(), name, " must have param's dtype ",
                   param.scalar_type(), ", got ", t.scalar_type());
  TORCH_CHECK_VALUE(t.is_contiguous() && t.device().is_cpu(), name,
                    " must be a contiguous CPU tensor");
}

// The gradient's row indices must be coalesced: strictly increasing, so each row is updated
// once (the update is not linear in the gradient), and inside [0, rows).
void check_indices(const at::Tensor& indices, int64_t rows) {
  TORCH_CHECK_TYPE(indices.scalar_type() == at::kLong, "indices must be int64, got ",
                   indices.scalar_type());
  TORCH_CHECK_VALUE(indices.dim() == 1 && indices.is_contiguous() && indices.device().is_cpu(),
                    "indices must be a contiguous 1-D CPU tensor");
  const int64_t* idx = indices.const_data_ptr<int64_t>();
  const int64_t k = indices.numel();
  for (int64_t i = 0; i < k; ++i) {
    TORCH_CHECK_INDEX(idx[i] >= 0 && idx[i] < rows, "indices[", i, "] = ", idx[i],
                      " is outside [0, ", rows, ")");
    TORCH_CHECK_VALUE(i == 0 || idx[i] > idx[i - 1],
                      "indices must be strictly increasing (a coalesced gradient), got ",
                      idx[i - 1], " then ", idx[i], " at ", i);
  }
}

void sparse_adam_cpu(at::Tensor& param, at::Tensor& exp_avg, at::Tensor& exp_avg_sq,
                     const at::Tensor& indices, const at::Tensor& values, double lr, double beta1,
                     double beta2, double eps, int64_t step) {
  TORCH_CHECK_VALUE(param.dim() >= 1 && param.is_contiguous() && param.device().is_cpu(),
                    "param must be a contiguous CPU tensor of at least one dimension");
  TORCH_CHECK_TYPE(param.scalar_type() == at::kFloat || param.scalar_type() == at::kDouble,
                   "param must be float32 or float64, got ", param.scalar_type());
  check_state("exp_avg", exp_avg, param);
  check_state("exp_avg_sq", exp_avg_sq, param);
  TORCH_CHECK_VALUE(step >= 1, "step must be >= 1, got ", step);
  TORCH_CHECK_VALUE(std::isfinite(lr) && std::isfinite(beta1) && std::isfinite(beta2) &&
                    std::isfinite(eps), "lr, beta1, beta2 and eps must be finite");
  const int64_t rows = param.size(0);
  const int64_t width = rows == 0 ? 0 : param.numel() / rows;
  check_indices(indices, rows);
  const int64_t k = indices.numel();
  TORCH_CHECK_TYPE(values.scalar_type() == param.scalar_type(),
                   "values must have param's dtype ", param.scalar_type(), ", got ",
                   values.scalar_type());
  TORCH_CHECK_VALUE(values.is_contiguous() && values.device().is_cpu() && values.dim() >= 1 &&
                    values.size(0) == k && values.numel() == k * width,
                    "values must be a contiguous CPU tensor of one param row per index (",
                    k, " x ", width, "), got ", values.sizes());
  if (k == 0 || width == 0) return;
  // As torch computes them, in double from Python floats.
  const double bias_correction1 = 1.0 - std::pow(beta1, static_cast<double>(step));
  const double bias_correction2 = 1.0 - std::pow(beta2, static_cast<double>(step));
  const double step_size = lr * std::sqrt(bias_correction2) / bias_correction1;
  AT_DISPATCH_FLOATING_TYPES(param.scalar_type(), "sparse_adam_", [&] {
    const scalar_t c1 = static_cast<scalar_t>(1.0 - beta1);
    const scalar_t c2 = static_cast<scalar_t>(1.0 - beta2);
    const scalar_t e = static_cast<scalar_t>(eps);
    const scalar_t neg_step = static_cast<scalar_t>(-step_size);
    const int64_t* idx = indices.const_data_ptr<int64_t>();
    const scalar_t* g = values.const_data_ptr<scalar_t>();
    scalar_t* p = param.data_ptr<scalar_t>();
    scalar_t* m = exp_avg.data_ptr<scalar_t>();
    scalar_t* v = exp_avg_sq.data_ptr<scalar_t>();
    const int64_t grain = std::max<int64_t>(1, kGrainElements / width);
    at::parallel_for(0, k, grain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const scalar_t* gi = g + i * width;
        const int64_t row = idx[i] * width;
        scalar_t* pr = p + row;
        scalar_t* mr = m + row;
        scalar_t* vr = v + row;
        for (int64_t j = 0; j < width; ++j) {
          const scalar_t gj = gi[j];
          const scalar_t m_new = mr[j] + (gj - mr[j]) * c1;
          const scalar_t v_new = vr[j] + (gj * gj - vr[j]) * c2;
          mr[j] = m_new;
          vr[j] = v_new;
          pr[j] = pr[j] + neg_step * (m_new / (std::sqrt(v_new) + e));
        }
      }
    });
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(gnnrepro, CPU, m) {
  m.impl("sparse_adam_", &sparse_adam_cpu);
}

}  // namespace gnnrepro
