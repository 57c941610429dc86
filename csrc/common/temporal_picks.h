// Temporal sampling: which neighbours one destination may pick at its seed's time, the
// per-destination rule that the CPU op and the CUDA kernels share (host and device).
//
// A timed relation's edges are sorted by time within each destination (non-decreasing `times`
// over every neighbour list), so the candidates at time T are one contiguous range, found by
// two binary searches: the edges with time <= T and, given a window w >= 0, time >= T - w.
// Uniform picks are then the uniform rules (picks.h) over that range; "last" picks are its
// `fanout` most recent edges, in time order.
#pragma once
#include <cstdint>

#include "hd.h"

namespace gnnrepro {

// PyG's temporal_strategy names.
enum TemporalStrategy : int64_t { kTemporalUniform = 0, kTemporalLast = 1 };

// A destination's candidate range [begin, end) of neighbour positions.
struct CandidateRange {
  int64_t begin, end;
};

// First position p in [lo, hi) with times[p] > t (hi if none): times[lo..hi) non-decreasing.
GNNREPRO_HD int64_t first_after(const int64_t* times, int64_t lo, int64_t hi, int64_t t) {
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (times[mid] <= t) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// The neighbours in [lo, hi) whose time lies in [time - window, time] (window < 0: no lower
// bound). A list that is not sorted gives some range inside [lo, hi), never one outside it.
GNNREPRO_HD CandidateRange temporal_candidates(const int64_t* times, int64_t lo, int64_t hi,
                                               int64_t time, int64_t window) {
  const int64_t end = first_after(times, lo, hi, time);
  if (window < 0) return {lo, end};
  // time - window - 1, saturating: the first position after it starts the window.
  constexpr int64_t kMin = -9223372036854775807LL - 1;
  const bool floor_below_min = time < kMin + window + 1;
  const int64_t begin = floor_below_min ? lo : first_after(times, lo, end, time - window - 1);
  return {begin, end};
}

// The range the destination samples from under `strategy`: every candidate (uniform), or its
// min(fanout, candidates) most recent ones (last; fanout -1: all of them).
GNNREPRO_HD CandidateRange strategy_range(CandidateRange c, int64_t fanout, int64_t strategy) {
  if (strategy != kTemporalLast || fanout < 0 || c.end - c.begin <= fanout) return c;
  return {c.end - fanout, c.end};
}

}  // namespace gnnrepro
