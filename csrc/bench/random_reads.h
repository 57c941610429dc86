// The random-read ceiling probe of `bench sampling --ceiling`: independent random 64-byte line
// reads over an array, from a given number of threads, with or without software prefetch (the
// sampler prefetches: csrc/sampling/prefetch_distances.h). What a memory-bound sampler could
// reach at best on this machine, per array it reads; gnnrepro.bench.random_reads times it and
// compares the sampler with it.
#pragma once

// pybind11 with torch's tensor casters and nothing more: torch/python.h adds libtorch's C++
// frontend (4x the parse time of this header, ~15 s of compile per file that includes it).
#include <torch/csrc/utils/pybind.h>

namespace gnnrepro {

// Adds random_line_reads(data, reads_per_thread, threads, seed, prefetch_ahead) and
// sampler_prefetch_ahead() to the Python module.
void register_random_reads(pybind11::module_& m);

}  // namespace gnnrepro
