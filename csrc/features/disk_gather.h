// DiskGather: one call per batch for DiskFeatureStore.gather (gnnrepro/features/disk.py).
//
// gather(ids, out) puts the rows of ids (int32/int64, repeats allowed) into out[:len(ids)]:
// it sorts the ids to find the distinct ones, copies those in the hot set and the CLOCK cache
// into out, takes the rows of the oldest read announced by prefetch() (waiting for it, then
// inserting its rows into the cache), reads the rest from the file at the head of the reader's
// queue (ahead of announced reads, so a batch never waits for the next batches' reads), copies
// them into out and inserts them into the cache. prefetch(ids) starts reading the rows of ids
// that are neither hot nor cached, in file order, at the tail of the queue. Hot rows and the
// prefetched ones are copied in while the batch's own reads are in flight.
//
// Everything Python passes is checked (ids against num_rows, out's dtype, shape and layout, hot
// slots against the hot set's rows); a failed read raises RowReadError (an OSError in Python)
// naming the nodes, with the reader's message naming the file and byte range. One call at a
// time per object (a lock).
#pragma once

// pybind11 with torch's tensor casters and nothing more: torch/python.h adds libtorch's C++
// frontend (4x the parse time of this header, ~15 s of compile per file that includes it).
#include <torch/csrc/utils/pybind.h>

#include <deque>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <utility>
#include <vector>

#include "clock_cache.h"
#include "disk_reader.h"

namespace gnnrepro {

// A read of feature rows that failed (I/O error, short read): OSError in Python.
class RowReadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What one gather() did, added up by DiskStats in Python.
struct GatherCounts {
  int64_t rows = 0, unique = 0, hot_hits = 0, cache_hits = 0, prefetch_hits = 0;
  int64_t rows_read = 0, requests = 0, bytes_read = 0;
  double read_wait_s = 0.0;                       // blocked on the device
  std::vector<std::pair<double, double>> spans;  // (submitted, finished) of the reads waited for
};

class DiskGather {
 public:
  // hot: [H, dim] rows of the hot set (its dtype is the table's); hot_slot: int32 [num_rows]
  // (row of a node in hot, -1: none) or empty; position: int64 [num_rows] (file slot of a node)
  // or empty (identity).
  DiskGather(std::shared_ptr<DiskReader> reader, at::Tensor hot, at::Tensor hot_slot,
             at::Tensor position, std::shared_ptr<ClockCache> cache);
  GatherCounts gather(const at::Tensor& ids, const at::Tensor& out);
  void prefetch(const at::Tensor& ids);
  // Wait for the announced reads and forget them (their errors too).
  void discard_prefetched();
  int64_t pending();

 private:
  // Rows of distinct nodes being read into buf: nodes in file order (buf row j = nodes[j]).
  struct Read {
    std::vector<int64_t> nodes;
    at::Tensor buf;
    std::shared_ptr<ReadJob> job;
    double submitted = 0.0;
  };
  Read submit(std::vector<int64_t> nodes, bool urgent);
  void wait(Read& read, GatherCounts& counts);

  // The phases of gather(), over the distinct ids of its batch (defined in disk_gather.cpp).
  struct BatchRows;
  void check_out(const at::Tensor& ids, const at::Tensor& out) const;
  std::vector<std::pair<int64_t, int64_t>> find_hot_rows(BatchRows& batch) const;
  std::unique_ptr<Read> take_announced(BatchRows& batch);
  Read submit_missing(const BatchRows& batch);
  void copy_announced(Read& ahead, BatchRows& batch, GatherCounts& counts);
  void copy_read(Read& now, const BatchRows& batch, GatherCounts& counts);

  std::shared_ptr<DiskReader> reader_;
  at::Tensor hot_, hot_slot_, position_;
  std::shared_ptr<ClockCache> cache_;
  int64_t num_rows_, row_bytes_;
  at::ScalarType dtype_;
  std::deque<Read> pending_;
  std::mutex mutex_;
};

void register_disk_gather(pybind11::module_& m);

}  // namespace gnnrepro
