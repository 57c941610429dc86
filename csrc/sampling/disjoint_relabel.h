// The relabel of one layer of a disjoint (temporal) call by sorting, for the CUDA op: the CPU op
// relabels with a hash map keyed by (seed index, node) per calling thread (sample_fused_cpu.cpp),
// which a GPU grid has no use for. Written in ATen ops on whatever device the tensors are on, so
// that the CPU tests run the same code the GPU runs and compare it with the CPU op's numbering.
//
// A key is (seed index << shift) | global node id (node_mask = 2^shift - 1). The numbering is the
// CPU op's: per node type, its destinations keep their ids 0, 1, ... (type t's keys are
// dst_keys[dst_begin[t], dst_begin[t + 1])), and its new sources take the next ids in order of
// first appearance in edge_keys (the layer's edges, relations in order). An edge key below 0 (a
// bad index, raised by the caller) gets id 0 and is no source.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace pybind11 {
class module_;  // declared only: the CUDA op includes this header without pybind11
}  // namespace pybind11

namespace gnnrepro {

struct DisjointRelabel {
  at::Tensor ids;                   // per edge, its source's id within the source's type
  std::vector<at::Tensor> sources;  // per type, its sources' keys in id order
};

// dst_begin: num_types + 1 host offsets into dst_keys; offsets: num_types + 1 global id offsets
// of the node types (a key's type is the one whose range holds key & node_mask). Two host syncs
// (the new sources' count and their count per type).
DisjointRelabel disjoint_relabel(const at::Tensor& dst_keys, const std::vector<int64_t>& dst_begin,
                                 const at::Tensor& edge_keys, const std::vector<int64_t>& offsets,
                                 int64_t node_mask);

// Adds disjoint_relabel(dst_keys, dst_begin, edge_keys, offsets, node_mask) -> (ids, sources) to
// the Python module: the tests compare it with the CPU op's numbering and with a reference.
void register_disjoint_relabel(pybind11::module_& m);

}  // namespace gnnrepro
