// Runs a sequence of dependent steps with one team of threads: a single at::parallel_for region
// per call, however many steps, and no thread ever waits for work nobody has claimed.
//
// Why: a parallel region per step ends in a barrier that waits for every thread of the team,
// and at::parallel_for splits a range statically, so a thread the OS has not scheduled holds
// its share until it runs. On a machine with other busy processes (a trainer beside its
// sampler, two ranks on two cores) every such region costs a scheduling delay, and with one
// region per step those delays can outweigh what the extra threads gain: more threads can be
// slower than one (benchmarks/NOTES.md has the measurements). Here the items of a step are
// claimed one at a time from a shared counter, so a late thread finds them taken and moves on;
// the only wait for an absent thread is the region's final barrier, once per call.
//
// A step is `items` calls of `produce(i)` on any threads, optionally followed for each item,
// in order of i, by `consume(i)` on one thread at a time, as soon as items 0..i are produced
// (the consumer is whichever thread holds a token: so a serial, ordered pass overlaps the
// parallel one and its result does not depend on threads). When a step's last item is done,
// the thread that did it calls `plan(s + 1)`, serially, which prepares step s + 1 (it may read
// everything step s wrote) and returns it; `plan(num_steps)` is the final serial tail. An
// exception anywhere stops the team and is rethrown to the caller.
#pragma once
#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>

namespace gnnrepro {

struct TeamStep {
  int64_t items = 0;
  std::function<void(int64_t)> produce;
  std::function<void(int64_t)> consume;  // empty: the step has no ordered pass
};

template <typename Plan>
class StepTeam {
 public:
  StepTeam(int64_t num_steps, const Plan& plan)
      : num_steps_(num_steps), plan_(plan), states_(new State[num_steps]) {}

  // Runs every step on up to `threads` threads (the caller's thread among them).
  void run(int64_t threads) {
    if (num_steps_ == 0) {
      plan_(0);
      return;
    }
    open(0, plan_(0));
    threads = std::max<int64_t>(1, threads);
    at::parallel_for(0, threads, 1, [&](int64_t, int64_t) { work(); });
    if (error_) std::rethrow_exception(error_);
  }

 private:
  // One cache line per counter that different threads update, so that a claim does not stall
  // a thread that reads another.
  struct State {
    TeamStep step;
    std::unique_ptr<std::atomic<bool>[]> produced;
    alignas(64) std::atomic<bool> open{false};
    alignas(64) std::atomic<int64_t> next{0};      // next item to claim
    alignas(64) std::atomic<int64_t> done{0};      // items produced (no ordered pass)
    alignas(64) std::atomic<int64_t> consumed{0};  // items consumed, in order
    alignas(64) std::atomic<bool> consumer_busy{false};
  };

  void work() {
    try {
      for (int64_t s = 0; s < num_steps_; ++s) {
        State& st = states_[s];
        wait_open(st);
        if (!run_items(s)) return;
      }
    } catch (...) {
      fail(std::current_exception());
    }
  }

  // Returns once step `st` is open or the team has failed: a short spin (the previous step's
  // plan is usually brief), then a futex sleep, so a waiting thread takes no CPU from the
  // threads doing the work or from other processes.
  void wait_open(State& st) {
    for (int spins = 0; spins < kSpins; ++spins) {
      if (st.open.load(std::memory_order_acquire)) return;
    }
    while (!st.open.load(std::memory_order_acquire)) st.open.wait(false, std::memory_order_acquire);
  }

  // Claims and produces items of step s until none is left; false if the team failed.
  bool run_items(int64_t s) {
    State& st = states_[s];
    const TeamStep& step = st.step;
    while (!failed_.load(std::memory_order_relaxed)) {
      const int64_t i = st.next.fetch_add(1, std::memory_order_relaxed);
      if (i >= step.items) return true;
      step.produce(i);
      if (step.consume) {
        st.produced[i].store(true, std::memory_order_seq_cst);
        consume_ready(s);
      } else if (st.done.fetch_add(1, std::memory_order_acq_rel) + 1 == step.items) {
        finish(s);
      }
    }
    return false;
  }

  // Consumes the produced items of step s in order while this thread can take the token. A
  // thread that produced item c after the holder looked for it either takes the token itself
  // or is seen by the holder's check after releasing it (both sides are sequentially
  // consistent), so no produced item is left unconsumed.
  void consume_ready(int64_t s) {
    State& st = states_[s];
    const int64_t items = st.step.items;
    while (!st.consumer_busy.exchange(true, std::memory_order_seq_cst)) {
      const int64_t first = st.consumed.load(std::memory_order_relaxed);
      int64_t c = first;
      while (c < items && st.produced[c].load(std::memory_order_seq_cst)) st.step.consume(c++);
      st.consumed.store(c, std::memory_order_relaxed);
      st.consumer_busy.store(false, std::memory_order_seq_cst);
      if (c == items) {
        if (first < items) finish(s);  // this thread consumed the last item
        return;
      }
      if (!st.produced[c].load(std::memory_order_seq_cst)) return;  // its producer consumes it
    }
  }

  // Step s is complete: plan and open the next one (or run the final tail).
  void finish(int64_t s) {
    if (s + 1 == num_steps_) {
      plan_(num_steps_);
      return;
    }
    open(s + 1, plan_(s + 1));
  }

  void open(int64_t s, TeamStep step) {
    State& st = states_[s];
    st.step = std::move(step);
    if (st.step.consume && st.step.items > 0) {
      st.produced.reset(new std::atomic<bool>[st.step.items]);
      for (int64_t i = 0; i < st.step.items; ++i) st.produced[i].store(false);
    }
    st.open.store(true, std::memory_order_release);
    st.open.notify_all();
    if (st.step.items <= 0) finish(s);  // nothing to claim: complete at once
  }

  // Records the first error and releases every thread waiting for a step to open (they
  // see the failure on their next claim and leave).
  void fail(std::exception_ptr error) {
    {
      std::lock_guard<std::mutex> lock(error_mutex_);
      if (!error_) error_ = error;
      failed_.store(true, std::memory_order_relaxed);
    }
    for (int64_t s = 0; s < num_steps_; ++s) {
      states_[s].open.store(true, std::memory_order_release);
      states_[s].open.notify_all();
    }
  }

  static constexpr int kSpins = 4000;
  const int64_t num_steps_;
  const Plan& plan_;
  std::unique_ptr<State[]> states_;
  std::atomic<bool> failed_{false};
  std::mutex error_mutex_;
  std::exception_ptr error_;
};

// Runs `num_steps` steps planned by `plan` (see above) on up to `threads` threads.
template <typename Plan>
void run_steps(int64_t num_steps, int64_t threads, const Plan& plan) {
  StepTeam<Plan>(num_steps, plan).run(threads);
}

}  // namespace gnnrepro
