// See disjoint_relabel.h. pybind11 first: its namespace carries a visibility attribute that the
// header's declaration of module_ must not precede.
#include <torch/csrc/utils/pybind.h>

#include "disjoint_relabel.h"

#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/cummax.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/nonzero.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/searchsorted.h>
#include <ATen/ops/sort.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>
#include <c10/util/irange.h>

#include <tuple>

namespace gnnrepro {

DisjointRelabel disjoint_relabel(const at::Tensor& dst_keys, const std::vector<int64_t>& dst_begin,
                                 const at::Tensor& edge_keys, const std::vector<int64_t>& offsets,
                                 int64_t node_mask) {
  const int64_t types = static_cast<int64_t>(offsets.size()) - 1;
  TORCH_CHECK(types >= 1 && static_cast<int64_t>(dst_begin.size()) == types + 1,
              "disjoint_relabel: offsets and dst_begin must hold num_types + 1 entries");
  TORCH_CHECK(dst_keys.dim() == 1 && edge_keys.dim() == 1 &&
                  dst_keys.scalar_type() == at::kLong && edge_keys.scalar_type() == at::kLong &&
                  dst_keys.device() == edge_keys.device(),
              "disjoint_relabel: keys must be int64 vectors on one device");
  const int64_t n = dst_keys.numel(), edges = edge_keys.numel(), total = n + edges;
  TORCH_CHECK(dst_begin[0] == 0 && dst_begin[types] == n,
              "disjoint_relabel: dst_begin must run from 0 to the destinations' count ", n);
  for (const auto t : c10::irange(types)) {
    TORCH_CHECK(dst_begin[t] <= dst_begin[t + 1] && offsets[t] <= offsets[t + 1],
                "disjoint_relabel: dst_begin and offsets must be non-decreasing");
  }
  const at::TensorOptions opts = dst_keys.options();
  DisjointRelabel out;
  // By position over [destinations | edges]: a destination's id, or a new source's at its first
  // appearance (filled below); 0 elsewhere.
  at::Tensor local = at::zeros({total}, opts);
  for (const auto t : c10::irange(types)) {
    const int64_t count = dst_begin[t + 1] - dst_begin[t];
    if (count > 0) local.narrow(0, dst_begin[t], count).copy_(at::arange(count, opts));
  }
  if (edges == 0) {
    out.ids = at::zeros({0}, opts);
    for (const auto t : c10::irange(types)) {
      out.sources.push_back(dst_keys.narrow(0, dst_begin[t], dst_begin[t + 1] - dst_begin[t]));
    }
    return out;
  }
  // Each position's first appearance of its key: a stable sort keeps equal keys in position
  // order, so a run's head holds the smallest position, and a running maximum over the heads'
  // sorted indices hands it to the run.
  const at::Tensor all = at::cat({dst_keys, edge_keys});
  const auto [sorted, perm] = at::sort(all, /*stable=*/true, /*dim=*/0, /*descending=*/false);
  const at::Tensor index = at::arange(total, opts);
  at::Tensor head = at::ones({total}, opts.dtype(at::kBool));
  head.narrow(0, 1, total - 1).copy_(sorted.narrow(0, 1, total - 1).ne(sorted.narrow(0, 0, total - 1)));
  const at::Tensor head_index = std::get<0>(at::cummax(at::where(head, index, 0), 0));
  at::Tensor first = at::empty_like(perm);
  first.scatter_(0, perm, perm.index_select(0, head_index));
  const at::Tensor edge_first = first.narrow(0, n, edges);
  // New sources: valid edges that are their key's first appearance, by position, then grouped
  // by type (stably: each type's in position order). A key's type counts the offsets its node
  // reaches (no host array is copied to the device: that would be a sync of its own).
  const at::Tensor valid = edge_keys.ge(0);
  const at::Tensor nodes = edge_keys.bitwise_and(node_mask);
  at::Tensor edge_type = at::zeros_like(edge_keys);
  for (int64_t t = 1; t < types; ++t) edge_type.add_(nodes.ge(offsets[t]));
  const at::Tensor is_new = valid.logical_and(edge_first.eq(index.narrow(0, n, edges)));
  const at::Tensor new_edges = at::nonzero(is_new).view({-1});  // a sync
  const auto [new_type, order] =
      at::sort(edge_type.index_select(0, new_edges), /*stable=*/true, 0, false);
  const at::Tensor by_type = new_edges.index_select(0, order);
  const at::Tensor starts =  // per type its first entry in by_type, then their count: a sync
      at::searchsorted(new_type, at::arange(types + 1, opts), false, /*right=*/false).cpu();
  const int64_t* s = starts.data_ptr<int64_t>();
  at::Tensor edge_local = local.narrow(0, n, edges);
  for (const auto t : c10::irange(types)) {  // type t's new sources: ids from its destinations'
    const int64_t count = s[t + 1] - s[t], first_id = dst_begin[t + 1] - dst_begin[t];
    const at::Tensor firsts = by_type.narrow(0, s[t], count);
    if (count > 0) edge_local.index_copy_(0, firsts, at::arange(first_id, first_id + count, opts));
    out.sources.push_back(at::cat({dst_keys.narrow(0, dst_begin[t], first_id),
                                   edge_keys.index_select(0, firsts)}));
  }
  out.ids = at::where(valid, local.index_select(0, edge_first), 0);
  return out;
}

void register_disjoint_relabel(pybind11::module_& m) {
  m.def(
      "disjoint_relabel",
      [](const at::Tensor& dst_keys, const std::vector<int64_t>& dst_begin,
         const at::Tensor& edge_keys, const std::vector<int64_t>& offsets, int64_t node_mask) {
        DisjointRelabel r = disjoint_relabel(dst_keys, dst_begin, edge_keys, offsets, node_mask);
        return std::make_tuple(r.ids, r.sources);
      },
      pybind11::arg("dst_keys"), pybind11::arg("dst_begin"), pybind11::arg("edge_keys"),
      pybind11::arg("offsets"), pybind11::arg("node_mask"),
      "The CUDA op's relabel of a disjoint (temporal) layer, on the tensors' device "
      "(csrc/sampling/disjoint_relabel.h): (per edge its source's id within its type, per type "
      "its sources' keys).");
}

}  // namespace gnnrepro
