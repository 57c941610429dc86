// DiskReader: reads feature rows straight from a file with O_DIRECT, many requests in flight.
//
// Rows are fixed-size records: row p at data_offset + (p / k) * unit_bytes + (p % k) * row_bytes,
// k = rows_per_unit (a dense file: k = 1, unit_bytes = row_bytes; a block-packed one keeps k
// whole rows in each unit of unit_bytes, so no row straddles a block). A read takes sorted,
// distinct row positions and an output buffer; it turns them into block-aligned requests
// (block = the device's logical block size, given by the caller), coalescing rows that share a
// block or sit within max_gap_bytes of each other into one request of at most
// max_request_bytes, and runs the requests on io_uring (one thread keeps queue_depth in flight)
// or, where the kernel or build has none, on a pool of `threads` pread threads. Either way the
// rows land in the output, in the order of the positions. Reads are asynchronous: submit()
// returns a ReadJob at once, and requests of several jobs share the queue, so the reads of the
// next batches overlap the current one's (GIDS's storage access accumulator). Any I/O error
// or short read fails the job with a message naming the file, the byte range and the rows.
#pragma once

// pybind11 with torch's tensor casters and nothing more: torch/python.h adds libtorch's C++
// frontend (4x the parse time of this header, ~15 s of compile per file that includes it).
#include <torch/csrc/utils/pybind.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "uring.h"

namespace gnnrepro {

struct ReadRequest {
  int64_t offset;     // aligned file offset
  int64_t length;     // aligned length
  int64_t first_row;  // rows [first_row, end_row) of the job's positions lie in this request
  int64_t end_row;
};

// One submitted read: its requests, its output, and how it ended.
class ReadJob {
 public:
  ReadJob(at::Tensor positions, at::Tensor out, std::vector<ReadRequest> requests);
  // Block (without the GIL) until every request finished; raise the first error if any.
  // Returns (requests, bytes read).
  std::pair<int64_t, int64_t> wait();
  bool done();
  // CLOCK_MONOTONIC seconds (Python's time.perf_counter) when the last request finished.
  double finished_at();

  // Called by the reader's I/O threads.
  void finish_request(int64_t bytes, const std::string& error);

  const at::Tensor positions;  // int64, sorted, distinct: kept alive while reads are in flight
  const at::Tensor out;        // [n, row_bytes] bytes, rows in positions' order
  const std::vector<ReadRequest> requests;
  size_t next = 0;  // next request to hand to an I/O thread (guarded by the reader's lock)

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int64_t remaining_;
  int64_t bytes_ = 0;
  double finished_at_ = 0.0;
  std::string error_;
};

class DiskReader {
 public:
  // engine: "auto" (io_uring if the kernel allows it, else pread), "io_uring" or "pread".
  DiskReader(const std::string& path, int64_t data_offset, int64_t row_bytes, int64_t num_rows,
             int64_t block_size, int64_t threads, int64_t queue_depth, int64_t max_gap_bytes,
             int64_t max_request_bytes, const std::string& engine, bool direct,
             int64_t rows_per_unit, int64_t unit_bytes);
  ~DiskReader();
  DiskReader(const DiskReader&) = delete;
  DiskReader& operator=(const DiskReader&) = delete;

  // Start reading rows `positions` (int64, strictly increasing, in [0, num_rows)) into
  // `out` (uint8 [>= len(positions), row_bytes], contiguous CPU). An `urgent` read goes to the
  // head of the queue (a batch being gathered), others to its tail (reads announced ahead).
  std::shared_ptr<ReadJob> submit(const at::Tensor& positions, const at::Tensor& out,
                                  bool urgent = false);
  // Fail queued jobs, wait for in-flight requests, stop the threads, close the file. Idempotent.
  void close();

  const std::string& engine() const { return engine_; }
  bool direct() const { return direct_; }
  int64_t block_size() const { return block_; }
  int64_t num_rows() const { return num_rows_; }
  int64_t row_bytes() const { return row_bytes_; }

 private:
  std::vector<ReadRequest> plan(const int64_t* pos, int64_t n) const;
  int64_t offset_of(int64_t row) const {
    return data_offset_ + (row / per_unit_) * unit_bytes_ + (row % per_unit_) * row_bytes_;
  }
  // Take the next request of the oldest job (blocks while none; false once closed).
  bool take(std::shared_ptr<ReadJob>& job, size_t& index, bool wait);
  // Read `req` into `buf` (pread loop) and copy its rows out; returns "" or an error message.
  std::string read_pread(const ReadJob& job, const ReadRequest& req, char* buf) const;
  std::string copy_rows(const ReadJob& job, const ReadRequest& req, const char* buf) const;
  std::string describe(const ReadJob& job, const ReadRequest& req, const std::string& what) const;
  void pread_loop(size_t me);
  void uring_loop();

  std::string path_;
  int fd_ = -1;
  int64_t data_offset_, row_bytes_, num_rows_, block_, max_gap_, max_request_, slot_bytes_;
  int64_t threads_, queue_depth_;
  int64_t per_unit_, unit_bytes_;
  bool direct_;
  std::string engine_;

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<ReadJob>> queue_;
  bool closing_ = false;
  std::vector<std::thread> workers_;
  std::vector<void*> buffers_;  // aligned bounce buffers, slot_bytes_ each
#ifdef GNNREPRO_HAVE_IO_URING
  std::unique_ptr<Uring> ring_;
#endif
};

void register_disk_reader(pybind11::module_& m);

}  // namespace gnnrepro
