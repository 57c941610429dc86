// DiskReader (see disk_reader.h): request planning, the pread pool, the io_uring loop, bindings.
#include "disk_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace gnnrepro {
namespace {

constexpr int64_t kMemAlign = 4096;  // O_DIRECT buffer alignment that suits every device

int64_t round_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

std::string errno_text(int err) { return std::string(std::strerror(err)); }

}  // namespace

// ---- ReadJob ------------------------------------------------------------------------------

ReadJob::ReadJob(at::Tensor positions_, at::Tensor out_, std::vector<ReadRequest> requests_)
    : positions(std::move(positions_)), out(std::move(out_)), requests(std::move(requests_)),
      remaining_(static_cast<int64_t>(requests.size())) {
  if (remaining_ == 0) {
    finished_at_ = std::chrono::duration<double>(
        std::chrono::steady_clock::now().time_since_epoch()).count();
  }
}

void ReadJob::finish_request(int64_t bytes, const std::string& error) {
  std::lock_guard<std::mutex> lock(mutex_);
  bytes_ += bytes;
  if (!error.empty() && error_.empty()) error_ = error;
  if (--remaining_ == 0) {
    finished_at_ = std::chrono::duration<double>(
        std::chrono::steady_clock::now().time_since_epoch()).count();
    cv_.notify_all();
  }
}

double ReadJob::finished_at() {
  std::lock_guard<std::mutex> lock(mutex_);
  return finished_at_;
}

std::pair<int64_t, int64_t> ReadJob::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return remaining_ == 0; });
  TORCH_CHECK(error_.empty(), error_);
  return {static_cast<int64_t>(requests.size()), bytes_};
}

bool ReadJob::done() {
  std::lock_guard<std::mutex> lock(mutex_);
  return remaining_ == 0;
}

// ---- DiskReader ---------------------------------------------------------------------------

DiskReader::DiskReader(const std::string& path, int64_t data_offset, int64_t row_bytes,
                       int64_t num_rows, int64_t block_size, int64_t threads,
                       int64_t queue_depth, int64_t max_gap_bytes, int64_t max_request_bytes,
                       const std::string& engine, bool direct, int64_t rows_per_unit,
                       int64_t unit_bytes)
    : path_(path), data_offset_(data_offset), row_bytes_(row_bytes), num_rows_(num_rows),
      block_(block_size), max_gap_(max_gap_bytes), max_request_(max_request_bytes),
      threads_(threads), queue_depth_(queue_depth), per_unit_(rows_per_unit),
      unit_bytes_(unit_bytes == 0 ? row_bytes : unit_bytes), direct_(direct) {
  TORCH_CHECK(block_ >= 512 && block_ <= kMemAlign && (block_ & (block_ - 1)) == 0,
              "block_size must be a power of two in [512, 4096], got ", block_);
  TORCH_CHECK(row_bytes_ > 0 && row_bytes_ <= (int64_t{1} << 30), "row_bytes must be in "
              "[1, 2^30], got ", row_bytes_);
  TORCH_CHECK(per_unit_ >= 1 && per_unit_ <= (int64_t{1} << 20), "rows_per_unit must be in "
              "[1, 2^20], got ", per_unit_);
  TORCH_CHECK(unit_bytes_ >= per_unit_ * row_bytes_ && unit_bytes_ <= (int64_t{1} << 40),
              "unit_bytes must hold rows_per_unit rows, got ", unit_bytes_);
  TORCH_CHECK(num_rows_ >= 0 && num_rows_ / per_unit_ + 1 <= (int64_t{1} << 62) / unit_bytes_,
              "num_rows out of range: ", num_rows_);
  TORCH_CHECK(data_offset_ >= 0 && data_offset_ % block_ == 0 && data_offset_ <= (int64_t{1} << 60),
              "data_offset must be a multiple of block_size, got ", data_offset_);
  TORCH_CHECK(threads_ >= 1 && threads_ <= 256, "threads must be in [1, 256], got ", threads_);
  TORCH_CHECK(queue_depth_ >= 1 && queue_depth_ <= 4096, "queue_depth must be in [1, 4096], got ",
              queue_depth_);
  TORCH_CHECK(max_gap_ >= 0 && max_gap_ <= (int64_t{1} << 30), "max_gap_bytes must be in "
              "[0, 2^30], got ", max_gap_);
  TORCH_CHECK(max_request_ >= block_ && max_request_ <= (int64_t{1} << 26),
              "max_request_bytes must be in [block_size, 64 MiB], got ", max_request_);
  TORCH_CHECK(engine == "auto" || engine == "io_uring" || engine == "pread",
              "engine must be auto, io_uring or pread, got ", engine);
  slot_bytes_ = std::max(round_up(max_request_, block_), round_up(row_bytes_, block_) + block_);

  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (direct ? O_DIRECT : 0));
  TORCH_CHECK(fd_ >= 0, "cannot open ", path, (direct ? " with O_DIRECT" : ""), ": ",
              errno_text(errno));
  struct stat st {};
  if (fstat(fd_, &st) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    TORCH_CHECK(false, "cannot stat ", path, ": ", errno_text(err));
  }
  const int64_t need =
      round_up(num_rows_ == 0 ? data_offset_ : offset_of(num_rows_ - 1) + row_bytes_, block_);
  if (st.st_size < need) {
    ::close(fd_);
    fd_ = -1;
    TORCH_CHECK(false, path, " is ", st.st_size, " bytes, shorter than the ", need,
                " its header describes (", num_rows_, " rows of ", row_bytes_,
                " bytes): truncated?");
  }

  const int64_t slots = engine == "pread" ? threads_ : std::max(threads_, queue_depth_);
  for (int64_t i = 0; i < slots; ++i) {
    void* p = nullptr;
    if (posix_memalign(&p, kMemAlign, static_cast<size_t>(slot_bytes_)) != 0) {
      close();
      TORCH_CHECK(false, "cannot allocate ", slot_bytes_, " bytes of I/O buffer");
    }
    buffers_.push_back(p);
  }

  engine_ = "pread";
