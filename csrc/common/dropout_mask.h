// Which elements dropout keeps: a pure function of (seed, element index), shared by host and
// device code. Element i keeps when its 16-bit lane of the counter-based draw(key, i / 4)
// (rng.h) is at or above round(p * 2^16): keep probability 1 - p with p rounded to a multiple
// of 2^-16, the same on any number of threads. Four elements per draw keep the generator's
// cost below the memory traffic of the activations.
#pragma once
#include <cstdint>

#include "hd.h"
#include "rng.h"

namespace gnnrepro {

constexpr int kDropoutLanes = 4;

// The 16-bit threshold of drop probability p in [0, 1).
GNNREPRO_HD uint32_t dropout_threshold(double p) {
  const auto t = static_cast<uint32_t>(p * 65536.0 + 0.5);
  return t < 65535u ? t : 65535u;
}

// The scale of a kept element: one over the keep probability the threshold gives.
GNNREPRO_HD double dropout_scale(double p) {
  return 65536.0 / (65536.0 - static_cast<double>(dropout_threshold(p)));
}

// Whether lane `lane` (0..3) of draw `r` keeps its element: 1 or 0.
GNNREPRO_HD uint32_t dropout_keep(uint64_t r, int lane, uint32_t threshold) {
  return static_cast<uint32_t>((r >> (16 * lane)) & 0xFFFFu) >= threshold;
}

}  // namespace gnnrepro
