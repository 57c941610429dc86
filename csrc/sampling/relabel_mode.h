// From how many threads the CPU sampler relabels a layer's sources in parallel (sample_fused_cpu
// .cpp) rather than in its ordered pass beside the sampling. Both give the same local ids (first
// appearance order); the ordered pass is one pass over the edges but one thread at a time, the
// parallel one four passes (claim, verify, assign, resolve) on every thread. Process-wide, read once per op call; an atomic, so
// that a benchmark may change it while other threads sample.
#pragma once

#include <cstdint>

namespace pybind11 {
class module_;  // declared only: the sampler includes this header without pybind11
}  // namespace pybind11

namespace gnnrepro {

// The op's team size from which the parallel relabel is used.
int64_t parallel_relabel_threads();

// Adds parallel_relabel_threads(n=-1) -> previous to the Python module (n < 0: query only).
void register_relabel_mode(pybind11::module_& m);

}  // namespace gnnrepro
