// The relabel rule both sample_fused kernels apply: destinations keep local ids 0..n-1 and each
// new source takes the next id in order of first appearance (destinations in order, then each
// destination's picks in order). And the node_map contract they both check (ops.cpp).
#pragma once
#include <cstdint>

#include "hd.h"

namespace gnnrepro {

// node_map value of a node without a local id.
constexpr int32_t kUnmapped = -1;

// Whether node_map[u] = m is a local id of the sources so far, src[0..next): in range to read.
GNNREPRO_HD bool map_id_in_range(int64_t m, int64_t next) {
  return static_cast<uint64_t>(m) < static_cast<uint64_t>(next);
}

// Whether node_map[u] = m is a value the op itself could have written: -1, or a local id whose
// source list entry is u (src[0..next) holds the nodes with ids 0..next-1). Any other value is
// stale content from outside, which both kernels report as a dirty map.
GNNREPRO_HD bool map_entry_ok(int64_t m, int64_t u, int64_t next, const int64_t* src) {
  return m == kUnmapped || (map_id_in_range(m, next) && src[m] == u);
}

}  // namespace gnnrepro