#ifdef GNNREPRO_HAVE_IO_URING
  if (engine != "pread") {
    ring_ = Uring::open(static_cast<unsigned>(queue_depth_));
    if (ring_ != nullptr) {
      // Probe: one READV of the first block. Kernels before 5.1 lack the opcode (EINVAL).
      iovec iov{buffers_[0], static_cast<size_t>(block_)};
      ring_->queue_readv(fd_, &iov, 0, 0);
      int res = -EIO;
      if (ring_->submit_and_wait(1) == 0) ring_->reap([&](uint64_t, int r) { res = r; });
      if (res >= 0) engine_ = "io_uring"; else ring_.reset();
    }
  }
#endif
  if (engine == "io_uring" && engine_ != "io_uring") {
    close();
    TORCH_CHECK(false, "engine='io_uring' but this kernel or build offers no usable io_uring "
                "(use engine='auto' to fall back to a pread thread pool)");
  }
  if (engine_ == "io_uring") {
    workers_.emplace_back([this] { uring_loop(); });
  } else {
    for (int64_t i = 0; i < threads_; ++i) {
      workers_.emplace_back([this, i] { pread_loop(static_cast<size_t>(i)); });
    }
  }
}

DiskReader::~DiskReader() { close(); }

void DiskReader::close() {
  std::deque<std::shared_ptr<ReadJob>> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closing_ = true;
    dropped.swap(queue_);
  }
  cv_.notify_all();
  for (auto& job : dropped) {  // requests nobody started: fail them
    for (size_t i = job->next; i < job->requests.size(); ++i) {
      job->finish_request(0, path_ + ": the reader was closed before this read ran");
    }
  }
  for (auto& t : workers_) t.join();  // in-flight requests finish first
  workers_.clear();
#ifdef GNNREPRO_HAVE_IO_URING
  ring_.reset();
#endif
  for (void* p : buffers_) std::free(p);
  buffers_.clear();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::vector<ReadRequest> DiskReader::plan(const int64_t* pos, int64_t n) const {
  std::vector<ReadRequest> out;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t off = offset_of(pos[i]);
    const int64_t b0 = off / block_ * block_;
    const int64_t b1 = round_up(off + row_bytes_, block_);
    if (!out.empty()) {
      ReadRequest& cur = out.back();
      const int64_t cur_end = cur.offset + cur.length;
      if (b0 <= cur_end + max_gap_ && b1 - cur.offset <= max_request_) {
        cur.length = std::max(cur_end, b1) - cur.offset;
        cur.end_row = i + 1;
        continue;
      }
    }
    out.push_back({b0, b1 - b0, i, i + 1});
  }
  return out;
}

