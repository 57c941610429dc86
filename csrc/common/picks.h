// Which neighbour positions one destination samples: the per-destination rules that the CPU op
// and the CUDA kernels share (host and device). Positions are offsets into the destination's
// neighbour list [0, degree); draws come from rng.h, keyed per (seed, batch, layer, node).
#pragma once
#include <cstdint>

#include "hd.h"
#include "rng.h"

namespace gnnrepro {

// Edges sampled for one destination of in-degree `degree`.
GNNREPRO_HD int64_t pick_count(int64_t degree, int64_t fanout, bool replace) {
  if (fanout < 0) return degree;
  if (replace) return degree > 0 ? fanout : 0;
  return degree < fanout ? degree : fanout;
}

// Whether the destination takes its whole list in order (pick k is offset k): fanout -1, or
// without replacement a fanout that covers the degree.
GNNREPRO_HD bool takes_all(int64_t degree, int64_t count, int64_t fanout, bool replace) {
  return fanout < 0 || (!replace && count == degree);
}

// Offset of pick k with replacement: an independent uniform draw over the list.
GNNREPRO_HD int64_t replace_offset(uint64_t key, int64_t k, int64_t degree) {
  return static_cast<int64_t>(
      below(draw(key, static_cast<uint64_t>(k)), static_cast<uint64_t>(degree)));
}

// Floyd's algorithm for a uniform `count`-subset of [0, degree): step n (0 <= n < count) has
// j = degree - count + n and draws r uniform in [0, j]; it picks r unless an earlier step picked
// r, else j. floyd_j and floyd_draw give j and r; floyd_pick resolves the step.
GNNREPRO_HD int64_t floyd_j(int64_t degree, int64_t count, int64_t n) { return degree - count + n; }

GNNREPRO_HD int64_t floyd_draw(uint64_t key, int64_t degree, int64_t count, int64_t n) {
  return static_cast<int64_t>(below(draw(key, static_cast<uint64_t>(n)),
                                    static_cast<uint64_t>(floyd_j(degree, count, n) + 1)));
}

GNNREPRO_HD int64_t floyd_pick(int64_t r, bool r_taken, int64_t j) { return r_taken ? j : r; }

}  // namespace gnnrepro
