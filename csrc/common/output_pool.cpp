// See output_pool.h. One process-wide pool behind a mutex: tensors are freed on whatever thread
// drops the last reference, and the pool must outlive every tensor it handed out (it is never
// destroyed, so tensors still alive at interpreter exit can return their blocks safely). A fork
// takes the mutex first (pthread_atfork), so a child never inherits it locked by a thread that
// does not exist in the child.
#include "output_pool.h"

#include <ATen/EmptyTensor.h>
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>

#include <pthread.h>

#include <iterator>
#include <map>
#include <mutex>

namespace gnnrepro {
namespace {

// Each block starts with a header holding its capacity; the data follows, 64-byte aligned.
constexpr size_t kHeader = 64;

// Block sizes are rounded up to one of 8 steps per power of two (at most 12.5% more), so that
// batches whose outputs differ by a few percent reuse each other's blocks. Only called for
// nbytes <= kMaxCachedBytes (a power of two), so the class is at most kMaxCachedBytes.
size_t size_class(size_t nbytes) {
  size_t power = 1;
  while (power * 2 <= nbytes) power *= 2;
  const size_t step = power / 8;
  return (nbytes + step - 1) / step * step;
}

class OutputPool final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t nbytes) override {
    // Smaller blocks fault in few pages; larger ones would never fit in the cache.
    if (nbytes < kPooledMinBytes || nbytes > kMaxCachedBytes) {
      return c10::GetCPUAllocator()->allocate(nbytes);
    }
    const size_t capacity = size_class(nbytes);
    char* block = take(capacity);
    if (block == nullptr) {
      block = static_cast<char*>(c10::alloc_cpu(kHeader + capacity));
      *reinterpret_cast<size_t*>(block) = capacity;
    }
    return {block + kHeader, block, &OutputPool::give_back, c10::Device(c10::DeviceType::CPU)};
  }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }

  std::vector<int64_t> stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return {static_cast<int64_t>(cached_bytes_), static_cast<int64_t>(kMaxCachedBytes), hits_,
            misses_};
  }

 private:
  // The most recently cached block of exactly `capacity` bytes (its pages are the likeliest to
  // be in cache), or nullptr (then a miss is counted).
  char* take(size_t capacity) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto [first, end] = free_.equal_range(capacity);
    if (first == end) {
      ++misses_;
      return nullptr;
    }
    const auto it = std::prev(end);  // equal keys are kept in insertion order
    char* block = it->second;
    free_.erase(it);
    cached_bytes_ -= capacity;
    ++hits_;
    return block;
  }

  // The deleter of every pooled tensor: keeps the block if the cache has room for it, after
  // dropping blocks of other size classes when that makes room (the newest sizes are the likely
  // next ones); else frees it and leaves the cache as it is.
  static void give_back(void* ctx) {
    char* block = static_cast<char*>(ctx);
    const size_t capacity = *reinterpret_cast<size_t*>(block);
    OutputPool& pool = instance();
    std::multimap<size_t, char*> dropped;
    {
      std::lock_guard<std::mutex> lock(pool.mutex_);
      const size_t same_class = capacity * pool.free_.count(capacity);
      const bool fits_after_dropping = same_class + capacity <= kMaxCachedBytes;
      auto it = pool.free_.begin();
      while (fits_after_dropping && pool.cached_bytes_ + capacity > kMaxCachedBytes &&
             it != pool.free_.end()) {
        if (it->first == capacity) {
          ++it;
          continue;
        }
        pool.cached_bytes_ -= it->first;
        dropped.insert(*it);
        it = pool.free_.erase(it);
      }
      if (pool.cached_bytes_ + capacity <= kMaxCachedBytes) {
        pool.free_.emplace(capacity, block);
        pool.cached_bytes_ += capacity;
        block = nullptr;
      }
    }
    for (const auto& entry : dropped) c10::free_cpu(entry.second);  // outside the lock
    if (block != nullptr) c10::free_cpu(block);
  }

 public:
  static OutputPool& instance() {
    static OutputPool* pool = [] {
      auto* created = new OutputPool();  // never destroyed: see the file comment
      pthread_atfork([] { instance().mutex_.lock(); }, [] { instance().mutex_.unlock(); },
                     [] { instance().mutex_.unlock(); });
      return created;
    }();
    return *pool;
  }

 private:
  std::mutex mutex_;
  std::multimap<size_t, char*> free_;  // capacity -> cached block
  size_t cached_bytes_ = 0;
  int64_t hits_ = 0, misses_ = 0;
};

}  // namespace

at::Tensor pooled_empty(int64_t numel, at::ScalarType dtype) {
  TORCH_CHECK(numel >= 0, "pooled_empty: numel must be >= 0, got ", numel);
  return at::detail::empty_generic({numel}, &OutputPool::instance(),
                                   c10::DispatchKeySet(c10::DispatchKey::CPU), dtype,
                                   std::nullopt);
}

std::vector<int64_t> output_pool_stats() { return OutputPool::instance().stats(); }

}  // namespace gnnrepro
