// A small cache of the CPU op outputs' memory, so that steady-state batches reuse pages that are
// already mapped instead of making the kernel fault in and clear fresh ones.
//
// A sampled batch returns large new tensors, which the caller frees a batch or a few later.
// glibc returns blocks that large to the kernel (munmap, or trimming the arena of the OpenMP
// thread that allocated them), so without the pool every batch would page-fault in fresh memory
// for all its outputs. Tensors from `pooled_empty` hand their block back to the pool when
// they are freed (in any thread); the next batch takes a block of its size class from there.
// The pool keeps at most kMaxCachedBytes; what does not fit goes back to the system.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace gnnrepro {

// Outputs smaller than this come from torch's allocator: they fault in few pages.
constexpr size_t kPooledMinBytes = size_t{256} << 10;
// Freed blocks the pool keeps, at most (a few batches' outputs).
constexpr size_t kMaxCachedBytes = size_t{32} << 20;

// An uninitialized contiguous CPU tensor of `numel` elements of `dtype`, whose memory comes from
// the pool (and returns to it) when it is at least kPooledMinBytes and at most kMaxCachedBytes.
// Resizable like any tensor.
at::Tensor pooled_empty(int64_t numel, at::ScalarType dtype);

// The pool's counters: {bytes cached now, kMaxCachedBytes, allocations served from the cache,
// allocations that took new memory}. For tests and benchmarks.
std::vector<int64_t> output_pool_stats();

}  // namespace gnnrepro
