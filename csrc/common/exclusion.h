// Edges excluded from one call's sampling (link prediction: a batch's own edges and their
// reverses, DGL's `exclude`), the per-destination rule the CPU op and the CUDA kernels share
// (host and device). The excluded edges are a sorted array of distinct CSC positions; a
// destination whose list [lo, hi) holds k of them samples uniformly among its other hi - lo - k
// neighbours: offset t of those is position lo + t moved past every excluded position at or
// before it.
#pragma once
#include <cstdint>

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

}  // namespace gnnrepro
