// Multi-threaded row gather on the CPU: out[i, :] = src[index[i], :].
//
// This is stage 2 (feature extraction) of every mini-batch: the rows of the input nodes are
// copied straight into a caller-owned buffer (in the pipeline a pinned staging slot, so the
// host-to-device copy that follows needs no bounce buffer). Rows are copied as bytes, so every
// dtype works; the reads are random, so each thread prefetches the rows a few iterations ahead
// to keep several cache misses in flight instead of one.
#include <ATen/MemoryOverlap.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "../common/gather_index.h"
#include "gather_args.h"

namespace gnnrepro {
namespace {

// Rows ahead of the one being copied whose cache lines are prefetched.
constexpr int64_t kPrefetchRows = 8;
// Bytes of each upcoming row that are prefetched (the hardware prefetcher streams the rest).
constexpr int64_t kPrefetchBytes = 512;
constexpr int64_t kCacheLine = 64;
// Bytes one parallel task copies at least, so small gathers stay on the calling thread.
constexpr int64_t kGrainBytes = 64 * 1024;

// Lowers `first` to `i` if `i` is smaller (first is the smallest bad position seen so far).
inline void note_first(std::atomic<int64_t>& first, int64_t i) {
  int64_t seen = first.load(std::memory_order_relaxed);
  while (i < seen && !first.compare_exchange_weak(seen, i, std::memory_order_relaxed)) {
  }
}

// Copies every in-range row; an out-of-range index is not read, and the smallest such position
// is raised after the parallel region, from the calling thread (an exception thrown inside an
// OpenMP region unwinds through the runtime's frames, which not every toolchain survives).
template <typename IdT>
void gather_rows_typed(const char* src, int64_t num_rows, int64_t row_bytes, const IdT* index,
                       int64_t n, char* out) {
  const int64_t grain = std::max<int64_t>(1, kGrainBytes / std::max<int64_t>(row_bytes, 1));
  const int64_t prefetch_bytes = std::min(row_bytes, kPrefetchBytes);
  std::atomic<int64_t> first_bad{n};
  at::parallel_for(0, n, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      if (i + kPrefetchRows < end) {
        const auto ahead = static_cast<int64_t>(index[i + kPrefetchRows]);
        if (row_in_range(ahead, num_rows)) {
          const char* p = src + row_offset(ahead, row_bytes, 0);
          for (int64_t b = 0; b < prefetch_bytes; b += kCacheLine) __builtin_prefetch(p + b);
        }
      }
      const auto row = static_cast<int64_t>(index[i]);
      if (!row_in_range(row, num_rows)) {
        note_first(first_bad, i);
        continue;
      }
      std::memcpy(out + row_offset(i, row_bytes, 0), src + row_offset(row, row_bytes, 0),
                  row_bytes);
    }
  });
  const int64_t bad = first_bad.load();
  TORCH_CHECK(bad == n, "index[", bad, "] = ", bad < n ? static_cast<int64_t>(index[bad]) : 0,
              " is outside [0, ", num_rows, ")");
}

void gather_rows_cpu(const at::Tensor& src, const at::Tensor& index, at::Tensor& out) {
  check_gather_args(src, index, out);
  TORCH_CHECK(src.device().is_cpu() && index.device().is_cpu() && out.device().is_cpu(),
              "src, index and out must all be CPU tensors");
  const int64_t n = index.numel();
  if (n == 0 || src.size(1) == 0) return;
  at::assert_no_overlap(out.narrow(0, 0, n), src);
  const at::Tensor idx = index.contiguous();
  const int64_t row_bytes = src.size(1) * static_cast<int64_t>(src.element_size());
  const auto* s = static_cast<const char*>(src.const_data_ptr());
  auto* o = static_cast<char*>(out.data_ptr());
  if (idx.scalar_type() == at::kInt) {
    gather_rows_typed(s, src.size(0), row_bytes, idx.const_data_ptr<int32_t>(), n, o);
  } else {
    gather_rows_typed(s, src.size(0), row_bytes, idx.const_data_ptr<int64_t>(), n, o);
  }
}

}  // namespace

TORCH_LIBRARY_IMPL(gnnrepro, CPU, m) { m.impl("gather_rows", &gather_rows_cpu); }

}  // namespace gnnrepro
