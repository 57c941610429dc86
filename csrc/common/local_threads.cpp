// See local_threads.h. OpenMP's thread count is an internal control variable of the calling
// thread (omp_set_num_threads changes only that thread's), which is what torch.get_num_threads
// reports under the OpenMP backend. The extension is compiled with -fopenmp but not linked
// with it (setup.py): omp_set_num_threads resolves to the runtime torch loaded.
#include "local_threads.h"

#include <ATen/Config.h>
#include <ATen/Parallel.h>

#if AT_PARALLEL_OPENMP && defined(_OPENMP)
#include <omp.h>
#define GNNREPRO_LOCAL_THREADS 1
#else
#define GNNREPRO_LOCAL_THREADS 0
#endif

namespace gnnrepro {
namespace {

void set_local_num_threads(int64_t n) {
  TORCH_CHECK_VALUE(n >= 1, "set_local_num_threads: n must be >= 1, got ", n);
  TORCH_CHECK(GNNREPRO_LOCAL_THREADS,
              "set_local_num_threads: this build has no per-thread thread count (torch's "
              "parallel backend is not OpenMP, or the extension was compiled without it)");
#if GNNREPRO_LOCAL_THREADS
  // First torch's per-thread initialisation, which would otherwise run at this thread's first
  // parallel region and reset the count to the process default. Its "done" flag is a
  // thread_local of an inline function, so each library has its own: this extension's (for
  // the at::parallel_for regions compiled into our ops) and libtorch's (for torch's ops and
  // torch.get_num_threads), initialised here through at::get_num_threads.
  at::internal::lazy_init_num_threads();
  at::get_num_threads();
  omp_set_num_threads(static_cast<int>(n));
#endif
}

}  // namespace

void register_local_threads(pybind11::module_& m) {
  m.def("set_local_num_threads", &set_local_num_threads, pybind11::arg("n"),
        "Give the calling thread's intra-op parallel regions n threads; other threads and "
        "torch's process-wide default are unchanged (csrc/common/local_threads.h).");
  m.def("local_threads_supported", []() { return bool(GNNREPRO_LOCAL_THREADS); },
        "Whether set_local_num_threads works in this build (torch on OpenMP).");
}

}  // namespace gnnrepro
