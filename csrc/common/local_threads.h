// Per-thread intra-op thread count: set_local_num_threads(n) gives the calling thread's
// parallel regions (at::parallel_for over OpenMP, as in the sampling and gather ops) n threads,
// and changes nothing for any other thread. torch.set_num_threads cannot do that: it also sets
// torch's process-wide default and MKL's global count, so a Loader worker thread calling it
// would change the trainer's matmuls.
#pragma once

// pybind11 with torch's tensor casters and nothing more: torch/python.h adds libtorch's C++
// frontend (4x the parse time of this header, ~15 s of compile per file that includes it).
#include <torch/csrc/utils/pybind.h>

namespace gnnrepro {

// Adds set_local_num_threads(n) and local_threads_supported() to the Python module.
void register_local_threads(pybind11::module_& m);

}  // namespace gnnrepro
