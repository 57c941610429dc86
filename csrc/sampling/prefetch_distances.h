// How many items ahead the CPU sampler's loops prefetch the random cache lines they will touch
// (sample_fused_cpu.cpp), in one place so that the random-read probe (csrc/bench) prefetches
// as the sampler does when it measures the ceiling the sampler is compared with.
#pragma once
#include <cstdint>

namespace gnnrepro {

constexpr int64_t kPrefetchAhead = 16;         // indptr entries of the destinations
constexpr int64_t kRelabelPrefetchAhead = 32;  // relabel map entries of the picked nodes
constexpr int64_t kOwnerPrefetchAhead = 12;    // the source list entries the map check reads
constexpr int64_t kGatherPrefetchAhead = 64;   // `indices` entries at the picked positions
constexpr int64_t kWeightedPrefetchAhead = 4;  // weighted destinations whose weights are read
constexpr int64_t kRedrawsInFlight = 8;        // weighted destinations waiting on a redraw's entry
constexpr int64_t kDeferredPicksMax = 64;      // ... of at most this many picks (a resume marks
                                               // its destination's earlier picks again)

constexpr int kTimeSearchGroup = 16;  // temporal searches run in lockstep (their misses overlap)

}  // namespace gnnrepro