std::shared_ptr<ReadJob> DiskReader::submit(const at::Tensor& positions, const at::Tensor& out,
                                            bool urgent) {
  TORCH_CHECK(positions.device().is_cpu() && positions.scalar_type() == at::kLong &&
                  positions.dim() == 1,
              "positions must be a 1-D int64 CPU tensor");
  TORCH_CHECK(out.device().is_cpu() && out.scalar_type() == at::kByte && out.dim() == 2 &&
                  out.is_contiguous(),
              "out must be a contiguous 2-D uint8 CPU tensor");
  const at::Tensor pos = positions.contiguous();
  const int64_t n = pos.numel();
  TORCH_CHECK(out.size(1) == row_bytes_, "out has ", out.size(1), " bytes per row, expected ",
              row_bytes_);
  TORCH_CHECK(out.size(0) >= n, "out has ", out.size(0), " rows, fewer than the ", n,
              " positions");
  const int64_t* p = pos.const_data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    TORCH_CHECK(p[i] >= 0 && p[i] < num_rows_, "positions[", i, "] = ", p[i],
                " is outside [0, ", num_rows_, ")");
    TORCH_CHECK(i == 0 || p[i] > p[i - 1], "positions must be strictly increasing (at ", i, ")");
  }
  auto job = std::make_shared<ReadJob>(pos, out, plan(p, n));
  if (job->requests.empty()) return job;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    TORCH_CHECK(!closing_, path_, ": the reader is closed");
    if (urgent) {  // before the others; a job already started continues after it
      queue_.push_front(job);
    } else {
      queue_.push_back(job);
    }
  }
  cv_.notify_all();
  return job;
}

bool DiskReader::take(std::shared_ptr<ReadJob>& job, size_t& index, bool wait) {
  std::unique_lock<std::mutex> lock(mutex_);
  while (queue_.empty()) {
    if (closing_ || !wait) return false;
    cv_.wait(lock);
  }
  job = queue_.front();
  index = job->next++;
  if (job->next == job->requests.size()) queue_.pop_front();
  return true;
}

std::string DiskReader::describe(const ReadJob& job, const ReadRequest& req,
                                 const std::string& what) const {
  const int64_t* p = job.positions.const_data_ptr<int64_t>();
  std::ostringstream s;
  s << path_ << ": reading bytes [" << req.offset << ", " << req.offset + req.length
    << ") for file rows " << p[req.first_row] << ".." << p[req.end_row - 1] << " failed: "
    << what;
  return s.str();
}

std::string DiskReader::copy_rows(const ReadJob& job, const ReadRequest& req,
                                  const char* buf) const {
  const int64_t* p = job.positions.const_data_ptr<int64_t>();
  auto* dst = static_cast<char*>(job.out.data_ptr());
  for (int64_t r = req.first_row; r < req.end_row; ++r) {
    const int64_t at = offset_of(p[r]) - req.offset;  // inside the request
    std::memcpy(dst + r * row_bytes_, buf + at, static_cast<size_t>(row_bytes_));
  }
  return "";
}

std::string DiskReader::read_pread(const ReadJob& job, const ReadRequest& req, char* buf) const {
  int64_t done = 0;
  while (done < req.length) {
    const ssize_t r = ::pread(fd_, buf + done, static_cast<size_t>(req.length - done),
                              req.offset + done);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return describe(job, req, errno_text(errno));
    if (r == 0) {
      return describe(job, req, "end of file after " + std::to_string(req.offset + done) +
                                    " bytes (the file shrank?)");
    }
    done += r;
  }
  return copy_rows(job, req, buf);
}

void DiskReader::pread_loop(size_t me) {
  char* buf = static_cast<char*>(buffers_[me]);  // this thread's own bounce buffer
  std::shared_ptr<ReadJob> job;
  size_t index = 0;
  while (take(job, index, true)) {
    const ReadRequest& req = job->requests[index];
    const std::string err = read_pread(*job, req, buf);
    job->finish_request(err.empty() ? req.length : 0, err);
    job.reset();
  }
}

