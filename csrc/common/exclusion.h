// Edges excluded from one call's sampling (link prediction: a batch's own edges and their
// reverses, DGL's `exclude`), the per-destination rule the CPU op and the CUDA kernels share
// (host and device). The excluded edges are a sorted array of distinct CSC positions; a
// destination whose list [lo, hi) holds k of them samples uniformly among its other hi - lo - k
// neighbours: offset t of those is position lo + t moved past every excluded position at or
// before it.
#pragma once
#include <cstdint>
#include <vector>

#include "hd.h"

namespace gnnrepro {

// First index i in [0, n) with sorted[i] >= value (n if none).
GNNREPRO_HD int64_t first_not_below(const int64_t* sorted, int64_t n, int64_t value) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (sorted[mid] < value) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// Excluded positions in [lo, hi).
GNNREPRO_HD int64_t excluded_in(const int64_t* excluded, int64_t n, int64_t lo, int64_t hi) {
  return first_not_below(excluded, n, hi) - first_not_below(excluded, n, lo);
}

// The position of a pick at `position` (lo + its offset among the kept neighbours), moved past
// the excluded positions from index `first` (the first not below lo) that lie at or before it.
GNNREPRO_HD int64_t skip_excluded(int64_t position, const int64_t* excluded, int64_t n,
                                  int64_t first) {
  for (int64_t j = first; j < n && excluded[j] <= position; ++j) ++position;
  return position;
}

// A call's excluded positions bucketed by position (2^shift positions a bucket; bucket b's
// entries are excluded[start[b], start[b + 1])), so that a destination finds those near its
// list with two loads instead of searching them all: the CPU op, where most lists hold none.
// The rules above then run on that short span and give what they give on the whole array.
struct ExcludedBuckets {
  const int64_t* excluded = nullptr;
  const int64_t* start = nullptr;
  int64_t count = 0;
  int shift = 0;
};

// Sorted excluded positions, n of them.
struct ExcludedSpan {
  const int64_t* excluded;
  int64_t n;
};

// The entries of the buckets that [lo, hi) overlaps: every excluded position in [lo, hi) and
// perhaps a few beside it, sorted (none if nothing is excluded or hi <= lo).
GNNREPRO_HD ExcludedSpan excluded_near(const ExcludedBuckets& b, int64_t lo, int64_t hi) {
  if (b.count == 0 || hi <= lo) return {nullptr, 0};
  const int64_t first = b.start[lo >> b.shift];
  return {b.excluded + first, b.start[((hi - 1) >> b.shift) + 1] - first};
}

// The entries at or after position lo, to the last: skip_excluded's array from a list that
// starts at lo (searched within lo's bucket only).
GNNREPRO_HD ExcludedSpan excluded_from(const ExcludedBuckets& b, int64_t lo) {
  if (b.count == 0) return {nullptr, 0};
  const int64_t bucket = lo >> b.shift, begin = b.start[bucket];
  const int64_t first =
      begin + first_not_below(b.excluded + begin, b.start[bucket + 1] - begin, lo);
  return {b.excluded + first, b.count - first};
}

// Buckets for the n sorted positions `excluded` in [0, num_edges): about 8 a position (a power
// of two positions each), their starts written to `start`.
inline ExcludedBuckets bucket_excluded(const int64_t* excluded, int64_t n, int64_t num_edges,
                                       std::vector<int64_t>& start) {
  if (n == 0 || num_edges == 0) return {};
  int shift = 0;
  while (((num_edges - 1) >> shift) + 1 > 8 * n) ++shift;
  const int64_t buckets = ((num_edges - 1) >> shift) + 1;
  start.assign(buckets + 1, 0);
  for (int64_t i = 0; i < n; ++i) ++start[(excluded[i] >> shift) + 1];
  for (int64_t b = 0; b < buckets; ++b) start[b + 1] += start[b];
  return {excluded, start.data(), n, shift};
}

}  // namespace gnnrepro
