// See random_reads.h. Thread t reads line mix(key_t + i) % lines for i < reads_per_thread, where
// key_t = mix(seed ^ mix(t)) and mix is SplitMix64's finaliser of (x + golden ratio), as
// gnnrepro.datasets.class_rows.splitmix64; it adds the line's first 8 bytes to a wrapping sum.
// The reads do not depend on each other, so the core keeps as many in flight as it can; with
// prefetch_ahead > 0 it also prefetches the line of read i + prefetch_ahead, as the sampler's
// loops do (csrc/sampling/prefetch_distances.h). Returns the sum over all threads (what the
// tests recompute in numpy, and what keeps the compiler from dropping the reads).
#include "random_reads.h"

#include "../sampling/prefetch_distances.h"

#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace gnnrepro {
namespace {

constexpr int64_t kLineBytes = 64;
constexpr int64_t kMaxThreads = 1024;
constexpr int64_t kMaxPrefetchAhead = 1024;

inline uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

uint64_t read_line(const unsigned char* base, uint64_t line) {
  uint64_t value;
  std::memcpy(&value, base + line * kLineBytes, sizeof value);
  return value;
}

// Each read's line is computed once in either variant (with prefetch: `ahead` reads early, kept
// in a ring), so the two differ only in the prefetches.
uint64_t read_lines(const unsigned char* base, uint64_t lines, int64_t reads, uint64_t key,
                    int64_t ahead) {
  uint64_t sum = 0;
  if (ahead == 0) {
    for (int64_t i = 0; i < reads; ++i) {
      sum += read_line(base, mix(key + static_cast<uint64_t>(i)) % lines);
    }
    return sum;
  }
  uint64_t ring[kMaxPrefetchAhead];
  for (int64_t i = 0; i < std::min(ahead, reads); ++i) {
    ring[i] = mix(key + static_cast<uint64_t>(i)) % lines;
    __builtin_prefetch(base + ring[i] * kLineBytes);
  }
  int64_t slot = 0;  // i % ahead, without a division a read
  for (int64_t i = 0; i < reads; ++i) {
    const uint64_t line = ring[slot];
    if (ahead < reads - i) {  // read i + ahead exists (no overflow for any ahead)
      const uint64_t next = mix(key + static_cast<uint64_t>(i + ahead)) % lines;
      __builtin_prefetch(base + next * kLineBytes);
      ring[slot] = next;
    }
    sum += read_line(base, line);
    if (++slot == ahead) slot = 0;
  }
  return sum;
}

uint64_t random_line_reads(const at::Tensor& data, int64_t reads_per_thread, int64_t threads,
                           uint64_t seed, int64_t prefetch_ahead) {
  TORCH_CHECK_VALUE(data.device().is_cpu(), "random_line_reads: data must be on the CPU");
  TORCH_CHECK_VALUE(data.is_contiguous(), "random_line_reads: data must be contiguous");
  const int64_t bytes = data.numel() * static_cast<int64_t>(data.element_size());
  TORCH_CHECK_VALUE(bytes >= kLineBytes, "random_line_reads: data must hold at least ",
                    kLineBytes, " bytes, got ", bytes);
  TORCH_CHECK_VALUE(reads_per_thread >= 0, "random_line_reads: reads_per_thread must be >= 0, "
                    "got ", reads_per_thread);
  TORCH_CHECK_VALUE(threads >= 1 && threads <= kMaxThreads, "random_line_reads: threads must "
                    "be in [1, ", kMaxThreads, "], got ", threads);
  TORCH_CHECK_VALUE(prefetch_ahead >= 0 && prefetch_ahead <= kMaxPrefetchAhead,
                    "random_line_reads: prefetch_ahead must be in [0, ", kMaxPrefetchAhead,
                    "], got ", prefetch_ahead);
  const auto* base = static_cast<const unsigned char*>(data.data_ptr());
  const uint64_t lines = static_cast<uint64_t>(bytes / kLineBytes);
  std::vector<uint64_t> sums(static_cast<size_t>(threads), 0);
  {
    pybind11::gil_scoped_release no_gil;
#pragma omp parallel for num_threads(static_cast<int>(threads)) schedule(static, 1)
    for (int64_t t = 0; t < threads; ++t) {
      sums[t] = read_lines(base, lines, reads_per_thread, mix(seed ^ mix(t)), prefetch_ahead);
    }
  }
  uint64_t total = 0;
  for (uint64_t s : sums) total += s;
  return total;
}

}  // namespace

void register_random_reads(pybind11::module_& m) {
  m.def("random_line_reads", &random_line_reads, pybind11::arg("data"),
        pybind11::arg("reads_per_thread"), pybind11::arg("threads"), pybind11::arg("seed"),
        pybind11::arg("prefetch_ahead") = 0,
        "Independent random 64-byte line reads over `data` from `threads` threads, each "
        "prefetching `prefetch_ahead` reads ahead (0: none) (csrc/bench/random_reads.h); the "
        "wrapping sum of each line's first 8 bytes.");
  m.def("sampler_prefetch_ahead", []() {
    return std::map<std::string, int64_t>{{"indptr", kPrefetchAhead},
                                          {"node_map", kRelabelPrefetchAhead},
                                          {"sources", kOwnerPrefetchAhead},
                                          {"indices", kGatherPrefetchAhead}};
  }, "How far ahead the CPU sampler prefetches each array it reads at random "
     "(csrc/sampling/prefetch_distances.h).");
}

}  // namespace gnnrepro
