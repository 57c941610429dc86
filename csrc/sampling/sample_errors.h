// The errors sample_fused reports, shared by its CPU and CUDA kernels so that both raise the same
// error for the same input, also when several are present: each kernel records every error it
// meets (a bit, and the smallest offending position or node) and raises the first in this order.
// The CPU op meets them in this order by construction; the CUDA op's per-layer sync holds this
// layer's sampling errors and the next layer's indptr errors, which this order also serves.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <string>

namespace gnnrepro {

enum SampleError : uint64_t {
  // an excluded_edges entry out of order or range: the first relation's smallest such entry.
  // First, as both ops check host entries with their arguments (typed_spec.h); the CUDA op
  // checks entries in GPU memory in a kernel and raises them at its first sync.
  kBadExcluded = 64,
  kBadSeed = 1,         // a seed outside [0, N): the smallest such position
  kDirtySeedMap = 2,    // node_map[seed] != -1 on entry
  kDuplicateSeed = 4,   // a node twice in seeds: the smallest such node
  kBadIndex = 8,        // indices[p] outside [0, N) at a sampled position: the smallest p
  kDirtyMap = 16,       // a sampled neighbour's entry that the op did not write (relabel.h)
  kBadIndptr = 32,      // indptr[v] > indptr[v + 1] or outside [0, E): the smallest such node
};

// Positions and nodes are those of one relation or node type (named when the graph is typed):
// a seed's type, a relation's position in its `indices`, a node id of the relation's
// destination type.
struct SampleErrorDetail {
  int64_t bad_seed_pos = -1;
  int64_t bad_seed_value = 0;
  int64_t bad_seed_type = 0;
  int64_t duplicate_node = -1;
  int64_t duplicate_type = 0;
  int64_t bad_index_pos = -1;
  int64_t bad_index_value = 0;
  int64_t bad_index_rel = 0;
  int64_t bad_index_limit = -1;  // the relation's source nodes (-1: num_nodes)
  int64_t bad_indptr_node = -1;
  int64_t bad_indptr_rel = 0;
  int64_t bad_excluded_rel = 0;
  int64_t bad_excluded_entry = -1;
  int64_t bad_excluded_value = 0;
  int64_t bad_excluded_limit = 0;  // the relation's edges
};

// " of node type t" / " of relation r" where the graph is typed, else nothing.
inline std::string typed_part(bool typed, const char* what, int64_t index) {
  return typed ? std::string(" of ") + what + " " + std::to_string(index) : std::string();
}

// Raises the first error of `errors` in the order above; returns if there is none. Exclusion
// and seed errors are ValueErrors in Python (the FusedSampler leaves the seeds' checks to the
// op), the others RuntimeErrors (the graph and the map are checked by their Python owners).
// `num_nodes` is the seed's type's node count for kBadSeed; `typed` names types and relations
// in the message.
inline void raise_sample_error(uint64_t errors, const SampleErrorDetail& d, int64_t num_nodes,
                               bool typed = false) {
  if (errors == 0) return;
  TORCH_CHECK_VALUE(!(errors & kBadExcluded), "excluded_edges of relation ", d.bad_excluded_rel,
                    " must be sorted, distinct CSC positions in [0, ", d.bad_excluded_limit,
                    "): entry ", d.bad_excluded_entry, " is ", d.bad_excluded_value);
  TORCH_CHECK_VALUE(!(errors & kBadSeed), "seeds", typed_part(typed, "node type", d.bad_seed_type),
                    " must lie in [0, num_nodes=", num_nodes, "): seeds[", d.bad_seed_pos,
                    "] = ", d.bad_seed_value);
  TORCH_CHECK(!(errors & kDirtySeedMap),
              "node_map must be all -1 on entry (a seed's entry is not)");
  TORCH_CHECK_VALUE(!(errors & kDuplicateSeed), "seeds must be unique node ids; node ",
                    d.duplicate_node, typed_part(typed, "node type", d.duplicate_type),
                    " appears twice");
  TORCH_CHECK(!(errors & kBadIndex), "indices", typed_part(typed, "relation", d.bad_index_rel),
              " holds node id ", d.bad_index_value, " outside [0, ",
              d.bad_index_limit < 0 ? num_nodes : d.bad_index_limit, ") at position ",
              d.bad_index_pos);
  TORCH_CHECK(!(errors & kDirtyMap),
              "node_map must be all -1 on entry (a sampled neighbour's entry is not)");
  TORCH_CHECK(!(errors & kBadIndptr), "indptr", typed_part(typed, "relation", d.bad_indptr_rel),
              " is not a valid CSC offset array at node ", d.bad_indptr_node);
  TORCH_CHECK(false, "sample_fused: unknown error bits ", errors);
}

}  // namespace gnnrepro
