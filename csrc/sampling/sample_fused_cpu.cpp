// Fused neighbour sampling + to_block on the CPU.
//
// Per layer, outward from the seeds: (1) count picks per destination, (2) sample neighbours in
// parallel over destinations straight into the block's `indices` (global ids, CSC order), and
// (3) relabel in place with a dense node map: destinations keep their ids 0..num_dst-1 and new
// sources get the next ids in first-occurrence order. No COO frontier and no hash table is built.
// A layer's sources, in order, are the next layer's destinations, so the map carries over
// between layers and is cleared once, at the end, over the input nodes only.
#include <ATen/MemoryOverlap.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "../common/ordered_pipeline.h"
#include "../common/rng.h"
#include "sample_args.h"

namespace gnnrepro {
namespace {

constexpr int64_t kGrain = 256;
// Destinations per chunk of the overlapped sample/relabel pipeline (~15k edges at fanout 15).
constexpr int64_t kChunk = 1024;
// How many items ahead the loops prefetch the random cache lines they will touch.
constexpr int64_t kPrefetchAhead = 16;
constexpr int64_t kRelabelPrefetchAhead = 32;
constexpr int64_t kGatherPrefetchAhead = 64;

// Writes the positions in `indices` of `count` of the `degree` neighbours stored from `start`.
// Fanout -1 (all neighbours) takes them all, with or without replacement. `bitmap` is all zero
// on entry and on exit (it grows to the largest degree seen).
void pick_positions(int64_t start, int64_t degree, int64_t count, int64_t fanout, bool replace,
                    uint64_t key, int64_t* out, std::vector<uint64_t>& bitmap) {
  if (fanout < 0 || (count == degree && !replace)) {
    for (int64_t j = 0; j < degree; ++j) out[j] = start + j;
    return;
  }
  if (replace) {
    for (int64_t j = 0; j < count; ++j) out[j] = start + static_cast<int64_t>(below(draw(key, j), degree));
    return;
  }
  // Floyd's algorithm: a uniform `count`-subset of [0, degree) with `count` draws. Membership
  // in a bitmap over the neighbour list (its picked bits are set, then cleared): O(1) per pick
  // for every fanout, so one code path serves small and large fanouts alike.
  const auto words = static_cast<size_t>((degree + 63) / 64);
  if (bitmap.size() < words) bitmap.resize(words, 0);
  uint64_t* bits = bitmap.data();
  for (int64_t j = degree - count, n = 0; j < degree; ++j, ++n) {
    const int64_t r = static_cast<int64_t>(below(draw(key, n), j + 1));
    const int64_t t = (bits[r >> 6] >> (r & 63) & 1) ? j : r;
    bits[t >> 6] |= uint64_t{1} << (t & 63);
    out[n] = start + t;
  }
  for (int64_t n = 0; n < count; ++n) {
    const int64_t t = out[n] - start;
    bits[t >> 6] &= ~(uint64_t{1} << (t & 63));
  }
}

// The workspace's data with room for `size` int64 values. The workspace lives across calls (the
// Python sampler owns it, like node_map), so steady-state batches allocate and page-fault
// nothing but their outputs. Growing keeps the contents (resize_ copies) but moves them:
// pointers into the workspace must be taken again after every call.
int64_t* grow(at::Tensor& workspace, int64_t size) {
  if (workspace.numel() < size) workspace.resize_({size + size / 4});
  return workspace.data_ptr<int64_t>();
}

constexpr int32_t kUnmapped = -1;

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
                                               at::Tensor& node_map, at::Tensor& workspace) {
  const int64_t num_nodes = indptr.numel() - 1;
  const int64_t num_edges = indices.numel();
  const int64_t* ip = indptr.data_ptr<int64_t>();
  const IdT* ix = indices.data_ptr<IdT>();
  int32_t* map = node_map.data_ptr<int32_t>();
  const auto long_opts = at::TensorOptions().dtype(at::kLong);
  const int64_t num_layers = static_cast<int64_t>(fanouts.size());
  std::vector<at::Tensor> out(3 * num_layers);

  NodeMapGuard guard(map, num_nodes);
  at::Tensor dst = seeds;
  int64_t num_dst = seeds.numel();
  {
    const int64_t* s = seeds.data_ptr<int64_t>();
    for (int64_t i = 0; i < num_dst; ++i) {
      const int64_t v = s[i];
      TORCH_CHECK(v >= 0 && v < num_nodes, "seeds[", i, "] = ", v, " is outside [0, ", num_nodes,
                  ")");
      const int32_t m = map[v];
      if (m != kUnmapped) {
        TORCH_CHECK(!(m >= 0 && m < i && s[m] == v), "seeds must be unique; node ", v,
                    " appears twice");
        TORCH_CHECK(false, "node_map must be all -1 on entry");
      }
      map[v] = static_cast<int32_t>(i);
    }
  }

  for (int64_t layer = num_layers - 1; layer >= 0; --layer) {
    const int64_t fanout = fanouts[layer];
    const int64_t* d = dst.data_ptr<int64_t>();
    at::Tensor block_indptr = at::empty({num_dst + 1}, long_opts);
    int64_t* bp = block_indptr.data_ptr<int64_t>();
    // Workspace layout: start[num_dst] | degree[num_dst] | src[num_dst + block_edges].
    int64_t* start = grow(workspace, 2 * num_dst);
    int64_t* degree = start + num_dst;

    // (1) Degrees and pick counts; indptr is read once per destination.
    at::parallel_for(0, num_dst, kGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        if (i + kPrefetchAhead < end) __builtin_prefetch(ip + d[i + kPrefetchAhead]);
        const int64_t v = d[i];
        const int64_t lo = ip[v], hi = ip[v + 1];
        TORCH_CHECK(0 <= lo && lo <= hi && hi <= num_edges,
                    "indptr is not a valid CSC offset array at node ", v);
        start[i] = lo;
        degree[i] = hi - lo;
        bp[i + 1] = pick_count(hi - lo, fanout, replace);
      }
    });
    // Local ids are int32 in the map: sources (<= num_dst + edges) must stay below 2^31 - 1.
    const int64_t limit = std::numeric_limits<int32_t>::max() - 1 - num_dst;
    bp[0] = 0;
    for (int64_t i = 0; i < num_dst; ++i) {
      TORCH_CHECK(bp[i + 1] <= limit - bp[i],
                  "a block with 2^31 - 1 or more sources plus edges is not supported");
      bp[i + 1] += bp[i];
    }
    const int64_t block_edges = bp[num_dst];
    start = grow(workspace, 3 * num_dst + block_edges);
    degree = start + num_dst;
    int64_t* src = degree + num_dst;

