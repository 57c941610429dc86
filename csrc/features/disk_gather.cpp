// DiskGather (see disk_gather.h): the per-batch plan of DiskFeatureStore.gather, bindings.
#include "disk_gather.h"

#include <ATen/ops/empty.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <sstream>

namespace gnnrepro {
namespace {

double now_s() {  // the clock of ReadJob::finished_at and Python's time.perf_counter
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// (id, position in ids) sorted by id; every id checked against [0, num_rows).
std::vector<std::pair<int64_t, int64_t>> sorted_ids(const at::Tensor& ids, int64_t num_rows) {
  TORCH_CHECK(ids.device().is_cpu() && ids.dim() == 1 &&
                  (ids.scalar_type() == at::kLong || ids.scalar_type() == at::kInt),
              "ids must be a 1-D int64 or int32 CPU tensor");
  const at::Tensor c = ids.contiguous();
  const int64_t n = c.numel();
  std::vector<std::pair<int64_t, int64_t>> out(static_cast<size_t>(n));
  auto fill = [&](const auto* p) {
    for (int64_t i = 0; i < n; ++i) {
      const int64_t id = p[i];
      TORCH_CHECK(id >= 0 && id < num_rows, "ids[", i, "] = ", id, " is outside [0, ", num_rows,
                  ")");
      out[static_cast<size_t>(i)] = {id, i};
    }
  };
  if (c.scalar_type() == at::kLong) fill(c.const_data_ptr<int64_t>());
  else fill(c.const_data_ptr<int32_t>());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

DiskGather::DiskGather(std::shared_ptr<DiskReader> reader, at::Tensor hot, at::Tensor hot_slot,
                       at::Tensor position, std::shared_ptr<ClockCache> cache)
    : reader_(std::move(reader)), hot_(std::move(hot)), hot_slot_(std::move(hot_slot)),
      position_(std::move(position)), cache_(std::move(cache)) {
  TORCH_CHECK(reader_ && cache_, "DiskGather needs a reader and a cache");
  num_rows_ = reader_->num_rows();
  row_bytes_ = reader_->row_bytes();
  TORCH_CHECK(hot_.device().is_cpu() && hot_.dim() == 2 && hot_.is_contiguous() &&
                  hot_.layout() == at::kStrided &&
                  hot_.size(1) * static_cast<int64_t>(hot_.element_size()) == row_bytes_,
              "hot must be a contiguous 2-D CPU tensor of ", row_bytes_, "-byte rows");
  dtype_ = hot_.scalar_type();
  TORCH_CHECK(hot_slot_.device().is_cpu() && hot_slot_.scalar_type() == at::kInt &&
                  hot_slot_.dim() == 1 && hot_slot_.is_contiguous() &&
                  (hot_slot_.numel() == 0 || hot_slot_.numel() == num_rows_),
              "hot_slot must be a contiguous int32 CPU tensor of ", num_rows_, " nodes, or empty");
  TORCH_CHECK(position_.device().is_cpu() && position_.scalar_type() == at::kLong &&
                  position_.dim() == 1 && position_.is_contiguous() &&
                  (position_.numel() == 0 || position_.numel() == num_rows_),
              "position must be a contiguous int64 CPU tensor of ", num_rows_, " nodes, or empty");
  TORCH_CHECK(cache_->row_bytes() == row_bytes_ &&
                  (cache_->capacity() == 0 || cache_->num_nodes() == num_rows_),
              "the cache's rows do not match the reader's");
}

DiskGather::Read DiskGather::submit(std::vector<int64_t> nodes, bool urgent) {
  const int64_t n = static_cast<int64_t>(nodes.size());
  TORCH_CHECK(position_.numel() == 0 || position_.numel() == num_rows_, "position was resized");
  const int64_t* position = position_.numel() ? position_.const_data_ptr<int64_t>() : nullptr;
  std::vector<std::pair<int64_t, int64_t>> by_pos(nodes.size());
  for (size_t j = 0; j < nodes.size(); ++j) {
    by_pos[j] = {position ? position[nodes[j]] : nodes[j], nodes[j]};
  }
  std::sort(by_pos.begin(), by_pos.end());
  at::Tensor positions = at::empty({n}, at::kLong);
  int64_t* p = positions.data_ptr<int64_t>();
  for (int64_t j = 0; j < n; ++j) {
    p[j] = by_pos[static_cast<size_t>(j)].first;
    nodes[static_cast<size_t>(j)] = by_pos[static_cast<size_t>(j)].second;
  }
  Read read;
  read.nodes = std::move(nodes);
  read.buf = at::empty({n, row_bytes_}, at::kByte);
  read.submitted = now_s();
  read.job = reader_->submit(positions, read.buf, urgent);  // checks the positions
  return read;
}

void DiskGather::wait(Read& read, GatherCounts& counts) {
  const double start = now_s();
  std::pair<int64_t, int64_t> done;
  try {
    done = read.job->wait();
  } catch (const c10::Error& e) {
    std::vector<int64_t> shown(read.nodes);
    std::sort(shown.begin(), shown.end());
    std::ostringstream s;
    s << "DiskFeatureStore: could not read the rows of nodes [";
    for (size_t i = 0; i < std::min<size_t>(shown.size(), 8); ++i) s << (i ? ", " : "") << shown[i];
    s << "]";
    if (shown.size() > 8) s << " and " << shown.size() - 8 << " more";
    s << ": " << e.what_without_backtrace();
    throw RowReadError(s.str());
  }
  counts.read_wait_s += now_s() - start;
  counts.spans.emplace_back(read.submitted, read.job->finished_at());
  counts.requests += done.first;
  counts.bytes_read += done.second;
  counts.rows_read += static_cast<int64_t>(read.nodes.size());
}

// The distinct ids of one gather() call and where their rows go: uniq[j] is the j-th smallest
// distinct id, and its rows of `out` are by_id[k].second for k in [first[j], first[j + 1]).
// from[j] says where row j comes from (kDone once it is in out).
struct DiskGather::BatchRows {
  enum : char { kDone = 0, kToRead = 1, kAnnounced = 2 };

  BatchRows(const std::vector<std::pair<int64_t, int64_t>>& sorted, const at::Tensor& out,
            int64_t bytes_per_row)
      : by_id(sorted), dst(static_cast<uint8_t*>(out.data_ptr())), row_bytes(bytes_per_row) {
    for (size_t k = 0; k < sorted.size(); ++k) {
      if (k == 0 || sorted[k].first != sorted[k - 1].first) {
        uniq.push_back(sorted[k].first);
        first.push_back(static_cast<int64_t>(k));
      }
    }
    first.push_back(static_cast<int64_t>(sorted.size()));
    from.assign(uniq.size(), kToRead);
  }

  int64_t size() const { return static_cast<int64_t>(uniq.size()); }

  // Copies `row` into each of the out rows of uniq[j].
  void put(int64_t j, const uint8_t* row) const {
    const size_t rb = static_cast<size_t>(row_bytes);
    for (int64_t k = first[static_cast<size_t>(j)]; k < first[static_cast<size_t>(j) + 1]; ++k) {
      std::memcpy(dst + by_id[static_cast<size_t>(k)].second * row_bytes, row, rb);
    }
  }

  // j with uniq[j] == node, else -1.
  int64_t index_of(int64_t node) const {
    const auto it = std::lower_bound(uniq.begin(), uniq.end(), node);
    return it != uniq.end() && *it == node ? static_cast<int64_t>(it - uniq.begin()) : -1;
  }

  const std::vector<std::pair<int64_t, int64_t>>& by_id;
  uint8_t* const dst;
  const int64_t row_bytes;
  std::vector<int64_t> uniq, first;
  std::vector<char> from;
};

void DiskGather::check_out(const at::Tensor& ids, const at::Tensor& out) const {
  TORCH_CHECK(out.device().is_cpu() && out.layout() == at::kStrided && out.dim() == 2 &&
                  out.is_contiguous() && out.scalar_type() == dtype_ &&
                  out.size(1) * static_cast<int64_t>(out.element_size()) == row_bytes_,
              "out must be a contiguous 2-D ", dtype_, " CPU tensor of ", row_bytes_,
              "-byte rows");
  TORCH_CHECK(out.size(0) >= ids.numel(), "out has ", out.size(0), " rows, fewer than the ",
              ids.numel(), " ids");
}

// Rows are taken from memory first (hot set, cache), then from the oldest announced read, and
// the rest are read now, ahead of the announced reads. Hot rows are copied once the batch's own
// read is submitted, so that the copy overlaps the read.
GatherCounts DiskGather::gather(const at::Tensor& ids, const at::Tensor& out) {
  check_out(ids, out);
  std::lock_guard<std::mutex> lock(mutex_);
  GatherCounts counts;
  const std::vector<std::pair<int64_t, int64_t>> by_id = sorted_ids(ids, num_rows_);
  counts.rows = static_cast<int64_t>(by_id.size());
  if (by_id.empty()) return counts;
  BatchRows batch(by_id, out, row_bytes_);
  counts.unique = batch.size();

  const std::vector<std::pair<int64_t, int64_t>> hot_rows = find_hot_rows(batch);
  counts.hot_hits = static_cast<int64_t>(hot_rows.size());
  cache_->lookup_rows(batch.uniq.data(), batch.size(), batch.from,
                      [&](int64_t j, const uint8_t* row) {
                        batch.put(j, row);
                        batch.from[static_cast<size_t>(j)] = BatchRows::kDone;
                        ++counts.cache_hits;
                      });
  std::unique_ptr<Read> ahead = take_announced(batch);
  Read now = submit_missing(batch);

  const auto* hot = static_cast<const uint8_t*>(hot_.const_data_ptr());
  for (const auto& [j, s] : hot_rows) batch.put(j, hot + s * row_bytes_);
  if (ahead) copy_announced(*ahead, batch, counts);
  if (now.job) copy_read(now, batch, counts);
  return counts;
}

// The distinct rows held in the hot set, as (j, row of hot), marked done in batch.from (they
// are copied later, while the batch's own read is in flight).
std::vector<std::pair<int64_t, int64_t>> DiskGather::find_hot_rows(BatchRows& batch) const {
  std::vector<std::pair<int64_t, int64_t>> hot_rows;
  if (hot_slot_.numel() == 0) return hot_rows;
  TORCH_CHECK(hot_slot_.numel() == num_rows_, "hot_slot was resized");
  const int32_t* slot = hot_slot_.const_data_ptr<int32_t>();
  const int64_t held = hot_.size(0);
  for (int64_t j = 0; j < batch.size(); ++j) {
    const int64_t node = batch.uniq[static_cast<size_t>(j)];
    const int64_t s = slot[node];
    if (s < 0) continue;
    TORCH_CHECK(s < held, "hot_slot of node ", node, " is ", s, ", outside the ", held,
                " hot rows");
    hot_rows.emplace_back(j, s);
    batch.from[static_cast<size_t>(j)] = BatchRows::kDone;
  }
  return hot_rows;
}

// Takes the oldest announced read off the queue, if any, and marks the rows still to read that
// it holds as coming from it.
std::unique_ptr<DiskGather::Read> DiskGather::take_announced(BatchRows& batch) {
  if (pending_.empty()) return nullptr;
  auto ahead = std::make_unique<Read>(std::move(pending_.front()));
  pending_.pop_front();
  for (int64_t node : ahead->nodes) {
    const int64_t j = batch.index_of(node);
    if (j >= 0 && batch.from[static_cast<size_t>(j)] == BatchRows::kToRead) {
      batch.from[static_cast<size_t>(j)] = BatchRows::kAnnounced;
    }
  }
  return ahead;
}

// Submits the read of the rows still to read, at the head of the reader's queue; a Read
// without a job if there are none.
DiskGather::Read DiskGather::submit_missing(const BatchRows& batch) {
  std::vector<int64_t> missing;
  for (int64_t j = 0; j < batch.size(); ++j) {
    if (batch.from[static_cast<size_t>(j)] == BatchRows::kToRead) {
      missing.push_back(batch.uniq[static_cast<size_t>(j)]);
    }
  }
  Read now;
  if (!missing.empty()) now = submit(std::move(missing), /*urgent=*/true);
  return now;
}

// Waits for the announced read `ahead`, caches all its rows and copies those the batch takes
// from it.
void DiskGather::copy_announced(Read& ahead, BatchRows& batch, GatherCounts& counts) {
  wait(ahead, counts);
  const auto* buf = ahead.buf.const_data_ptr<uint8_t>();
  cache_->insert_rows(ahead.nodes.data(), buf, static_cast<int64_t>(ahead.nodes.size()));
  for (size_t r = 0; r < ahead.nodes.size(); ++r) {
    const int64_t j = batch.index_of(ahead.nodes[r]);
    if (j < 0 || batch.from[static_cast<size_t>(j)] != BatchRows::kAnnounced) continue;
    batch.put(j, buf + static_cast<int64_t>(r) * row_bytes_);
    batch.from[static_cast<size_t>(j)] = BatchRows::kDone;
    ++counts.prefetch_hits;
  }
}

// Waits for the batch's own read `now`, copies its rows into out, then caches them.
void DiskGather::copy_read(Read& now, const BatchRows& batch, GatherCounts& counts) {
  wait(now, counts);
  const auto* buf = now.buf.const_data_ptr<uint8_t>();
  for (size_t r = 0; r < now.nodes.size(); ++r) {
    batch.put(batch.index_of(now.nodes[r]), buf + static_cast<int64_t>(r) * row_bytes_);
  }
  cache_->insert_rows(now.nodes.data(), buf, static_cast<int64_t>(now.nodes.size()));
}

void DiskGather::prefetch(const at::Tensor& ids) {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::vector<std::pair<int64_t, int64_t>> by_id = sorted_ids(ids, num_rows_);
  TORCH_CHECK(hot_slot_.numel() == 0 || hot_slot_.numel() == num_rows_, "hot_slot was resized");
  const int32_t* hot = hot_slot_.numel() ? hot_slot_.const_data_ptr<int32_t>() : nullptr;
  std::vector<int64_t> need;
  for (size_t k = 0; k < by_id.size(); ++k) {
    const int64_t id = by_id[k].first;
    if (k > 0 && id == by_id[k - 1].first) continue;
    if (hot == nullptr || hot[id] < 0) need.push_back(id);
  }
  cache_->drop_cached(need);
  pending_.push_back(submit(std::move(need), /*urgent=*/false));
}

void DiskGather::discard_prefetched() {
  std::lock_guard<std::mutex> lock(mutex_);
  while (!pending_.empty()) {
    try {
      pending_.front().job->wait();
    } catch (const c10::Error&) {
      // nobody will use these rows
    }
    pending_.pop_front();
  }
}

int64_t DiskGather::pending() {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int64_t>(pending_.size());
}

void register_disk_gather(pybind11::module_& m) {
  namespace py = pybind11;
  py::register_exception<RowReadError>(m, "RowReadError", PyExc_OSError);
  py::class_<GatherCounts>(m, "GatherCounts", "What one DiskGather.gather did.")
      .def_readonly("rows", &GatherCounts::rows)
      .def_readonly("unique", &GatherCounts::unique)
      .def_readonly("hot_hits", &GatherCounts::hot_hits)
      .def_readonly("cache_hits", &GatherCounts::cache_hits)
      .def_readonly("prefetch_hits", &GatherCounts::prefetch_hits)
      .def_readonly("rows_read", &GatherCounts::rows_read)
      .def_readonly("requests", &GatherCounts::requests)
      .def_readonly("bytes_read", &GatherCounts::bytes_read)
      .def_readonly("read_wait_s", &GatherCounts::read_wait_s)
      .def_readonly("spans", &GatherCounts::spans);
  py::class_<DiskGather, std::shared_ptr<DiskGather>>(
      m, "DiskGather", "One call per batch for DiskFeatureStore (csrc/features/disk_gather.h).")
      .def(py::init<std::shared_ptr<DiskReader>, at::Tensor, at::Tensor, at::Tensor,
                    std::shared_ptr<ClockCache>>(),
           py::arg("reader"), py::arg("hot"), py::arg("hot_slot"), py::arg("position"),
           py::arg("cache"))
      .def("gather", &DiskGather::gather, py::arg("ids"), py::arg("out"),
           py::call_guard<py::gil_scoped_release>())
      .def("prefetch", &DiskGather::prefetch, py::arg("ids"),
           py::call_guard<py::gil_scoped_release>())
      .def("discard_prefetched", &DiskGather::discard_prefetched,
           py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("pending", &DiskGather::pending);
}

}  // namespace gnnrepro