void DiskReader::uring_loop() {
#ifdef GNNREPRO_HAVE_IO_URING
  struct Slot {
    std::shared_ptr<ReadJob> job;
    size_t index = 0;
    int64_t done = 0;
    iovec iov{};
  };
  const size_t depth = std::min<size_t>(static_cast<size_t>(queue_depth_), ring_->entries());
  std::vector<Slot> slots(depth);
  std::vector<size_t> free_slots;
  for (size_t i = 0; i < depth; ++i) free_slots.push_back(depth - 1 - i);
  size_t inflight = 0;
  auto queue = [&](size_t s) {
    Slot& slot = slots[s];
    const ReadRequest& req = slot.job->requests[slot.index];
    slot.iov.iov_base = static_cast<char*>(buffers_[s]) + slot.done;
    slot.iov.iov_len = static_cast<size_t>(req.length - slot.done);
    ring_->queue_readv(fd_, &slot.iov, static_cast<uint64_t>(req.offset + slot.done), s);
  };
  auto finish = [&](size_t s, int64_t bytes, const std::string& err) {
    slots[s].job->finish_request(bytes, err);
    slots[s].job.reset();
    free_slots.push_back(s);
    --inflight;
  };
  while (true) {
    while (!free_slots.empty()) {
      std::shared_ptr<ReadJob> job;
      size_t index = 0;
      if (!take(job, index, inflight == 0)) break;
      const size_t s = free_slots.back();
      free_slots.pop_back();
      slots[s].job = std::move(job);
      slots[s].index = index;
      slots[s].done = 0;
      queue(s);
      ++inflight;
    }
    if (inflight == 0) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (closing_) return;
      continue;
    }
    const int rc = ring_->submit_and_wait(1);
    if (rc < 0 && rc != -EAGAIN && rc != -EBUSY) {
      // The ring itself failed: nothing queued can be trusted to run. Fail those jobs and stop
      // using the ring (buffers stay allocated until close(), after the kernel let go of them).
      for (size_t s = 0; s < depth; ++s) {
        if (slots[s].job) finish(s, 0, describe(*slots[s].job, slots[s].job->requests[slots[s].index],
                                                "io_uring_enter: " + errno_text(-rc)));
      }
      continue;
    }
    ring_->reap([&](uint64_t tag, int res) {
      const size_t s = static_cast<size_t>(tag);
      Slot& slot = slots[s];
      if (!slot.job) return;
      const ReadRequest& req = slot.job->requests[slot.index];
      if (res == -EINTR || res == -EAGAIN) {
        queue(s);
      } else if (res < 0) {
        finish(s, 0, describe(*slot.job, req, errno_text(-res)));
      } else if (res == 0) {
        finish(s, 0, describe(*slot.job, req, "end of file after " +
                                                  std::to_string(req.offset + slot.done) +
                                                  " bytes (the file shrank?)"));
      } else if (slot.done + res < req.length) {
        slot.done += res;
        queue(s);
      } else {
        const std::string err = copy_rows(*slot.job, req, static_cast<char*>(buffers_[s]));
        finish(s, req.length, err);
      }
    });
  }
#endif
}

// ---- Python bindings ----------------------------------------------------------------------

void register_disk_reader(pybind11::module_& m) {
  namespace py = pybind11;
  py::class_<ReadJob, std::shared_ptr<ReadJob>>(m, "ReadJob",
                                                 "A submitted DiskReader read (see wait()).")
      .def("wait", &ReadJob::wait, py::call_guard<py::gil_scoped_release>(),
           "Block until the read finished; raise its first I/O error. Returns (requests, "
           "bytes read).")
      .def("done", &ReadJob::done, py::call_guard<py::gil_scoped_release>())
      .def("finished_at", &ReadJob::finished_at, py::call_guard<py::gil_scoped_release>(),
           "time.perf_counter() seconds when the read finished (0.0 while it runs).");
  py::class_<DiskReader, std::shared_ptr<DiskReader>>(
      m, "DiskReader", "O_DIRECT row reader (csrc/features/disk_reader.h).")
      .def(py::init<const std::string&, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                    int64_t, int64_t, const std::string&, bool, int64_t, int64_t>(),
           py::arg("path"), py::arg("data_offset"), py::arg("row_bytes"), py::arg("num_rows"),
           py::arg("block_size"), py::arg("threads"), py::arg("queue_depth"),
           py::arg("max_gap_bytes"), py::arg("max_request_bytes"), py::arg("engine"),
           py::arg("direct"), py::arg("rows_per_unit") = 1, py::arg("unit_bytes") = 0,
           py::call_guard<py::gil_scoped_release>())
      .def("submit", &DiskReader::submit, py::arg("positions"), py::arg("out"),
           py::arg("urgent") = false, py::call_guard<py::gil_scoped_release>())
      .def("close", &DiskReader::close, py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("engine", &DiskReader::engine)
      .def_property_readonly("direct", &DiskReader::direct)
      .def_property_readonly("block_size", &DiskReader::block_size);
}

}  // namespace gnnrepro