    // (2) + (3), overlapped chunk by chunk (ordered_pipeline): threads sample chunks of
    // destinations while one thread at a time relabels the sampled chunks in order.
    at::Tensor block_indices = at::empty({block_edges}, long_opts);
    int64_t* bi = block_indices.data_ptr<int64_t>();
    if (num_dst) std::memcpy(src, d, num_dst * sizeof(int64_t));  // empty tensors hold null
    int64_t next = num_dst;
    bool map_ok = true;

    // (2) Sample a chunk: first the picked positions (random numbers only, sequential writes),
    // then a gather of the neighbour ids with prefetching, so the random reads of `indices`
    // (mostly one cache line per pick: frontiers favour hubs) overlap.
    const auto sample_chunk = [&](int64_t chunk) {
      const int64_t begin = chunk * kChunk, end = std::min(begin + kChunk, num_dst);
      std::vector<uint64_t> bitmap;
      for (int64_t i = begin; i < end; ++i) {
        const int64_t count = bp[i + 1] - bp[i];
        if (count == 0) continue;
        const uint64_t key = node_key(static_cast<uint64_t>(seed), static_cast<uint64_t>(batch_id),
                                      static_cast<uint64_t>(layer), static_cast<uint64_t>(d[i]));
        pick_positions(start[i], degree[i], count, fanout, replace, key, bi + bp[i], bitmap);
      }
      const int64_t e_end = bp[end];
      for (int64_t e = bp[begin]; e < e_end; ++e) {
        if (e + kGatherPrefetchAhead < e_end) __builtin_prefetch(ix + bi[e + kGatherPrefetchAhead]);
        const int64_t u = ix[bi[e]];
        TORCH_CHECK(static_cast<uint64_t>(u) < static_cast<uint64_t>(num_nodes),
                    "indices holds node id ", u, " outside [0, ", num_nodes, ")");
        bi[e] = u;
      }
    };

