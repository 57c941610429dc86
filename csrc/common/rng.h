// Counter-based random numbers shared by the CPU and CUDA kernels.
//
// A draw is a pure function of (seed, batch_id, layer, node, draw index), so the picks of a node
// do not depend on threads, workers, ranks or on which device samples: the same inputs give
// bit-identical blocks everywhere. The mixer is SplitMix64's finaliser.
#pragma once
#include <cstdint>

#include "hd.h"

namespace gnnrepro {

GNNREPRO_HD uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Key of one layer of one mini-batch: the same for all its nodes, so loops compute it once.
GNNREPRO_HD uint64_t layer_key(uint64_t seed, uint64_t batch_id, uint64_t layer) {
  return mix64(mix64(mix64(seed) ^ batch_id) ^ layer);
}

// Key of one relation of one layer of a typed graph: relation 0's is the layer's own, so a
// homogeneous graph (one relation) draws what it always drew.
GNNREPRO_HD uint64_t relation_key(uint64_t layer_key, uint64_t relation) {
  return relation == 0 ? layer_key : mix64(layer_key ^ (relation * 0xD1B54A32D192ED03ull));
}

// Stream key of one node in the layer whose layer_key is `layer_key`.
GNNREPRO_HD uint64_t node_key(uint64_t layer_key, uint64_t node) { return mix64(layer_key ^ node); }

// Stream key of one node in one layer of one mini-batch.
GNNREPRO_HD uint64_t node_key(uint64_t seed, uint64_t batch_id, uint64_t layer, uint64_t node) {
  return node_key(layer_key(seed, batch_id, layer), node);
}

// The j-th 64-bit draw of a stream.
GNNREPRO_HD uint64_t draw(uint64_t key, uint64_t j) {
  return mix64(key + j * 0x9E3779B97F4A7C15ull);
}

// Maps a 64-bit draw to [0, n) by multiply-high (bias below n / 2^64).
GNNREPRO_HD uint64_t below(uint64_t r, uint64_t n) {
#if defined(__CUDA_ARCH__)
  return __umul64hi(r, n);
#else
  return static_cast<uint64_t>((static_cast<unsigned __int128>(r) * n) >> 64);
#endif
}

}  // namespace gnnrepro
