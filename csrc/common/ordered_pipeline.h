// Runs `produce(c)` for chunks c = 0..n-1 in parallel and `consume(c)` for every chunk in
// order, each as soon as its chunk is produced, overlapping the serial consumer with the
// parallel producers.
//
// Workers (one at::parallel_for task per torch intra-op thread, so the process keeps one
// threading runtime: torch's) take chunks to produce from a shared counter; whichever worker
// holds the consumer token consumes every produced chunk in order, then hands the token back and
// goes on producing. A worker returns only when every chunk is consumed or another worker is
// producing the rest, so tasks that run one after another on fewer threads also finish.
// `consume` runs on one thread at a time and sees chunks in order, so its result does not
// depend on the number of threads. An exception in any call stops all workers and is rethrown.
#pragma once
#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

namespace gnnrepro {

template <typename Produce, typename Consume>
void ordered_pipeline(int64_t num_chunks, const Produce& produce, const Consume& consume) {
  if (num_chunks <= 0) return;
  std::unique_ptr<std::atomic<bool>[]> produced(new std::atomic<bool>[num_chunks]);
  for (int64_t c = 0; c < num_chunks; ++c) produced[c].store(false, std::memory_order_relaxed);
  std::atomic<int64_t> next_to_produce{0};
  std::atomic<int64_t> consumed{0};
  std::atomic<bool> consumer_busy{false};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex error_mutex;
  const int threads = static_cast<int>(
      std::max<int64_t>(1, std::min<int64_t>(at::get_num_threads(), num_chunks)));

  at::parallel_for(0, threads, 1, [&](int64_t, int64_t) {
    try {
      while (!failed.load(std::memory_order_relaxed)) {
        if (!consumer_busy.exchange(true, std::memory_order_acquire)) {
          int64_t c = consumed.load(std::memory_order_relaxed);
          while (c < num_chunks && produced[c].load(std::memory_order_acquire)) consume(c++);
          consumed.store(c, std::memory_order_release);
          consumer_busy.store(false, std::memory_order_release);
          if (c == num_chunks) break;
        }
        const int64_t c = next_to_produce.fetch_add(1, std::memory_order_relaxed);
        if (c < num_chunks) {
          produce(c);
          produced[c].store(true, std::memory_order_release);
        } else if (consumed.load(std::memory_order_acquire) == num_chunks) {
          break;
        } else {
          std::this_thread::yield();  // the last chunks are being produced or consumed
        }
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
      failed.store(true, std::memory_order_relaxed);
    }
  });
  if (error) std::rethrow_exception(error);
}

}  // namespace gnnrepro
