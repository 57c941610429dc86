// ClockCache: feature rows of recently read nodes in a fixed number of slots, CLOCK eviction.
//
// The state lives in four tensors the caller allocates (gnnrepro/features/row_cache.py), so
// Python sees it as it is: data uint8 [capacity, row_bytes], owner int64 [capacity] (node in a
// slot, -1: empty), ref bool [capacity] (the CLOCK bit), slot_of int32 [num_nodes] (slot of a
// node, -1: not cached; [0] when capacity is 0). A hit only sets the slot's bit. Inserting k
// rows takes the next k slots whose bit is clear, going round from the hand and clearing the
// bits it passes (a second chance); when fewer than k are clear, every bit is cleared and the
// clear ones are taken first (a whole sweep). New rows start with the bit set. Invariant: a
// hit is a slot s with owner[s] == node, checked on every lookup, so a lookup never returns a
// row stored for another node whatever the tensors were changed to. All methods take the lock.
#pragma once

// pybind11 with torch's tensor casters and nothing more: torch/python.h adds libtorch's C++
// frontend (4x the parse time of this header, ~15 s of compile per file that includes it).
#include <torch/csrc/utils/pybind.h>

#include <cstdint>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

namespace gnnrepro {

class ClockCache {
 public:
  ClockCache(at::Tensor data, at::Tensor owner, at::Tensor ref, at::Tensor slot_of);

  int64_t capacity() const { return capacity_; }
  int64_t row_bytes() const { return row_bytes_; }
  int64_t num_nodes() const { return num_nodes_; }
  int64_t hand();

  // Python: (positions in `ids` that hit, their slots), marking the hits as used.
  std::pair<at::Tensor, at::Tensor> lookup(const at::Tensor& ids);
  // Python: store rows[i] (uint8 [n, row_bytes]) for distinct ids[i]; see insert_rows.
  void insert(const at::Tensor& ids, const at::Tensor& rows);

  // For each i with want[i], if node ids[i] is cached: mark it used and call
  // on_hit(i, row pointer) while the lock is held (the row may be replaced once it is let go).
  // ids must lie in [0, num_nodes).
  template <typename F>
  void lookup_rows(const int64_t* ids, int64_t n, const std::vector<char>& want, F&& on_hit) {
    if (capacity_ == 0) return;
    std::lock_guard<std::mutex> lock(mutex_);
    const View v = view();
    for (int64_t i = 0; i < n; ++i) {
      if (!want[static_cast<size_t>(i)]) continue;
      const int64_t s = slot_of_node(v, ids[i]);
      if (s < 0) continue;
      v.ref[s] = true;
      on_hit(i, v.data + s * row_bytes_);
    }
  }
  // Keep those of ids that are not cached (no bit set). ids in [0, num_nodes).
  void drop_cached(std::vector<int64_t>& ids);
  // Store rows + i * row_bytes for nodes ids[i] (ids in [0, num_nodes)); nodes already cached
  // (or repeated) are skipped; beyond capacity the first `capacity` new ones are kept.
  void insert_rows(const int64_t* ids, const uint8_t* rows, int64_t n);

 private:
  struct View {
    uint8_t* data;
    int64_t* owner;
    bool* ref;
    int32_t* slot_of;
  };
  View view() const;
  int64_t slot_of_node(const View& v, int64_t id) const {
    const int64_t s = v.slot_of[id];
    return s >= 0 && s < capacity_ && v.owner[s] == id ? s : -1;
  }
  std::vector<int64_t> victims(const View& v, int64_t k);

  at::Tensor data_, owner_, ref_, slot_of_;
  int64_t capacity_, row_bytes_, num_nodes_;
  int64_t hand_ = 0;
  std::mutex mutex_;
};

void register_clock_cache(pybind11::module_& m);

}  // namespace gnnrepro
