// Temporal sampling: which neighbours one destination may pick at its seed's time, as
// per-element steps (host and device) that the CPU op runs, and a CUDA kernel will share (the
// CUDA op refuses temporal calls today).
//
// A timed relation's edges are sorted by time within each destination (non-decreasing `times`
// over every neighbour list), so the candidates at time T are one contiguous range, found by
// two binary searches (TimeSearch): the first edge after T ends it and, given a window w >= 0,
// the first edge after T - w - 1 (window_floor) begins it.
// Uniform picks are then the uniform rules (picks.h) over that range; "last" picks are its
// `fanout` most recent edges, in time order. Excluded edges (exclusion.h) are no candidates:
// the picks are made among the range's other positions.
#pragma once
#include <cstdint>

#include "exclusion.h"
#include "hd.h"

namespace gnnrepro {

// PyG's temporal_strategy names.
enum TemporalStrategy : int64_t { kTemporalUniform = 0, kTemporalLast = 1 };

// A destination's candidate range [begin, end) of neighbour positions.
struct CandidateRange {
  int64_t begin, end;
};

// The search for the first position p in [lo, hi) with times[p] > t (hi if none), as a state
// {lo, hi - lo} that one step advances (std::upper_bound's steps), so that a caller can run
// many searches in lockstep and overlap their cache misses (the CPU op). A list that is not
// sorted gives some position in [lo, hi], never one outside it. `first`: the answer so far;
// `count`: how many positions after it are still open.
struct TimeSearch {
  int64_t first, count;
};

// One step of `s` for time t: halves its open positions. Returns whether steps remain.
GNNREPRO_HD bool time_search_step(TimeSearch& s, const int64_t* times, int64_t t) {
  if (s.count <= 0) return false;
  const int64_t half = s.count / 2;
  // Masks, not branches (the CPU op's lockstep searches would mispredict half of them):
  // after -> first + half + 1 and count - half - 1, that is half - 1 + (count & 1); else half.
  const int64_t after = -static_cast<int64_t>(times[s.first + half] <= t);
  s.first += (half + 1) & after;
  s.count = half + (((s.count & 1) - 1) & after);
  return s.count > 0;
}

// The floor of a window: the time after which candidates start, time - window - 1, or whether
// it falls below the smallest int64 (then every earlier edge is a candidate).
GNNREPRO_HD bool window_floor(int64_t time, int64_t window, int64_t* floor) {
  constexpr int64_t kMin = -9223372036854775807LL - 1;
  if (time < kMin + window + 1) return false;
  *floor = time - window - 1;
  return true;
}

// The range the destination samples from under `strategy`: every candidate (uniform), or its
// min(fanout, candidates) most recent ones (last; fanout -1: all of them).
GNNREPRO_HD CandidateRange strategy_range(CandidateRange c, int64_t fanout, int64_t strategy) {
  if (strategy != kTemporalLast || fanout < 0 || c.end - c.begin <= fanout) return c;
  return {c.end - fanout, c.end};
}

// A destination's sampled range and how many positions in it are kept (not excluded).
struct KeptRange {
  CandidateRange range;
  int64_t kept;
};

// strategy_range over the candidates that the sorted excluded positions (exclusion.h; n of
// them, none if n is 0) leave: every candidate (uniform), or the shortest range ending at
// c.end that holds min(fanout, kept candidates) kept ones (last). Each step widens the range
// by the excluded positions it took in, so the steps are bounded by the excluded ones in c.
GNNREPRO_HD KeptRange kept_strategy_range(CandidateRange c, int64_t fanout, int64_t strategy,
                                          const int64_t* excluded, int64_t n) {
  if (n == 0) {
    const CandidateRange r = strategy_range(c, fanout, strategy);
    return {r, r.end - r.begin};
  }
  const int64_t kept = c.end - c.begin - excluded_in(excluded, n, c.begin, c.end);
  if (strategy != kTemporalLast || fanout < 0 || kept <= fanout) return {c, kept};
  int64_t begin = c.end - fanout;
  for (int64_t more = excluded_in(excluded, n, begin, c.end); more > 0;) {
    const int64_t wider = begin - more;  // >= c.begin: the range holds fewer than `kept`
    more = excluded_in(excluded, n, wider, begin);
    begin = wider;
  }
  return {{begin, c.end}, fanout};
}

}  // namespace gnnrepro
