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
#include <vector>

#include "../common/output_pool.h"
#include "../common/picks.h"
#include "../common/relabel.h"
#include "../common/rng.h"
#include "../common/step_team.h"
#include "sample_args.h"
#include "sample_errors.h"

namespace gnnrepro {
namespace {

// Destinations per item of the overlapped sample/relabel step (~15k edges at fanout 15), of the
// counting step, and input nodes per item of the final map clearing.
constexpr int64_t kChunk = 1024;
constexpr int64_t kCountChunk = 4096;
constexpr int64_t kClearChunk = 16384;
// How many items ahead the loops prefetch the random cache lines they will touch.
constexpr int64_t kPrefetchAhead = 16;
constexpr int64_t kRelabelPrefetchAhead = 32;
constexpr int64_t kOwnerPrefetchAhead = 12;
constexpr int64_t kGatherPrefetchAhead = 64;

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
// page-fault nothing but their outputs (a fresh buffer per call cost ~650 page faults and 15-20%
// a batch). Per calling thread, so no lock: one op call at a time uses it (its team's plans grow
// it, one at a time), and it is not an op argument (which torch.compile would see resized).
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

template <typename IdT>
std::vector<at::Tensor> sample_fused_cpu_typed(const at::Tensor& indptr, const at::Tensor& indices,
                                               const at::Tensor& seeds, at::IntArrayRef fanouts,
                                               bool replace, int64_t seed, int64_t batch_id,
                                               at::Tensor& node_map) {
  const int64_t num_nodes = indptr.numel() - 1;
  const int64_t num_edges = indices.numel();
  const int64_t* ip = indptr.data_ptr<int64_t>();
  const IdT* ix = indices.data_ptr<IdT>();
  int32_t* map = node_map.data_ptr<int32_t>();
  const int64_t num_layers = static_cast<int64_t>(fanouts.size());
  std::vector<at::Tensor> out(3 * num_layers);

  NodeMapGuard guard(map, num_nodes);
  at::Tensor dst = seeds;
  int64_t num_dst = seeds.numel();
  SampleErrorDetail detail;
  {
    // Seeds: range, then a clean map at every seed, then duplicates (the smallest repeated
    // node), each over all seeds before the next, as the CUDA op's kernels do.
    const int64_t* s = seeds.data_ptr<int64_t>();
    for (int64_t i = 0; i < num_dst; ++i) {
      if (s[i] < 0 || s[i] >= num_nodes) {
        detail.bad_seed_pos = i;
        detail.bad_seed_value = s[i];
        raise_sample_error(kBadSeed, detail, num_nodes);
      }
    }
    for (int64_t i = 0; i < num_dst; ++i) {
      if (map[s[i]] != kUnmapped) raise_sample_error(kDirtySeedMap, detail, num_nodes);
    }
    for (int64_t i = 0; i < num_dst; ++i) {
      const int64_t v = s[i];
      if (map[v] != kUnmapped) {
        detail.duplicate_node = detail.duplicate_node < 0 ? v : std::min(detail.duplicate_node, v);
        continue;
      }
      map[v] = static_cast<int32_t>(i);
    }
    if (detail.duplicate_node >= 0) raise_sample_error(kDuplicateSeed, detail, num_nodes);
  }

  // The layers run as steps of one thread team (step_team.h): per layer, outward from the
  // seeds, (1) counting and (2)+(3) sampling with the ordered relabel; then clearing the map.
  // Step 2k counts layer num_layers-1-k, step 2k+1 samples it, step 2L clears. Each `plan(s)`
  // runs serially once step s-1 is complete: it checks what that step found and sets up step s.
  std::vector<int64_t>& scratch = thread_scratch();  // this (calling) thread's; plans grow it
  int64_t layer = num_layers;
  at::Tensor block_indptr, block_indices;
  int64_t *bp = nullptr, *bi = nullptr, *start = nullptr, *degree = nullptr, *src = nullptr;
  const int64_t* d = nullptr;
  int64_t fanout = 0, next = 0;
  bool map_ok = true;
  std::atomic<int64_t> bad_indptr{kNoError}, bad_index{kNoError};

  // (1) Degrees and pick counts of destinations [begin, end); indptr is read once per
  // destination.
  const auto count_range = [&](int64_t begin, int64_t end) {
    // Locals, not the captured variables: those share cache lines with ones other threads
    // write, and a store through an int64_t* could alias them, forcing reloads.
    const int64_t* dst_ids = d;
    int64_t *starts = start, *degrees = degree, *counts = bp + 1;
    const int64_t layer_fanout = fanout;
    for (int64_t i = begin; i < end; ++i) {
      if (i + kPrefetchAhead < end) __builtin_prefetch(ip + dst_ids[i + kPrefetchAhead]);
      const int64_t v = dst_ids[i];
      int64_t lo = ip[v], hi = ip[v + 1];
      if (!(0 <= lo && lo <= hi && hi <= num_edges)) {
        atomic_min(bad_indptr, v);
        lo = hi = 0;
      }
      starts[i] = lo;
      degrees[i] = hi - lo;
      counts[i] = pick_count(hi - lo, layer_fanout, replace);
    }
  };

  // (2) Sample a chunk: first the picked positions (random numbers only, sequential writes),
  // then a gather of the neighbour ids with prefetching, so the random reads of `indices`
  // (mostly one cache line per pick: frontiers favour hubs) overlap.
  const auto sample_chunk = [&](int64_t chunk) {
    const int64_t* offsets = bp;  // locals: see count_range
    const int64_t* dst_ids = d;
    const int64_t *starts = start, *degrees = degree;
    int64_t* picks = bi;
    const int64_t layer_fanout = fanout;
    const uint64_t layer_stream = layer_key(static_cast<uint64_t>(seed),
                                            static_cast<uint64_t>(batch_id),
                                            static_cast<uint64_t>(layer));
    const int64_t begin = chunk * kChunk, end = std::min(begin + kChunk, num_dst);
    thread_local std::vector<uint64_t> thread_bitmap;  // all zero between destinations
    std::vector<uint64_t>& bitmap = thread_bitmap;  // looked up once, not per destination
    for (int64_t i = begin; i < end; ++i) {
      const int64_t count = offsets[i + 1] - offsets[i];
      if (count == 0) continue;
      const uint64_t key = node_key(layer_stream, static_cast<uint64_t>(dst_ids[i]));
      pick_positions(starts[i], degrees[i], count, layer_fanout, replace, key,
                     picks + offsets[i], bitmap);
    }
    const int64_t e_end = offsets[end];
    for (int64_t e = offsets[begin]; e < e_end; ++e) {
      if (e + kGatherPrefetchAhead < e_end) {
        __builtin_prefetch(ix + picks[e + kGatherPrefetchAhead]);
      }
      const int64_t u = ix[picks[e]];
      if (static_cast<uint64_t>(u) >= static_cast<uint64_t>(num_nodes)) {
        atomic_min(bad_index, picks[e]);
        picks[e] = -1;  // skipped by the relabel; the error is raised after the layer
        continue;
      }
      picks[e] = u;
    }
  };

  // (3) Relabel a chunk in place: destinations keep ids 0..num_dst-1 (the previous layer
  // mapped them so), new sources take the next ids in first-occurrence order; chunks come in
  // order, so the result does not depend on threads. Branch-free (a new node is as likely as
  // a seen one, so a branch mispredicts half the time), with the map entries prefetched. An
  // entry the op did not write (relabel.h) can only come from a map that was not all -1 on
  // entry: it is reported after the layer and its output discarded. Its check (`src[m] == u`,
  // a random read) only feeds that report, never the next id, so it stays off the loop's
  // dependency chain; an entry out of range is never read through.
  const auto relabel_chunk = [&](int64_t chunk) {
    int64_t* ids = bi;  // locals: see count_range
    int64_t* sources = src;
    int32_t* const node_map = map;
    int64_t fresh_id = next;
    bool all_ok = map_ok;
    const int64_t begin = chunk * kChunk, end = std::min(begin + kChunk, num_dst);
    const int64_t e_end = bp[end];
    for (int64_t e = bp[begin]; e < e_end; ++e) {
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
    next = fresh_id;
    map_ok = all_ok;
  };

  // Ends the layer just sampled: its errors, its source list (the next layer's destinations).
  const auto finish_layer = [&]() {
    if (bad_index.load() != kNoError) {
      detail.bad_index_pos = bad_index.load();
      detail.bad_index_value = static_cast<int64_t>(ix[detail.bad_index_pos]);
      raise_sample_error(kBadIndex, detail, num_nodes);
    }
    if (!map_ok) raise_sample_error(kDirtyMap, detail, num_nodes);
    at::Tensor src_nodes = pooled_empty(next, at::kLong);
    if (next) std::memcpy(src_nodes.data_ptr<int64_t>(), src, next * sizeof(int64_t));
    out[3 * layer] = block_indptr;
    out[3 * layer + 1] = block_indices;
    out[3 * layer + 2] = src_nodes;
    dst = src_nodes;
    num_dst = next;
  };

  const auto plan = [&](int64_t step) -> TeamStep {
    if (step % 2 == 0 && step > 0) finish_layer();
    if (step == 2 * num_layers) {
      // Every node the map holds is an input node (each layer's sources include its
      // destinations): clearing just those restores the all -1 invariant.
      const int64_t* input_nodes = dst.data_ptr<int64_t>();
      const int64_t n = num_dst;
      return {(n + kClearChunk - 1) / kClearChunk, [=](int64_t c) {
                const int64_t end = std::min(n, (c + 1) * kClearChunk);
                for (int64_t i = c * kClearChunk; i < end; ++i) map[input_nodes[i]] = kUnmapped;
              }};
    }
    if (step == 2 * num_layers + 1) return {};  // the final tail: nothing left to do
    if (step % 2 == 0) {  // count the next layer outward
      --layer;
      fanout = fanouts[layer];
      d = dst.data_ptr<int64_t>();
      block_indptr = pooled_empty(num_dst + 1, at::kLong);
      bp = block_indptr.data_ptr<int64_t>();
      // Scratch layout: start[num_dst] | degree[num_dst] | src[num_dst + block_edges].
      start = grow(scratch, 2 * num_dst);
      degree = start + num_dst;
      bad_indptr.store(kNoError);
      return {(num_dst + kCountChunk - 1) / kCountChunk, [&](int64_t c) {
                count_range(c * kCountChunk, std::min(num_dst, (c + 1) * kCountChunk));
              }};
    }
    // Sample the layer just counted.
    if (bad_indptr.load() != kNoError) {
      detail.bad_indptr_node = bad_indptr.load();
      raise_sample_error(kBadIndptr, detail, num_nodes);
    }
    // Local ids are int32 in the map: sources (<= num_dst + edges) must stay below 2^31 - 1.
    const int64_t limit = std::numeric_limits<int32_t>::max() - 1 - num_dst;
    bp[0] = 0;
    for (int64_t i = 0; i < num_dst; ++i) {
      TORCH_CHECK(bp[i + 1] <= limit - bp[i],
                  "a block with 2^31 - 1 or more sources plus edges is not supported");
      bp[i + 1] += bp[i];
    }
    const int64_t block_edges = bp[num_dst];
    // src: the layer's sources in order of their local ids (at most num_dst + block_edges).
    start = grow(scratch, 3 * num_dst + block_edges);
    degree = start + num_dst;
    src = degree + num_dst;
    block_indices = pooled_empty(block_edges, at::kLong);
    bi = block_indices.data_ptr<int64_t>();
    if (num_dst) std::memcpy(src, d, num_dst * sizeof(int64_t));  // empty tensors hold null
    next = num_dst;
    map_ok = true;
    bad_index.store(kNoError);
    return {(num_dst + kChunk - 1) / kChunk, sample_chunk, relabel_chunk};
  };

  run_steps(2 * num_layers + 1, at::get_num_threads(), plan);
  guard.done();
  return out;
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