    // (3) Relabel a chunk in place: destinations keep ids 0..num_dst-1 (the previous layer
    // mapped them so), new sources take the next ids in first-occurrence order; chunks come in
    // order, so the result does not depend on threads. Branch-free (a new node is as likely as
    // a seen one), with the map entries prefetched. An entry outside [-1, next) can only come
    // from a map that was not all -1 on entry: it is reported instead of leaking into the block.
    const auto relabel_chunk = [&](int64_t chunk) {
      const int64_t begin = chunk * kChunk, end = std::min(begin + kChunk, num_dst);
      const int64_t e_end = bp[end];
      for (int64_t e = bp[begin]; e < e_end; ++e) {
        if (e + kRelabelPrefetchAhead < e_end) __builtin_prefetch(map + bi[e + kRelabelPrefetchAhead]);
        const int64_t u = bi[e];
        const int64_t m = map[u];
        const bool fresh = m == kUnmapped;
        map_ok &= static_cast<uint64_t>(m + 1) <= static_cast<uint64_t>(next);  // -1 <= m < next
        const int64_t id = fresh ? next : m;
        map[u] = static_cast<int32_t>(id);
        src[next] = u;  // kept only if u is new: next advances past it
        next += fresh;
        bi[e] = id;
      }
    };

    ordered_pipeline((num_dst + kChunk - 1) / kChunk, sample_chunk, relabel_chunk);
    TORCH_CHECK(map_ok, "node_map must be all -1 on entry");
    at::Tensor src_nodes = at::empty({next}, long_opts);
    if (next) std::memcpy(src_nodes.data_ptr<int64_t>(), src, next * sizeof(int64_t));

    out[3 * layer] = block_indptr;
    out[3 * layer + 1] = block_indices;
    out[3 * layer + 2] = src_nodes;
    dst = src_nodes;
    num_dst = next;
  }

  // Every node the map holds is an input node (each layer's sources include its destinations):
  // clearing just those restores the all -1 invariant.
  const int64_t* input_nodes = dst.data_ptr<int64_t>();
  at::parallel_for(0, num_dst, 4096, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) map[input_nodes[i]] = kUnmapped;
  });
  guard.done();
  return out;
}

std::vector<at::Tensor> sample_fused_cpu(const at::Tensor& indptr, const at::Tensor& indices,
                                         const at::Tensor& seeds, at::IntArrayRef fanouts,
                                         bool replace, int64_t seed, int64_t batch_id,
                                         at::Tensor node_map, at::Tensor workspace) {
  check_sample_args(indptr, indices, seeds, fanouts, node_map);
  TORCH_CHECK(workspace.dim() == 1 && workspace.scalar_type() == at::kLong &&
                  workspace.is_contiguous() && workspace.device() == indptr.device(),
              "workspace must be a contiguous 1-D int64 tensor on the graph's device");
  // The op writes node_map and workspace (and may reallocate the workspace): neither may share
  // memory with an input or with each other.
  for (const at::Tensor* input : {&indptr, &indices, &seeds}) {
    at::assert_no_overlap(node_map, *input);
    at::assert_no_overlap(workspace, *input);
  }
  at::assert_no_overlap(workspace, node_map);
  if (indices.scalar_type() == at::kInt) {
    return sample_fused_cpu_typed<int32_t>(indptr, indices, seeds, fanouts, replace, seed,
                                           batch_id, node_map, workspace);
  }
  return sample_fused_cpu_typed<int64_t>(indptr, indices, seeds, fanouts, replace, seed, batch_id,
                                         node_map, workspace);
}

}  // namespace

TORCH_LIBRARY_IMPL(gnnrepro, CPU, m) { m.impl("sample_fused", &sample_fused_cpu); }

}  // namespace gnnrepro
