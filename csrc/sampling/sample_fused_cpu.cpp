// Fused neighbour sampling + to_block on the CPU.
//
// Per layer, outward from the seeds: (1) count picks per destination, (2) sample neighbours in
// parallel over destinations straight into the block's `indices` (global ids, CSC order), and
// (3) relabel in place with a dense node map: destinations keep their ids 0..num_dst-1 and new
// sources get the next ids in first-occurrence order. No COO frontier and no hash table is built.
// A layer's sources, in order, are the next layer's destinations, so the map carries over
// between layers and is cleared once, at the end, over the input nodes only. The per-destination
// rules (random numbers, picks, relabel order, map contract) are the common/ headers the CUDA
// kernels call too; errors are collected and raised in sample_errors.h's order, like the CUDA op.
#include <ATen/MemoryOverlap.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <vector>

#include "../common/output_pool.h"
#include "../common/picks.h"
#include "../common/relabel.h"
#include "../common/rng.h"
#include "../common/step_team.h"
#include "prefetch_distances.h"
#include "sample_args.h"
#include "sample_errors.h"

namespace gnnrepro {
namespace {

// Destinations per item of the overlapped sample/relabel step (~15k edges at fanout 15), of the
// counting step, and input nodes per item of the final map clearing.
constexpr int64_t kChunk = 1024;
constexpr int64_t kCountChunk = 4096;
constexpr int64_t kClearChunk = 16384;
// How many items ahead the loops prefetch: prefetch_distances.h.

// Writes the positions in `indices` of `count` of the `degree` neighbours stored from `start`.
// Fanout -1 (all neighbours) takes them all, with or without replacement. `bitmap` is all zero
// on entry and on exit (it grows to the largest degree seen).
void pick_positions(int64_t start, int64_t degree, int64_t count, int64_t fanout, bool replace,
                    uint64_t key, int64_t* out, std::vector<uint64_t>& bitmap) {
  if (takes_all(degree, count, fanout, replace)) {
    for (int64_t j = 0; j < degree; ++j) out[j] = start + j;
    return;
  }
  if (replace) {
    for (int64_t j = 0; j < count; ++j) out[j] = start + replace_offset(key, j, degree);
    return;
  }
  // Floyd's algorithm: a uniform `count`-subset of [0, degree) with `count` draws. Membership
  // in a bitmap over the neighbour list: O(1) per pick for every fanout. Up to 64 neighbours
  // (most lists) it lives in a register; longer lists use `bitmap` (bits set, then cleared).
  if (degree <= 64) {
    uint64_t taken = 0;
    for (int64_t n = 0; n < count; ++n) {
      const int64_t j = floyd_j(degree, count, n);
      const int64_t r = floyd_draw(key, degree, count, n);
      const int64_t t = floyd_pick(r, taken >> r & 1, j);
      taken |= uint64_t{1} << t;
      out[n] = start + t;
    }
    return;
  }
  const auto words = static_cast<size_t>((degree + 63) / 64);
  if (bitmap.size() < words) bitmap.resize(words, 0);
  uint64_t* bits = bitmap.data();
  for (int64_t n = 0; n < count; ++n) {
    const int64_t j = floyd_j(degree, count, n);
    const int64_t r = floyd_draw(key, degree, count, n);
    const int64_t t = floyd_pick(r, bits[r >> 6] >> (r & 63) & 1, j);
    bits[t >> 6] |= uint64_t{1} << (t & 63);
    out[n] = start + t;
  }
  for (int64_t n = 0; n < count; ++n) {
    const int64_t t = out[n] - start;
    bits[t >> 6] &= ~(uint64_t{1} << (t & 63));
  }
}

// Lowers `target` to `value` if smaller (atomically: parallel loops record their smallest
// offending position this way, so the error reported does not depend on threads).
void atomic_min(std::atomic<int64_t>& target, int64_t value) {
  int64_t seen = target.load(std::memory_order_relaxed);
  while (value < seen && !target.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}

constexpr int64_t kNoError = std::numeric_limits<int64_t>::max();

// The calling thread's scratch, kept across calls so that steady-state batches allocate and
// page-fault nothing but their outputs (a fresh buffer per call would make the kernel fault in
// and clear its pages on every batch). Per calling thread, so no lock: one op call at a time
// uses it (its team's plans grow it, one at a time), and it is not an op argument (which
// torch.compile would see resized).
std::vector<int64_t>& thread_scratch() {
  thread_local std::vector<int64_t> scratch;
  return scratch;
}

// `scratch` with room for `size` int64 values. Growing keeps the contents but moves them: take
// pointers again after every call.
int64_t* grow(std::vector<int64_t>& scratch, int64_t size) {
  if (static_cast<int64_t>(scratch.size()) < size) scratch.resize(size + size / 4);
  return scratch.data();
}

// Restores node_map to all -1 if sampling stops with an error half way.
class NodeMapGuard {
 public:
  NodeMapGuard(int32_t* map, int64_t size) : map_(map), size_(size) {}
  ~NodeMapGuard() {
    if (!done_) std::fill(map_, map_ + size_, kUnmapped);
  }
  void done() { done_ = true; }

 private:
  int32_t* map_;
  int64_t size_;
  bool done_ = false;
};

// One call of the op on a graph whose `indices` hold IdT. The layers run as steps of one thread
// team (step_team.h): per layer, outward from the seeds, (1) counting and (2)+(3) sampling with
// the ordered relabel; then clearing the map. Step 2k counts layer num_layers-1-k, step 2k+1
// samples it, step 2L clears. Each `plan(s)` runs serially once step s-1 is complete: it checks
// what that step found and sets up step s. The members below are the state those steps share.
template <typename IdT>
class SampleCall {
 public:
  SampleCall(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& seeds,
             at::IntArrayRef fanouts, bool replace, int64_t seed, int64_t batch_id,
             at::Tensor& node_map)
      : num_nodes_(indptr.numel() - 1),
        num_edges_(indices.numel()),
        ip_(indptr.data_ptr<int64_t>()),
        ix_(indices.data_ptr<IdT>()),
        map_(node_map.data_ptr<int32_t>()),
        fanouts_(fanouts),
        num_layers_(static_cast<int64_t>(fanouts.size())),
        replace_(replace),
        seed_(seed),
        batch_id_(batch_id),
        out_(3 * num_layers_),
        scratch_(thread_scratch()),  // the calling thread's: plans run on any team thread
        dst_(seeds),
        num_dst_(seeds.numel()),
        layer_(num_layers_) {}

  // Samples every layer and returns the op's outputs: the block indptr, block indices and source
  // nodes of GNN layer 0, then of layer 1, and so on.
  std::vector<at::Tensor> run() {
    NodeMapGuard guard(map_, num_nodes_);
    map_seeds();
    run_steps(2 * num_layers_ + 1, at::get_num_threads(),
              [this](int64_t step) { return plan(step); });
    guard.done();
    return std::move(out_);
  }

 private:
  // Checks the seeds and gives seed i local id i. Range, then a clean map at every seed, then
  // duplicates (the smallest repeated node), each over all seeds before the next, as the CUDA
  // op's kernels do.
  void map_seeds() {
    const int64_t* s = dst_.data_ptr<int64_t>();
    for (int64_t i = 0; i < num_dst_; ++i) {
      if (s[i] < 0 || s[i] >= num_nodes_) {
        detail_.bad_seed_pos = i;
        detail_.bad_seed_value = s[i];
        raise_sample_error(kBadSeed, detail_, num_nodes_);
      }
    }
    for (int64_t i = 0; i < num_dst_; ++i) {
      if (map_[s[i]] != kUnmapped) raise_sample_error(kDirtySeedMap, detail_, num_nodes_);
    }
    for (int64_t i = 0; i < num_dst_; ++i) {
      const int64_t v = s[i];
      if (map_[v] != kUnmapped) {
        detail_.duplicate_node =
            detail_.duplicate_node < 0 ? v : std::min(detail_.duplicate_node, v);
        continue;
      }
      map_[v] = static_cast<int32_t>(i);
    }
    if (detail_.duplicate_node >= 0) raise_sample_error(kDuplicateSeed, detail_, num_nodes_);
  }

  // Sets up step `step` (see the class comment); an even step first ends the layer that the
  // step before it sampled.
  TeamStep plan(int64_t step) {
    if (step % 2 == 0 && step > 0) finish_layer();
    if (step == 2 * num_layers_) return plan_clear();
    if (step == 2 * num_layers_ + 1) return {};  // the final tail: nothing left to do
    if (step % 2 == 0) return plan_count();      // the next layer outward
    return plan_sample();                         // the layer just counted
  }

  // Step (1) of the next layer outward: its block indptr and room for starts and degrees.
  TeamStep plan_count() {
    --layer_;
    fanout_ = fanouts_[layer_];
    d_ = dst_.data_ptr<int64_t>();
    block_indptr_ = pooled_empty(num_dst_ + 1, at::kLong);
    bp_ = block_indptr_.data_ptr<int64_t>();
    // Scratch layout: start[num_dst] | degree[num_dst] | src[num_dst + block_edges].
    start_ = grow(scratch_, 2 * num_dst_);
    degree_ = start_ + num_dst_;
    bad_indptr_.store(kNoError);
    return {(num_dst_ + kCountChunk - 1) / kCountChunk, [this](int64_t c) {
              count_range(c * kCountChunk, std::min(num_dst_, (c + 1) * kCountChunk));
            }};
  }

  // (1) Degrees and pick counts of destinations [begin, end); indptr is read once per
  // destination.
  void count_range(int64_t begin, int64_t end) {
    // Locals, not the members: those share cache lines with ones other threads write, and a
    // store through an int64_t* could alias them, forcing reloads.
    const int64_t* dst_ids = d_;
    int64_t *starts = start_, *degrees = degree_, *counts = bp_ + 1;
    const int64_t layer_fanout = fanout_;
    for (int64_t i = begin; i < end; ++i) {
      if (i + kPrefetchAhead < end) __builtin_prefetch(ip_ + dst_ids[i + kPrefetchAhead]);
      const int64_t v = dst_ids[i];
      int64_t lo = ip_[v], hi = ip_[v + 1];
      if (!(0 <= lo && lo <= hi && hi <= num_edges_)) {
        atomic_min(bad_indptr_, v);
        lo = hi = 0;
      }
      starts[i] = lo;
      degrees[i] = hi - lo;
      counts[i] = pick_count(hi - lo, layer_fanout, replace_);
    }
  }

  // Steps (2)+(3) of the layer just counted: raises what counting found, turns the counts into
  // the block indptr and sizes the block's indices and the source list.
  TeamStep plan_sample() {
    if (bad_indptr_.load() != kNoError) {
      detail_.bad_indptr_node = bad_indptr_.load();
      raise_sample_error(kBadIndptr, detail_, num_nodes_);
    }
    // Local ids are int32 in the map: sources (<= num_dst + edges) must stay below 2^31 - 1.
    const int64_t limit = std::numeric_limits<int32_t>::max() - 1 - num_dst_;
    bp_[0] = 0;
    for (int64_t i = 0; i < num_dst_; ++i) {
      TORCH_CHECK(bp_[i + 1] <= limit - bp_[i],
                  "a block with 2^31 - 1 or more sources plus edges is not supported");
      bp_[i + 1] += bp_[i];
    }
    const int64_t block_edges = bp_[num_dst_];
    // src: the layer's sources in order of their local ids (at most num_dst + block_edges).
    start_ = grow(scratch_, 3 * num_dst_ + block_edges);
    degree_ = start_ + num_dst_;
    src_ = degree_ + num_dst_;
    block_indices_ = pooled_empty(block_edges, at::kLong);
    bi_ = block_indices_.data_ptr<int64_t>();
    if (num_dst_) std::memcpy(src_, d_, num_dst_ * sizeof(int64_t));  // empty tensors hold null
    next_ = num_dst_;
    map_ok_ = true;
    bad_index_.store(kNoError);
    return {(num_dst_ + kChunk - 1) / kChunk, [this](int64_t c) { sample_chunk(c); },
            [this](int64_t c) { relabel_chunk(c); }};
  }

  // (2) Sample a chunk: first the picked positions (random numbers only, sequential writes),
  // then a gather of the neighbour ids with prefetching, so the random reads of `indices`
  // (mostly one cache line per pick: frontiers favour hubs) overlap.
  void sample_chunk(int64_t chunk) {
    const int64_t begin = chunk * kChunk, end = std::min(begin + kChunk, num_dst_);
    pick_chunk(begin, end);
    gather_chunk(bp_[begin], bp_[end]);
  }

  // The picked positions of destinations [begin, end) into bi[bp[begin]..bp[end]).
  void pick_chunk(int64_t begin, int64_t end) {
    const int64_t* offsets = bp_;  // locals: see count_range
    const int64_t* dst_ids = d_;
    const int64_t *starts = start_, *degrees = degree_;
    int64_t* picks = bi_;
    const int64_t layer_fanout = fanout_;
    const uint64_t layer_stream = layer_key(static_cast<uint64_t>(seed_),
                                            static_cast<uint64_t>(batch_id_),
                                            static_cast<uint64_t>(layer_));
    thread_local std::vector<uint64_t> thread_bitmap;  // all zero between destinations
    std::vector<uint64_t>& bitmap = thread_bitmap;  // looked up once, not per destination
    for (int64_t i = begin; i < end; ++i) {
      const int64_t count = offsets[i + 1] - offsets[i];
      if (count == 0) continue;
      const uint64_t key = node_key(layer_stream, static_cast<uint64_t>(dst_ids[i]));
      pick_positions(starts[i], degrees[i], count, layer_fanout, replace_, key,
                     picks + offsets[i], bitmap);
    }
  }

  // Replaces the positions bi[e_begin..e_end) by the neighbour ids they hold; an id outside
  // [0, num_nodes) is recorded and its edge marked -1.
  void gather_chunk(int64_t e_begin, int64_t e_end) {
    int64_t* picks = bi_;  // locals: see count_range
    const IdT* ix = ix_;
    const int64_t num_nodes = num_nodes_;
    for (int64_t e = e_begin; e < e_end; ++e) {
      if (e + kGatherPrefetchAhead < e_end) {
        __builtin_prefetch(ix + picks[e + kGatherPrefetchAhead]);
      }
      const int64_t u = ix[picks[e]];
      if (static_cast<uint64_t>(u) >= static_cast<uint64_t>(num_nodes)) {
        atomic_min(bad_index_, picks[e]);
        picks[e] = -1;  // skipped by the relabel; the error is raised after the layer
        continue;
      }
      picks[e] = u;
    }
  }

  // (3) Relabel a chunk in place: destinations keep ids 0..num_dst-1 (the previous layer
  // mapped them so), new sources take the next ids in first-occurrence order; chunks come in
  // order, so the result does not depend on threads. Branch-free (a new node is as likely as
  // a seen one, so a branch mispredicts half the time), with the map entries prefetched. An
  // entry the op did not write (relabel.h) can only come from a map that was not all -1 on
  // entry: it is reported after the layer and its output discarded. Its check (`src[m] == u`,
  // a random read) only feeds that report, never the next id, so it stays off the loop's
  // dependency chain; an entry out of range is never read through.
  void relabel_chunk(int64_t chunk) {
    int64_t* ids = bi_;  // locals: see count_range
    int64_t* sources = src_;
    int32_t* const node_map = map_;
    int64_t fresh_id = next_;
    bool all_ok = map_ok_;
    const int64_t begin = chunk * kChunk, end = std::min(begin + kChunk, num_dst_);
    const int64_t e_end = bp_[end];
    for (int64_t e = bp_[begin]; e < e_end; ++e) {
      if (e + kRelabelPrefetchAhead < e_end && ids[e + kRelabelPrefetchAhead] >= 0) {
        __builtin_prefetch(node_map + ids[e + kRelabelPrefetchAhead]);
      }
      if (e + kOwnerPrefetchAhead < e_end && ids[e + kOwnerPrefetchAhead] >= 0) {
        // The map entry was prefetched above; prefetch the check's read of `sources` next.
        const int64_t m_ahead = node_map[ids[e + kOwnerPrefetchAhead]];
        __builtin_prefetch(sources + (map_id_in_range(m_ahead, fresh_id) ? m_ahead : 0));
      }
      const int64_t u = ids[e];
      if (u < 0) {  // a bad index (raised below)
        ids[e] = 0;
        continue;
      }
      const int64_t m = node_map[u];
      const bool in_range = map_id_in_range(m, fresh_id);
      // Selects by mask, not `?:`: the compiler turns that into the unpredictable branch.
      const int64_t seen = -static_cast<int64_t>(in_range);  // all ones if m is an id
      const int64_t owner = sources[m & seen];
      all_ok &= (m == kUnmapped) | (in_range & (owner == u));
      const int64_t id = (m & seen) | (fresh_id & ~seen);
      node_map[u] = static_cast<int32_t>(id);
      sources[fresh_id] = u;  // kept only if u is new: fresh_id advances past it
      fresh_id += 1 + seen;
      ids[e] = id;
    }
    next_ = fresh_id;
    map_ok_ = all_ok;
  }

  // Ends the layer just sampled: its errors, its source list (the next layer's destinations).
  void finish_layer() {
    if (bad_index_.load() != kNoError) {
      detail_.bad_index_pos = bad_index_.load();
      detail_.bad_index_value = static_cast<int64_t>(ix_[detail_.bad_index_pos]);
      raise_sample_error(kBadIndex, detail_, num_nodes_);
    }
    if (!map_ok_) raise_sample_error(kDirtyMap, detail_, num_nodes_);
    at::Tensor src_nodes = pooled_empty(next_, at::kLong);
    if (next_) std::memcpy(src_nodes.data_ptr<int64_t>(), src_, next_ * sizeof(int64_t));
    out_[3 * layer_] = block_indptr_;
    out_[3 * layer_ + 1] = block_indices_;
    out_[3 * layer_ + 2] = src_nodes;
    dst_ = src_nodes;
    num_dst_ = next_;
  }

  // The last step: every node the map holds is an input node (each layer's sources include its
  // destinations), so clearing just those restores the all -1 invariant.
  TeamStep plan_clear() {
    const int64_t* input_nodes = dst_.data_ptr<int64_t>();
    const int64_t n = num_dst_;
    int32_t* const map = map_;
    return {(n + kClearChunk - 1) / kClearChunk, [=](int64_t c) {
              const int64_t end = std::min(n, (c + 1) * kClearChunk);
              for (int64_t i = c * kClearChunk; i < end; ++i) map[input_nodes[i]] = kUnmapped;
            }};
  }

  // The inputs.
  const int64_t num_nodes_, num_edges_;
  const int64_t* const ip_;
  const IdT* const ix_;
  int32_t* const map_;
  const at::IntArrayRef fanouts_;
  const int64_t num_layers_;
  const bool replace_;
  const int64_t seed_, batch_id_;

  std::vector<at::Tensor> out_;
  SampleErrorDetail detail_;
  std::vector<int64_t>& scratch_;

  // The layer being sampled: its destinations (the previous layer's sources) and fanout.
  at::Tensor dst_;
  int64_t num_dst_;
  int64_t layer_;
  const int64_t* d_ = nullptr;
  int64_t fanout_ = 0;
  // Its block (bp: indptr, bi: indices) and scratch: per destination the first neighbour
  // position and the degree, and the source list src[0..next).
  at::Tensor block_indptr_, block_indices_;
  int64_t *bp_ = nullptr, *bi_ = nullptr, *start_ = nullptr, *degree_ = nullptr,
          *src_ = nullptr;
  int64_t next_ = 0;
  // What its steps found: a map entry the op did not write, the smallest bad node / position.
  bool map_ok_ = true;
  std::atomic<int64_t> bad_indptr_{kNoError}, bad_index_{kNoError};
};

template <typename IdT>
std::vector<at::Tensor> sample_fused_cpu_typed(const at::Tensor& indptr, const at::Tensor& indices,
                                               const at::Tensor& seeds, at::IntArrayRef fanouts,
                                               bool replace, int64_t seed, int64_t batch_id,
                                               at::Tensor& node_map) {
  return SampleCall<IdT>(indptr, indices, seeds, fanouts, replace, seed, batch_id, node_map)
      .run();
}

std::vector<at::Tensor> sample_fused_cpu(const at::Tensor& indptr, const at::Tensor& indices,
                                         const at::Tensor& seeds, at::IntArrayRef fanouts,
                                         bool replace, int64_t seed, int64_t batch_id,
                                         at::Tensor node_map) {
  check_sample_args(indptr, indices, seeds, fanouts, node_map);
  // The op writes node_map: it may not share memory with an input.
  for (const at::Tensor* input : {&indptr, &indices, &seeds}) {
    at::assert_no_overlap(node_map, *input);
  }
  if (indices.scalar_type() == at::kInt) {
    return sample_fused_cpu_typed<int32_t>(indptr, indices, seeds, fanouts, replace, seed,
                                           batch_id, node_map);
  }
  return sample_fused_cpu_typed<int64_t>(indptr, indices, seeds, fanouts, replace, seed, batch_id,
                                         node_map);
}

}  // namespace

TORCH_LIBRARY_IMPL(gnnrepro, CPU, m) { m.impl("sample_fused", &sample_fused_cpu); }

}  // namespace gnnrepro
