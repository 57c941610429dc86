// See relabel_mode.h. pybind11 first: its namespace carries a visibility attribute that the
// header's declaration of module_ must not precede.
#include <torch/csrc/utils/pybind.h>

#include "relabel_mode.h"

#include <atomic>

namespace gnnrepro {
namespace {

// The default: below 8 threads the ordered pass, which overlaps the sampling, costs less than
// four parallel passes (measured at 1 and 2 threads, predicted beyond: benchmarks/NOTES.md,
// issue 49 item 6; benchmarks/sampler_threads.py measures both at 1-16 threads).
constexpr int64_t kDefaultParallelRelabelThreads = 8;
std::atomic<int64_t> parallel_from{kDefaultParallelRelabelThreads};

int64_t set_parallel_relabel_threads(int64_t threads) {
  if (threads < 0) return parallel_from.load(std::memory_order_relaxed);
  TORCH_CHECK_VALUE(threads >= 1, "parallel_relabel_threads: threads must be >= 1 (or < 0 to ",
                    "query), got 0");
  return parallel_from.exchange(threads, std::memory_order_relaxed);
}

}  // namespace

int64_t parallel_relabel_threads() { return parallel_from.load(std::memory_order_relaxed); }

void register_relabel_mode(pybind11::module_& m) {
  m.def("parallel_relabel_threads", &set_parallel_relabel_threads, pybind11::arg("threads") = -1,
        "From how many threads the CPU sampler relabels in parallel; returns the previous "
        "setting (threads < 0: query only). The blocks are the same either way "
        "(csrc/sampling/relabel_mode.h).");
}

}  // namespace gnnrepro
