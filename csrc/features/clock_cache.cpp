// ClockCache (see clock_cache.h): lookups, CLOCK insertion, bindings.
#include "clock_cache.h"

#include <ATen/ops/tensor.h>

#include <algorithm>

namespace gnnrepro {

ClockCache::ClockCache(at::Tensor data, at::Tensor owner, at::Tensor ref, at::Tensor slot_of)
    : data_(std::move(data)), owner_(std::move(owner)), ref_(std::move(ref)),
      slot_of_(std::move(slot_of)) {
  TORCH_CHECK(data_.device().is_cpu() && data_.scalar_type() == at::kByte && data_.dim() == 2 &&
                  data_.is_contiguous(),
              "ClockCache: data must be a contiguous 2-D uint8 CPU tensor");
  capacity_ = data_.size(0);
  row_bytes_ = data_.size(1);
  TORCH_CHECK(owner_.device().is_cpu() && owner_.scalar_type() == at::kLong &&
                  owner_.dim() == 1 && owner_.is_contiguous() && owner_.numel() == capacity_,
              "ClockCache: owner must be a contiguous int64 CPU tensor of ", capacity_, " slots");
  TORCH_CHECK(ref_.device().is_cpu() && ref_.scalar_type() == at::kBool && ref_.dim() == 1 &&
                  ref_.is_contiguous() && ref_.numel() == capacity_,
              "ClockCache: ref must be a contiguous bool CPU tensor of ", capacity_, " slots");
  TORCH_CHECK(slot_of_.device().is_cpu() && slot_of_.scalar_type() == at::kInt &&
                  slot_of_.dim() == 1 && slot_of_.is_contiguous(),
              "ClockCache: slot_of must be a contiguous 1-D int32 CPU tensor");
  num_nodes_ = slot_of_.numel();
  TORCH_CHECK(capacity_ == 0 || num_nodes_ > 0, "ClockCache: slot_of is empty");
}

ClockCache::View ClockCache::view() const {
  // The tensors may have been replaced in place from Python: check before every use.
  TORCH_CHECK(data_.numel() == capacity_ * row_bytes_ && owner_.numel() == capacity_ &&
                  ref_.numel() == capacity_ && slot_of_.numel() == num_nodes_,
              "ClockCache: its tensors were resized");
  return {data_.data_ptr<uint8_t>(), owner_.data_ptr<int64_t>(), ref_.data_ptr<bool>(),
          slot_of_.data_ptr<int32_t>()};
}

int64_t ClockCache::hand() {
  std::lock_guard<std::mutex> lock(mutex_);
  return hand_;
}

void ClockCache::drop_cached(std::vector<int64_t>& ids) {
  if (capacity_ == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const View v = view();
  ids.erase(std::remove_if(ids.begin(), ids.end(),
                           [&](int64_t id) { return slot_of_node(v, id) >= 0; }),
            ids.end());
}

std::vector<int64_t> ClockCache::victims(const View& v, int64_t k) {
  const int64_t c = capacity_;
  std::vector<int64_t> taken;
  std::vector<int64_t> clear;
  int64_t need = k;
  while (need > 0) {
    clear.clear();
    for (int64_t t = 0; t < c && static_cast<int64_t>(clear.size()) < need; ++t) {
      const int64_t s = (hand_ + t) % c;
      if (!v.ref[s]) clear.push_back(s);
    }
    if (static_cast<int64_t>(clear.size()) >= need) {  // the hand stops after the last one
      const int64_t passed = (clear.back() - hand_ + c) % c + 1;
      for (int64_t t = 0; t < passed; ++t) v.ref[(hand_ + t) % c] = false;
      hand_ = (clear.back() + 1) % c;
      taken.insert(taken.end(), clear.begin(), clear.end());
      break;
    }
    // A whole sweep: every bit cleared, the hand back where it was; the slots taken now are
    // marked so the next sweep does not take them again.
    std::fill(v.ref, v.ref + c, false);
    for (int64_t s : clear) v.ref[s] = true;
    taken.insert(taken.end(), clear.begin(), clear.end());
    need -= static_cast<int64_t>(clear.size());
  }
  return taken;
}

void ClockCache::insert_rows(const int64_t* ids, const uint8_t* rows, int64_t n) {
  if (capacity_ == 0 || n == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const View v = view();
  std::vector<int64_t> fresh;  // positions in ids of the rows to store
  for (int64_t i = 0; i < n && static_cast<int64_t>(fresh.size()) < capacity_; ++i) {
    const int64_t id = ids[i];
    if (slot_of_node(v, id) >= 0 || v.slot_of[id] == -2) continue;
    v.slot_of[id] = -2;  // taken by this call: a repeat of id is skipped
    fresh.push_back(i);
  }
  if (fresh.empty()) return;
  const std::vector<int64_t> slots = victims(v, static_cast<int64_t>(fresh.size()));
  for (int64_t s : slots) {
    const int64_t old = v.owner[s];
    if (old >= 0 && old < num_nodes_ && v.slot_of[old] == s) v.slot_of[old] = -1;
  }
  for (size_t j = 0; j < fresh.size(); ++j) {
    const int64_t s = slots[j];
    const int64_t id = ids[fresh[j]];
    v.owner[s] = id;
    v.slot_of[id] = static_cast<int32_t>(s);
    std::memcpy(v.data + s * row_bytes_, rows + fresh[j] * row_bytes_,
                static_cast<size_t>(row_bytes_));
    v.ref[s] = true;
  }
}

namespace {

at::Tensor checked_ids(const at::Tensor& ids, int64_t num_nodes) {
  TORCH_CHECK(ids.device().is_cpu() && ids.dim() == 1 &&
                  (ids.scalar_type() == at::kLong || ids.scalar_type() == at::kInt),
              "ids must be a 1-D int64 or int32 CPU tensor");
  at::Tensor out = ids.to(at::kLong).contiguous();
  const int64_t* p = out.const_data_ptr<int64_t>();
  for (int64_t i = 0; i < out.numel(); ++i) {
    TORCH_CHECK(p[i] >= 0 && p[i] < num_nodes, "ids[", i, "] = ", p[i], " is outside [0, ",
                num_nodes, ")");
  }
  return out;
}

}  // namespace

std::pair<at::Tensor, at::Tensor> ClockCache::lookup(const at::Tensor& ids) {
  std::vector<int64_t> hit, slot;
  if (capacity_ > 0 && ids.numel() > 0) {
    const at::Tensor id = checked_ids(ids, num_nodes_);
    const std::vector<char> want(static_cast<size_t>(id.numel()), 1);
    const uint8_t* base = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      base = view().data;
    }
    lookup_rows(id.const_data_ptr<int64_t>(), id.numel(), want, [&](int64_t i, const uint8_t* row) {
      hit.push_back(i);
      slot.push_back((row - base) / row_bytes_);
    });
  }
  auto to_tensor = [](const std::vector<int64_t>& v) {
    return at::tensor(at::ArrayRef<int64_t>(v), at::kLong);
  };
  return {to_tensor(hit), to_tensor(slot)};
}

void ClockCache::insert(const at::Tensor& ids, const at::Tensor& rows) {
  const at::Tensor id = checked_ids(ids, num_nodes_);
  TORCH_CHECK(rows.device().is_cpu() && rows.scalar_type() == at::kByte && rows.dim() == 2 &&
                  rows.is_contiguous() && rows.size(1) == row_bytes_ &&
                  rows.size(0) >= id.numel(),
              "rows must be a contiguous uint8 CPU tensor of at least ", id.numel(), " rows of ",
              row_bytes_, " bytes");
  insert_rows(id.const_data_ptr<int64_t>(), rows.const_data_ptr<uint8_t>(), id.numel());
}

void register_clock_cache(pybind11::module_& m) {
  namespace py = pybind11;
  py::class_<ClockCache, std::shared_ptr<ClockCache>>(
      m, "ClockCache", "CLOCK cache of feature rows over caller-owned tensors "
                       "(csrc/features/clock_cache.h).")
      .def(py::init<at::Tensor, at::Tensor, at::Tensor, at::Tensor>(), py::arg("data"),
           py::arg("owner"), py::arg("ref"), py::arg("slot_of"))
      .def("lookup", &ClockCache::lookup, py::arg("ids"),
           py::call_guard<py::gil_scoped_release>())
      .def("insert", &ClockCache::insert, py::arg("ids"), py::arg("rows"),
           py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("hand", &ClockCache::hand);
}

}  // namespace gnnrepro
