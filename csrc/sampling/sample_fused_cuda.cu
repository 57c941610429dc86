// Fused neighbour sampling + to_block on the GPU: the CUDA kernel of gnnrepro::sample_fused.
//
// Same schema, same per-destination rules (common/rng.h, picks.h, weighted_picks.h,
// exclusion.h, relabel.h: the functions the CPU op calls) and same error order
// (sample_errors.h) as the CPU op, so both give bit-identical blocks and the same error for the
// same input. The graph (indptr, indices, and any weights and excluded edges) is either in GPU
// memory or in pinned host memory that the kernels read over UVA; seeds, node_map and the
// outputs are on the GPU. Scratch comes from torch's caching allocator per call (stream-ordered,
// no cudaMalloc in steady state, never shared between streams).
//
// Per layer, outward from the seeds (all kernels on the current stream):
//   count     destination i: start/degree from indptr (the degree less its excluded edges; a
//             weighted one's positive weights less its excluded ones), pick count -> scan ->
//             block indptr (bp)
//   positions the picked positions into `indices`: one thread per edge for destinations that
//             take their whole list or sample with replacement (work split by edges, so a hub's
//             list spreads over the grid), a tile of G lanes per destination for Floyd; above G
//             picks the tile checks earlier rounds in a per-destination hash set (O(1) a pick);
//             a pick among the kept neighbours is moved past the excluded positions
//   lookup    neighbour ids; a bad index or an entry node_map must not hold is flagged
//   mark      a neighbour without a local id gets a first-use marker atomicMin(node_map[u],
//             kMarkerBase + e), which ends up holding u's first position in CSC order
//   flag      is_first[e] = (node_map[sampled[e]] == marker of e) -> scan -> rank
//   fill      local id of edge e: a destination's id from the map, or n + rank[first position];
//             the first occurrence also writes the id into the map and u into src
// This is the CPU op's numbering exactly: destinations keep 0..n-1 and new sources are numbered
// in order of first appearance scanning destinations, then their picks, in order.
//
// Host syncs (c10::cuda::memcpy_and_sync, visible to torch.cuda.set_sync_debug_mode): one before
// the first layer (its edge count) and one per layer, which reads back that layer's new-source
// count, the next layer's edge count (its count + scan already ran over an upper bound of the
// next frontier, counts past the real end being zero) and the error flags: fanouts.size() + 1.
// The last layer clears node_map before the last sync, so no work on node_map is queued when the
// op returns: a call from another stream cannot race with it. Every kernel stays in bounds
// whatever the input holds; bad input is flagged on the device and raised at the next sync,
// after node_map is reset to all -1 (and synced).
#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cooperative_groups.h>
#include <torch/library.h>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "../common/cuda_utils.h"
#include "../common/exclusion.h"
#include "../common/picks.h"
#include "../common/relabel.h"
#include "../common/rng.h"
#include "../common/temporal_picks.h"
#include "../common/weighted_picks.h"
#include "disjoint_relabel.h"
#include "sample_args.h"
#include "sample_errors.h"
#include "typed_spec.h"

namespace gnnrepro {
namespace {

namespace cg = cooperative_groups;
using ull = unsigned long long;

// node_map value of a node first sampled at edge position e of the current layer: below every
// local id and below -1 (e <= 2^31 - 3, see the block size check), ordered like e.
constexpr int32_t kMarkerBase = std::numeric_limits<int32_t>::min();
constexpr ull kNone = ~0ull;
// Floyd picks per destination above which earlier rounds are looked up in a hash set.
constexpr int kMaxTile = 32;

// The status block: error bits (sample_errors.h), one detail per error (the smallest offending
// position or node, kNone if none) and the counts read back at each sync.
enum StatusSlot : int {
  kErrors = 0,
  kBadSeedPos,
  kDuplicateNode,
  kBadIndptrNode,
  kBadIndexPos,
  kBadExcludedEntry,
  kNumNew,  // new source nodes of the layer just relabelled
  kStatusSlots
};
// After the fixed slots: per relation r its edges in the next layer (or the first, before the
// loop), at kStatusSlots + r; then per node type t its sources in the layer just relabelled, at
// kStatusSlots + num_rels + t (typed graphs only).

// Errors found in parallel carry their relation or node type in the detail's high bits, so that
// the smallest is the first relation's (type's) smallest position: (index << kRelShift) | pos.
constexpr int kRelShift = 47;
constexpr ull kPosMask = (ull{1} << kRelShift) - 1;

__device__ __forceinline__ void flag_error(ull* status, ull bit, StatusSlot slot, ull detail) {
  atomicOr(&status[kErrors], bit);
  if (slot != kErrors) atomicMin(&status[slot], detail);
}

__global__ void init_status_kernel(ull* status, int64_t slots) {
  status[kErrors] = 0;
  for (int s = kBadSeedPos; s <= kBadExcludedEntry; ++s) status[s] = kNone;
  for (int64_t s = kNumNew; s < slots; ++s) status[s] = 0;
}

// Seeds outside [0, N) and seeds whose map entry is not -1, before any entry is written (so
// what is read is the caller's map); `map` null: a temporal call, which writes no map entry.
// `seeds` are one type's (ids in [0, num_nodes)), `map` that type's part of the map and
// `type_tag` (type << kRelShift) names the type in a bad seed's detail.
__global__ void check_seeds_kernel(const int64_t* __restrict__ seeds, int64_t n,
                                   int64_t num_nodes, const int32_t* __restrict__ map,
                                   ull type_tag, ull* status) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t v = seeds[i];
    if (v < 0 || v >= num_nodes) {
      flag_error(status, kBadSeed, kBadSeedPos, type_tag | static_cast<ull>(i));
    } else if (map && map[v] != kUnmapped) {
      flag_error(status, kDirtySeedMap, kErrors, 0);
    }
  }
}

// One relation's excluded_edges in GPU memory, checked as add_exclusions checks host entries
// (typed_spec.h): an entry outside [0, num_edges) or not above the one before it is flagged
// (the smallest such entry, with the relation's tag). Raised at the first sync, before any
// position is picked; until then only the count kernel reads the array, by binary searches
// that stay in bounds whatever it holds.
__global__ void check_excluded_kernel(const int64_t* __restrict__ excluded, int64_t n,
                                      int64_t num_edges, ull rel_tag, ull* status) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t p = excluded[i];
    if (p < 0 || p >= num_edges || (i > 0 && p <= excluded[i - 1])) {
      flag_error(status, kBadExcluded, kBadExcludedEntry, rel_tag | static_cast<ull>(i));
    }
  }
}

// Maps seed i to local id i; a node twice in seeds is flagged (the smallest such node).
__global__ void map_seeds_kernel(const int64_t* __restrict__ seeds, int64_t n, int64_t num_nodes,
                                 int32_t* map, ull* status) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t v = seeds[i];
    if (v < 0 || v >= num_nodes) continue;  // flagged by check_seeds_kernel
    const int32_t old = atomicCAS(&map[v], kUnmapped, static_cast<int32_t>(i));
    if (old != kUnmapped && old >= 0 && old < n && old != i && seeds[old] == v) {
      flag_error(status, kDuplicateSeed, kDuplicateNode, static_cast<ull>(v));
    }  // any other value was flagged as a dirty entry by check_seeds_kernel
  }
}

// A temporal call's time arguments as the kernels read them, for one relation.
struct TimePtrs {
  const int64_t* times = nullptr;      // the relation's edge times (null: untimed)
  const int64_t* seed_time = nullptr;  // per seed (over every type, in order) its time
  int64_t num_seeds = 0;               // seed_time's length
  int shift = 0;                       // a key's seed index is key >> shift
  int64_t window = -1, strategy = 0;
};

// A timed destination's candidates [first, end) in its list [a, b) at time t, as the CPU op's
// count_timed finds them (temporal_picks.h): the first edge after t ends them; with a window,
// the first edge after its floor begins them.
__device__ CandidateRange candidates_at(const int64_t* __restrict__ times, int64_t a, int64_t b,
                                        int64_t t, int64_t window) {
  TimeSearch s{a, b - a};
  while (time_search_step(s, times, t)) {
  }
  const int64_t end = s.first;
  int64_t floor = 0;
  if (window < 0 || !window_floor(t, window, &floor)) return {a, end};
  s = {a, end - a};
  while (time_search_step(s, times, floor)) {
  }
  return {s.first, end};
}

// Start, degree and pick count of destinations 0..upper-1 (the first n_base + *n_extra are real;
// the rest get count 0, so a scan over `upper` gives the real total at its end). Counts are
// clamped to int32 max so the int64 scan cannot overflow; any real total that large fails the
// block size check anyway.
// `dst` holds global ids (under node_mask: a temporal call's keys carry their seed's index above
// them); the relation's destinations are its type's, from dst_offset on, and
// `rel_tag` (relation << kRelShift) makes a bad node's detail name its relation. A uniform
// relation's degree counts the neighbours not excluded (exclusion.h; all of them where
// num_excluded is 0), as the CPU op's count_range does.
// A timed relation (tp.times set: a temporal call) counts as the CPU op's count_timed does: over
// its candidates at its seed's time (start and degree: the sampled range and its kept edges),
// or, weighted, the whole list's degree code with the candidates' offsets in range[2i, 2i + 2).
__global__ void count_kernel(const int64_t* __restrict__ indptr, int64_t num_nodes,
                             int64_t num_edges, const int64_t* __restrict__ dst, int64_t upper,
                             int64_t n_base, const int32_t* __restrict__ n_extra, int64_t fanout,
                             bool replace, const int64_t* __restrict__ nonzero,
                             const float* __restrict__ weights,
                             const int64_t* __restrict__ excluded, int64_t num_excluded,
                             TimePtrs tp, int64_t node_mask, int64_t dst_offset, ull rel_tag,
                             int64_t* __restrict__ start, int64_t* __restrict__ degree,
                             int64_t* __restrict__ count, int64_t* __restrict__ range,
                             ull* status) {
  const int64_t n = n_base + (n_extra ? *n_extra : 0);
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < upper;
       i += int64_t{gridDim.x} * blockDim.x) {
    int64_t lo = 0, deg = 0, c = 0;
    CandidateRange cand{0, 0};
    const int64_t key = i < n ? dst[i] : -1, v = i < n ? (key & node_mask) - dst_offset : -1;
    // seeds outside [0, N) are flagged by check_seeds_kernel; a key's seed index is in range
    // (seed_keys_kernel, then the relabel's sources), checked all the same
    const int64_t seed = tp.times ? key >> tp.shift : 0;
    if (v >= 0 && v < num_nodes && seed >= 0 && (!tp.times || seed < tp.num_seeds)) {
      const int64_t a = indptr[v], b = indptr[v + 1];
      if (0 <= a && a <= b && b <= num_edges) {
        lo = a;
        cand = tp.times ? candidates_at(tp.times, a, b, tp.seed_time[seed], tp.window)
                        : CandidateRange{a, b};
        if (nonzero) {  // a weighted relation records its degree code (weighted_picks.h)
          const int64_t positive =
              tp.times ? available_positive_in(weights, a, b, cand.begin, cand.end, nonzero[v],
                                               excluded, num_excluded)
                       : available_positive(weights, a, b, nonzero[v], excluded, num_excluded);
          c = weighted_pick_count(b - a, positive, fanout, replace);
          deg = weighted_degree_code(b - a, positive, fanout, replace);
          cand = {cand.begin - a, cand.end - a};  // offsets in the list, for the picks
        } else if (tp.times) {
          const KeptRange kr = kept_strategy_range(cand, fanout, tp.strategy, excluded,
                                                   num_excluded);
          lo = kr.range.begin;
          deg = kr.kept;
          c = pick_count(deg, fanout, replace);
        } else {
          deg = b - a - excluded_in(excluded, num_excluded, a, b);
          c = pick_count(deg, fanout, replace);
        }
        c = std::min<int64_t>(c, std::numeric_limits<int32_t>::max());
      } else {
        flag_error(status, kBadIndptr, kBadIndptrNode, rel_tag | static_cast<ull>(v));
      }
    }
    start[i] = lo;
    degree[i] = deg;
    count[i] = c;
    if (range) {
      range[2 * i] = cand.begin;
      range[2 * i + 1] = cand.end;
    }
  }
}

// The destination whose edges [bp[i], bp[i+1]) hold edge e (bp non-decreasing, bp[0] = 0).
__device__ __forceinline__ int64_t owner_of(const int64_t* __restrict__ bp, int64_t n, int64_t e) {
  int64_t lo = 0, hi = n;  // the answer is the last i in [0, n) with bp[i] <= e
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (bp[mid] <= e) lo = mid; else hi = mid;
  }
  return lo;
}

// Positions of the edges of destinations that take their whole list or sample with
// replacement: one thread per edge, whatever the degrees (Floyd destinations are skipped).
// A pick is an offset among the destination's kept neighbours, moved past the excluded
// positions as the CPU op's pick_chunk moves it (exclusion.h; a no-op where num_excluded is 0).
__global__ void edge_positions_kernel(const int64_t* __restrict__ dst, int64_t n,
                                      const int64_t* __restrict__ bp,
                                      const int64_t* __restrict__ start,
                                      const int64_t* __restrict__ degree, int64_t num_edges,
                                      int64_t fanout, bool replace, uint64_t stream,
                                      const int64_t* __restrict__ excluded,
                                      int64_t num_excluded, int64_t* __restrict__ pos) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < num_edges;
       e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t i = owner_of(bp, n, e);
    const int64_t k = e - bp[i], count = bp[i + 1] - bp[i], deg = degree[i];
    int64_t p = 0;
    if (takes_all(deg, count, fanout, replace)) {
      p = start[i] + k;
    } else if (replace) {
      const uint64_t key = node_key(stream, static_cast<uint64_t>(dst[i]));
      p = start[i] + replace_offset(key, k, deg);
    } else {
      continue;  // floyd_kernel's
    }
    pos[e] = skip_excluded(p, excluded, num_excluded,
                           first_not_below(excluded, num_excluded, start[i]));
  }
}

// Positions of a weighted relation's picks: one thread per destination, running the CPU op's
// routine (weighted_picks.h) over the destination's weights and alias table, its excluded
// edges never picked. A timed relation's picks are among its candidates (`range`, from
// count_kernel; null where untimed), its most recent ones under "last" (`last`).
template <typename IdT>
__global__ void weighted_positions_kernel(const int64_t* __restrict__ dst, int64_t n,
                                          const int64_t* __restrict__ bp,
                                          const int64_t* __restrict__ start,
                                          const int64_t* __restrict__ degree,
                                          const float* __restrict__ weights,
                                          const int64_t* __restrict__ table, bool replace,
                                          uint64_t stream,
                                          const int64_t* __restrict__ excluded,
                                          int64_t num_excluded,
                                          const int64_t* __restrict__ range, bool last,
                                          int64_t* __restrict__ pos) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t out = bp[i], count = bp[i + 1] - out;
    if (count == 0) continue;
    const uint64_t key = node_key(stream, static_cast<uint64_t>(dst[i]));
    const int64_t s = start[i];  // degree[i]: the count kernel's degree code
    const PickOut po{s, pos + out, nullptr};  // ids: lookup_kernel reads indices
    const int64_t* candidates = range ? range + 2 * i : nullptr;
    const PickContext ctx =  // no marks: exact picks scan the picks; no sums (sum_draw)
        pick_context(nullptr, excluded, num_excluded, s, candidates ? candidates[0] : 0,
                     candidates ? candidates[1] : code_degree(degree[i]));
    weighted_positions<IdT>(weights + s, table + s * kTableWords<IdT>, degree[i], count, replace,
                            key, po, ctx, candidates && last);
  }
}

// A weighted relation's arrays as the kernels read them (null for a uniform relation).
struct WeightPtrs {
  const float* weights = nullptr;
  const int64_t* table = nullptr;
  const int64_t* nonzero = nullptr;
};

// A relation's excluded edges as the kernels read them (sorted CSC positions; null and 0 where
// none are).
struct ExcludedPtrs {
  const int64_t* positions = nullptr;
  int64_t count = 0;
};

// Open-addressing set of int64 offsets (kNone = empty) over `cap` slots: the Floyd picks of
// one destination so far.
__device__ __forceinline__ bool hash_contains(const ull* slots, int64_t cap, int64_t key) {
  for (int64_t s = static_cast<int64_t>(mix64(static_cast<uint64_t>(key)) % cap);;
       s = s + 1 == cap ? 0 : s + 1) {
    const ull v = slots[s];
    if (v == static_cast<ull>(key)) return true;
    if (v == kNone) return false;
  }
}

__device__ __forceinline__ void hash_insert(ull* slots, int64_t cap, int64_t key) {
  for (int64_t s = static_cast<int64_t>(mix64(static_cast<uint64_t>(key)) % cap);;
       s = s + 1 == cap ? 0 : s + 1) {
    const ull old = atomicCAS(&slots[s], kNone, static_cast<ull>(key));
    if (old == kNone || old == static_cast<ull>(key)) return;
  }
}

// Floyd's algorithm (picks.h) over tile lanes, drawing exactly the CPU op's positions. Steps go
// in rounds of G: lane l computes step c0 + l's draw and whether an earlier round picked it (in
// the destination's hash set: 2 * count slots at hash + 2 * bp[i], all kNone on entry); the
// round's steps are then resolved in order with one shuffle and one vote each, and inserted.
// Picks are offsets among the kept neighbours (the hash set holds those), each moved past the
// excluded positions as it is written, as in edge_positions_kernel.
template <int G>
__global__ void __launch_bounds__(kCudaThreads)
floyd_kernel(const int64_t* __restrict__ dst, int64_t n, const int64_t* __restrict__ bp,
             const int64_t* __restrict__ start, const int64_t* __restrict__ degree,
             int64_t fanout, uint64_t stream, const int64_t* __restrict__ excluded,
             int64_t num_excluded, int64_t* __restrict__ pos, ull* __restrict__ hash) {
  const auto tile = cg::tiled_partition<G>(cg::this_thread_block());
  const int lane = static_cast<int>(tile.thread_rank());
  const int64_t tiles = int64_t{gridDim.x} * blockDim.x / G;
  for (int64_t i = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) / G; i < n; i += tiles) {
    const int64_t out = bp[i], count = bp[i + 1] - out, deg = degree[i];
    if (count == 0 || takes_all(deg, count, fanout, false)) continue;
    const uint64_t key = node_key(stream, static_cast<uint64_t>(dst[i]));
    ull* set = hash + 2 * out;
    const int64_t cap = 2 * count;
    const int64_t first_excluded = first_not_below(excluded, num_excluded, start[i]);
    for (int64_t c0 = 0; c0 < count; c0 += G) {
      const int64_t step = c0 + lane;
      const bool active = step < count;
      const int64_t j = floyd_j(deg, count, step);
      const int64_t r = active ? floyd_draw(key, deg, count, step) : -1;
      const int earlier = active && c0 > 0 && hash_contains(set, cap, r);
      int64_t t = -1;
      const int steps = static_cast<int>(std::min<int64_t>(G, count - c0));
      for (int s = 0; s < steps; ++s) {
        const int64_t rs = tile.shfl(r, s);
        const bool taken = tile.any(lane < s && t == rs) || tile.shfl(earlier, s);
        if (lane == s) t = floyd_pick(rs, taken, j);
      }
      if (active) {
        pos[out + step] = skip_excluded(start[i] + t, excluded, num_excluded, first_excluded);
        if (count > G) hash_insert(set, cap, t);
      }
      tile.sync();  // the next round looks these picks up
    }
  }
}

// The neighbour id (within its source type) at position p, or -1 where `indices` holds one
// outside [0, num_src), flagged with the relation's tag (the smallest position wins).
template <typename IdT>
__device__ __forceinline__ int64_t neighbour_at(const IdT* __restrict__ indices, int64_t p,
                                                int64_t num_src, ull rel_tag, ull* status) {
  const auto local = static_cast<int64_t>(indices[p]);
  if (local >= 0 && local < num_src) return local;
  flag_error(status, kBadIndex, kBadIndexPos, rel_tag | static_cast<ull>(p));
  return -1;
}

// Global neighbour ids of the picked positions (the relation's source ids are its source type's,
// numbered from src_offset). An id outside [0, num_src) is flagged (neighbour_at) and its edge
// gets sampled = -1, which later kernels skip; so is a map entry the op cannot have written
// (relabel.h: before marking, an entry is -1 or a destination's id).
template <typename IdT>
__global__ void lookup_kernel(const IdT* __restrict__ indices, int64_t num_src,
                              int64_t src_offset, ull rel_tag, const int64_t* __restrict__ pos,
                              int64_t num_edges, const int64_t* __restrict__ dst, int64_t n,
                              const int32_t* __restrict__ map, int32_t* __restrict__ sampled,
                              ull* status) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < num_edges;
       e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t local = neighbour_at(indices, pos[e], num_src, rel_tag, status);
    int32_t id = -1;
    if (local >= 0) {
      const int64_t u = local + src_offset;
      id = static_cast<int32_t>(u);
      if (!map_entry_ok(map[u], u, n, dst)) flag_error(status, kDirtyMap, kErrors, 0);
    }
    sampled[e] = id;
  }
}

// lookup_kernel for a temporal call: edge e's key, its neighbour's global id under the seed
// index of its destination (dst holds the layer's keys, bp the relation's block indptr over its
// n destinations), or -1 for an id outside [0, num_src) (flagged as lookup_kernel flags it).
template <typename IdT>
__global__ void lookup_keys_kernel(const IdT* __restrict__ indices, int64_t num_src,
                                   int64_t src_offset, ull rel_tag,
                                   const int64_t* __restrict__ pos, int64_t num_edges,
                                   const int64_t* __restrict__ dst,
                                   const int64_t* __restrict__ bp, int64_t n, int64_t node_mask,
                                   int64_t* __restrict__ keys, ull* status) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < num_edges;
       e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t local = neighbour_at(indices, pos[e], num_src, rel_tag, status);
    keys[e] = local < 0 ? -1 : (dst[owner_of(bp, n, e)] & ~node_mask) | (local + src_offset);
  }
}

// First-use markers of neighbours without a local id.
__global__ void mark_kernel(const int32_t* __restrict__ sampled, int64_t num_edges, int32_t* map) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < num_edges;
       e += int64_t{gridDim.x} * blockDim.x) {
    const int32_t u = sampled[e];
    if (u >= 0 && map[u] < 0) atomicMin(&map[u], kMarkerBase + static_cast<int32_t>(e));
  }
}

// flag[e] = 1 where edge e is its source's first use (its marker holds e).
__global__ void first_use_kernel(const int32_t* __restrict__ sampled, int64_t num_edges,
                                 const int32_t* map, int32_t* __restrict__ flag) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < num_edges;
       e += int64_t{gridDim.x} * blockDim.x) {
    const int32_t u = sampled[e];
    flag[e] = u >= 0 && map[u] == kMarkerBase + static_cast<int32_t>(e);
  }
}

// Local ids into the block's indices; each new source's first use also stores its id in the
// map (for the next layer, whose destinations these sources are) and its node in src. Another
// edge of the same source may read the marker or the new id: both give the same id. A marker
// that does not point at a use of u can only be stale content (already flagged by lookup).
__global__ void fill_kernel(const int32_t* __restrict__ sampled, int64_t num_edges, int32_t* map,
                            const int32_t* __restrict__ rank, int64_t n, int64_t* __restrict__ bi,
                            int64_t* __restrict__ src, ull* status) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < num_edges;
       e += int64_t{gridDim.x} * blockDim.x) {
    const int32_t u = sampled[e];
    int64_t id = 0;
    if (u >= 0) {
      const int32_t m = map[u];
      if (m >= 0) {
        id = m;
      } else {
        const int64_t first = int64_t{m} - kMarkerBase;
        if (first < num_edges && sampled[first] == u) {
          id = n + rank[first];
          if (first == e) {
            map[u] = static_cast<int32_t>(id);
            src[id] = u;
          }
        } else {
          flag_error(status, kDirtyMap, kErrors, 0);
        }
      }
    }
    bi[e] = id;
  }
}

// Copies a total the host reads at the next sync into the status block (0 for null).
template <typename T>
__global__ void total_kernel(ull* slot, const T* total) {
  *slot = total ? static_cast<ull>(*total) : 0;
}

// Clears the map entries of nodes[0 .. n_base + *n_extra) (n_extra may be null),
// n_base + *n_extra <= upper.
__global__ void unmap_kernel(const int64_t* __restrict__ nodes, int64_t upper, int64_t n_base,
                             const int32_t* __restrict__ n_extra, int32_t* map) {
  const int64_t n = n_base + (n_extra ? *n_extra : 0);
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n && i < upper;
       i += int64_t{gridDim.x} * blockDim.x) {
    map[nodes[i]] = kUnmapped;
  }
}

// Bytes of cub scratch for an inclusive sum over `items` values of type T.
template <typename T>
size_t scan_temp_bytes(int64_t items, cudaStream_t stream) {
  size_t bytes = 0;
  if (items > 0) {
    C10_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, bytes, static_cast<const T*>(nullptr),
                                                 static_cast<T*>(nullptr),
                                                 static_cast<int>(items), stream));
  }
  return bytes;
}

// out[0] = 0, out[1..items] = inclusive sum of in[0..items), with cub scratch from `device`'s
// caching allocator.
template <typename T>
void exclusive_offsets(const T* in, T* out, int64_t items, const at::TensorOptions& bytes_opts,
                       cudaStream_t stream) {
  C10_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(T), stream));
  if (items == 0) return;
  size_t temp_bytes = scan_temp_bytes<T>(items, stream);
  at::Tensor temp = at::empty({static_cast<int64_t>(temp_bytes)}, bytes_opts);
  C10_CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp.data_ptr(), temp_bytes, in, out + 1,
                                               static_cast<int>(items), stream));
}

// One layer's count arrays over `upper` destinations: start | degree | count | bp (upper + 1),
// and for a weighted timed relation its candidates' offsets (2 * upper; else null).
struct CountArrays {
  at::Tensor storage;
  int64_t* start;
  int64_t* degree;
  int64_t* count;
  int64_t* bp;
  int64_t* range = nullptr;
  CountArrays(int64_t upper, const at::TensorOptions& long_opts, bool with_range = false)
      : storage(at::empty({(with_range ? 6 : 4) * upper + 1}, long_opts)) {
    start = storage.data_ptr<int64_t>();
    degree = start + upper;
    count = degree + upper;
    bp = count + upper;
    if (with_range) range = bp + upper + 1;
  }
};

// `tp`: a timed relation's time arguments (times null where untimed).
void launch_count(const int64_t* indptr, int64_t num_nodes, int64_t num_edges, const int64_t* dst,
                  int64_t upper, int64_t n_base, const int32_t* n_extra, int64_t fanout,
                  bool replace, const WeightPtrs& wp, const ExcludedPtrs& ex, const TimePtrs& tp,
                  int64_t node_mask, int64_t dst_offset, ull rel_tag, const CountArrays& ca,
                  ull* status, const at::TensorOptions& bytes_opts, cudaStream_t stream) {
  if (upper > 0) {
    count_kernel<<<cuda_blocks(upper), kCudaThreads, 0, stream>>>(
        indptr, num_nodes, num_edges, dst, upper, n_base, n_extra, fanout, replace, wp.nonzero,
        wp.weights, ex.positions, ex.count, tp, node_mask, dst_offset, rel_tag, ca.start,
        ca.degree, ca.count, ca.range, status);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  exclusive_offsets<int64_t>(ca.count, ca.bp, upper, bytes_opts, stream);
}

// Picked positions of every edge of one relation's part of the layer into pos[0..edges).
template <typename IdT>
void launch_positions(const int64_t* dst, int64_t n, const CountArrays& ca, int64_t edges,
                      int64_t fanout, bool replace, const WeightPtrs& wp, const ExcludedPtrs& ex,
                      bool last, uint64_t stream_key, int64_t* pos,
                      const at::TensorOptions& long_opts, cudaStream_t stream) {
  if (wp.weights) {
    weighted_positions_kernel<IdT><<<cuda_blocks(n), kCudaThreads, 0, stream>>>(
        dst, n, ca.bp, ca.start, ca.degree, wp.weights, wp.table, replace, stream_key,
        ex.positions, ex.count, ca.range, last, pos);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return;
  }
  edge_positions_kernel<<<cuda_blocks(edges), kCudaThreads, 0, stream>>>(
      dst, n, ca.bp, ca.start, ca.degree, edges, fanout, replace, stream_key, ex.positions,
      ex.count, pos);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  if (fanout < 0 || replace) return;
  // Floyd: a tile of about one lane per pick; above kMaxTile picks, rounds and a hash set.
  at::Tensor hash;
  ull* hash_ptr = nullptr;
  if (fanout > kMaxTile) {
    hash = at::empty({2 * edges}, long_opts);
    hash_ptr = reinterpret_cast<ull*>(hash.data_ptr<int64_t>());
    C10_CUDA_CHECK(cudaMemsetAsync(hash_ptr, 0xFF, 2 * edges * sizeof(ull), stream));
  }
  if (fanout <= 8) {
    floyd_kernel<8><<<cuda_blocks(n * 8), kCudaThreads, 0, stream>>>(
        dst, n, ca.bp, ca.start, ca.degree, fanout, stream_key, ex.positions, ex.count, pos,
        hash_ptr);
  } else if (fanout <= 16) {
    floyd_kernel<16><<<cuda_blocks(n * 16), kCudaThreads, 0, stream>>>(
        dst, n, ca.bp, ca.start, ca.degree, fanout, stream_key, ex.positions, ex.count, pos,
        hash_ptr);
  } else {
    floyd_kernel<kMaxTile><<<cuda_blocks(n * kMaxTile), kCudaThreads, 0, stream>>>(
        dst, n, ca.bp, ca.start, ca.degree, fanout, stream_key, ex.positions, ex.count, pos,
        hash_ptr);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// ---- Typed graphs: the layer's sources split by node type ------------------------------------

// out[i] = in[i] + add (seeds to global ids, global ids to a type's ids with add < 0).
__global__ void add_kernel(const int64_t* __restrict__ in, int64_t n, int64_t add,
                           int64_t* __restrict__ out) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    out[i] = in[i] + add;
  }
}

// The node type of each source (offsets: num_types + 1 global id offsets, on the device),
// counted per type into counts[t], and order[i] = i for the sort.
__global__ void type_kernel(const int64_t* __restrict__ src, int64_t n,
                            const int64_t* __restrict__ offsets, int64_t num_types,
                            int32_t* __restrict__ type, int32_t* __restrict__ order, ull* counts) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    int32_t t = 0;
    while (t + 1 < num_types && src[i] >= offsets[t + 1]) ++t;
    type[i] = t;
    order[i] = static_cast<int32_t>(i);
    atomicAdd(&counts[t], ull{1});
  }
}

// The sources in type-major order: new id k for old id order[k]; the map and `perm` (old id ->
// new id) follow.
__global__ void reorder_kernel(const int64_t* __restrict__ src, const int32_t* __restrict__ order,
                               int64_t n, int64_t* __restrict__ reordered,
                               int32_t* __restrict__ perm, int32_t* map) {
  for (int64_t k = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; k < n;
       k += int64_t{gridDim.x} * blockDim.x) {
    const int32_t j = order[k];
    const int64_t u = src[j];
    reordered[k] = u;
    perm[j] = static_cast<int32_t>(k);
    map[u] = static_cast<int32_t>(k);
  }
}

// A relation's block indices renumbered: out[e] = perm[in[e]] - base (its source type's first
// new id), so that they count within that type's sources.
__global__ void renumber_kernel(const int64_t* __restrict__ in, int64_t n,
                                const int32_t* __restrict__ perm, int64_t base,
                                int64_t* __restrict__ out) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < n;
       e += int64_t{gridDim.x} * blockDim.x) {
    out[e] = perm[in[e]] - base;
  }
}

// A temporal call's seeds of one type as keys: seed i of the call (over every type, type t's
// from `first`) is (i << shift) | its global id, so that a node reached from two seeds is two
// sources (the CPU op's DisjointMap keys). The id is masked: a seed outside its range (flagged
// by check_seeds_kernel, raised at the first sync, after the first count) must not carry into
// the seed index, which the count reads a time at.
__global__ void seed_keys_kernel(const int64_t* __restrict__ seeds, int64_t n, int64_t first,
                                 int64_t offset, int shift, int64_t* __restrict__ keys) {
  const int64_t node_mask = (int64_t{1} << shift) - 1;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    keys[i] = ((first + i) << shift) | ((seeds[i] + offset) & node_mask);
  }
}

// Reads the status block back (a counted host sync) and raises the first error it holds, in
// sample_errors.h's order, after resetting node_map (the caller's catch).
std::vector<ull> sync_status(const ull* status, int64_t slots, cudaStream_t stream,
                             const TypedSpec& spec) {
  std::vector<ull> host(slots);
  c10::cuda::memcpy_and_sync(host.data(), status, slots * sizeof(ull), cudaMemcpyDeviceToHost,
                             stream);
  const ull errors = host[kErrors];
  if (errors == 0) return host;
  // Error path only: a few more syncs to name the culprit the way the CPU op does.
  SampleErrorDetail detail;
  int64_t seed_limit = spec.total_nodes();
  if (errors & kBadExcluded) {
    const auto r = static_cast<int64_t>(host[kBadExcludedEntry] >> kRelShift);
    detail.bad_excluded_rel = r;
    detail.bad_excluded_entry = static_cast<int64_t>(host[kBadExcludedEntry] & kPosMask);
    detail.bad_excluded_value = spec.rels[r].excluded[detail.bad_excluded_entry].item<int64_t>();
    detail.bad_excluded_limit = spec.rels[r].indices.numel();
  }
  if (errors & kBadSeed) {
    detail.bad_seed_type = static_cast<int64_t>(host[kBadSeedPos] >> kRelShift);
    detail.bad_seed_pos = static_cast<int64_t>(host[kBadSeedPos] & kPosMask);
    detail.bad_seed_value = spec.seeds[detail.bad_seed_type][detail.bad_seed_pos].item<int64_t>();
    seed_limit = spec.offsets[detail.bad_seed_type + 1] - spec.offsets[detail.bad_seed_type];
  }
  if (errors & kDuplicateSeed) {
    const auto node = static_cast<int64_t>(host[kDuplicateNode]);
    detail.duplicate_type = spec.type_of(node);
    detail.duplicate_node = node - spec.offsets[detail.duplicate_type];
  }
  if (errors & kBadIndex) {
    const auto r = static_cast<int64_t>(host[kBadIndexPos] >> kRelShift);
    detail.bad_index_rel = r;
    detail.bad_index_pos = static_cast<int64_t>(host[kBadIndexPos] & kPosMask);
    detail.bad_index_value = spec.rels[r].indices[detail.bad_index_pos].item<int64_t>();
    const int64_t src_type = spec.rels[r].src_type;
    detail.bad_index_limit = spec.offsets[src_type + 1] - spec.offsets[src_type];
  }
  if (errors & kBadIndptr) {
    detail.bad_indptr_rel = static_cast<int64_t>(host[kBadIndptrNode] >> kRelShift);
    detail.bad_indptr_node = static_cast<int64_t>(host[kBadIndptrNode] & kPosMask);
  }
  raise_sample_error(errors, detail, errors & kBadSeed ? seed_limit : spec.total_nodes(),
                     !spec.homogeneous());
  return host;  // not reached: errors != 0 raises
}

// One call of the op on the GPU: the CPU op's layers and numbering (sample_fused_cpu.cpp), as
// the kernels above. A layer's edges are laid out relation by relation in one array, so that
// marking, flagging and filling number the sources in the CPU op's order (relations, then
// destinations, then picks). With one node type the next layer is counted before the layer's
// sync, over a bound on its destinations (the homogeneous op's fanouts.size() + 1 syncs); with
// several, the sources are split by type first (sorted by type, stably: destinations, then new
// sources, in order), which costs two more syncs a layer.
// A temporal call samples each seed's subgraph on its own: its destinations are keys (seed
// index << shift | global id), no map entry is written, and each layer is relabelled by sorting
// (disjoint_relabel.h) after a sync that raises the layer's errors: four syncs a layer.
template <typename IdT>
class CudaSampleCall {
 public:
  CudaSampleCall(const TypedSpec& spec, const std::vector<const int64_t*>& ip,
                 const std::vector<const IdT*>& ix, const std::vector<WeightPtrs>& wp,
                 const std::vector<ExcludedPtrs>& ex, bool replace, int64_t seed,
                 int64_t batch_id, bool return_eids, int32_t* map, cudaStream_t stream)
      : spec_(spec), ip_(ip), ix_(ix), wp_(wp), ex_(ex), R_(spec.num_rels()),
        T_(spec.num_types()),
        replace_(replace), seed_(seed), batch_id_(batch_id), return_eids_(return_eids),
        map_(map), stream_(stream),
        long_opts_(spec.seeds[0].options().dtype(at::kLong)),
        int_opts_(spec.seeds[0].options().dtype(at::kInt)),
        bytes_opts_(spec.seeds[0].options().dtype(at::kByte)),
        slots_(kStatusSlots + R_ + T_),
        per_layer_(outputs_per_layer(spec, return_eids)),
        out_(per_layer_ * spec.num_layers),
        ca_(R_), dst_begin_(T_ + 1, 0), disjoint_(spec.temporal()), tp_(R_) {
    if (!disjoint_) return;
    while ((int64_t{1} << shift_) < spec.total_nodes()) ++shift_;  // the CPU op's keys
    node_mask_ = (int64_t{1} << shift_) - 1;
    for (int64_t r = 0; r < R_; ++r) {
      if (!spec.rels[r].times.defined()) continue;
      tp_[r].times = static_cast<const int64_t*>(device_readable_ptr(
          spec.rels[r].times, "edge_times", spec.seeds[0].device()));
      tp_[r].shift = shift_;
      tp_[r].window = spec.time_window;
      tp_[r].strategy = spec.temporal_strategy;
    }
  }

  std::vector<at::Tensor> run() {
    status_tensor_ = at::empty({slots_}, long_opts_);
    status_ = reinterpret_cast<ull*>(status_tensor_.data_ptr<int64_t>());
    init_status_kernel<<<1, 1, 0, stream_>>>(status_, slots_);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    if (T_ > 1) offsets_ = at::tensor(spec_.offsets, at::kLong).to(long_opts_.device());
    check_exclusions();
    map_seeds();
    count_exact(spec_.num_layers - 1);
    std::vector<ull> host = sync();
    for (int64_t layer = spec_.num_layers - 1; layer >= 0; --layer) {
      host = sample_layer(layer, host);
    }
    return std::move(out_);
  }

 private:
  // Checks the excluded edges in GPU memory (add_exclusions checked those on the host).
  void check_exclusions() {
    for (int64_t r = 0; r < R_; ++r) {
      if (ex_[r].count == 0 || !spec_.rels[r].excluded.is_cuda()) continue;
      check_excluded_kernel<<<cuda_blocks(ex_[r].count), kCudaThreads, 0, stream_>>>(
          ex_[r].positions, ex_[r].count, spec_.rels[r].indices.numel(),
          static_cast<ull>(r) << kRelShift, status_);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
  }

  // Checks the seeds type by type into dst_ (type-major). A plain call maps them to 0, 1, ...
  // (global ids in dst_); a temporal call checks only their range (it reads and writes no map
  // entry) and turns them into keys, with their times beside them (one tensor, types in order).
  void map_seeds() {
    for (int64_t t = 0; t < T_; ++t) dst_begin_[t + 1] = dst_begin_[t] + spec_.seeds[t].numel();
    n_ = dst_begin_[T_];
    dst_ = T_ == 1 && !disjoint_ ? spec_.seeds[0] : at::empty({n_}, long_opts_);
    d_ = dst_.data_ptr<int64_t>();
    for (int64_t t = 0; t < T_; ++t) {
      const int64_t n = spec_.seeds[t].numel();
      if (n == 0) continue;
      const int64_t* s = spec_.seeds[t].data_ptr<int64_t>();
      const int64_t offset = spec_.offsets[t], limit = spec_.offsets[t + 1] - offset;
      int64_t* out = dst_.data_ptr<int64_t>() + dst_begin_[t];
      check_seeds_kernel<<<cuda_blocks(n), kCudaThreads, 0, stream_>>>(
          s, n, limit, disjoint_ ? nullptr : map_ + offset, static_cast<ull>(t) << kRelShift,
          status_);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
      if (disjoint_) {
        seed_keys_kernel<<<cuda_blocks(n), kCudaThreads, 0, stream_>>>(s, n, dst_begin_[t],
                                                                        offset, shift_, out);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      } else if (T_ > 1) {
        add_kernel<<<cuda_blocks(n), kCudaThreads, 0, stream_>>>(s, n, offset, out);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      }
    }
    if (disjoint_) {
      seed_time_ = at::cat(spec_.seed_times).contiguous();
      for (TimePtrs& tp : tp_) {
        tp.seed_time = seed_time_.data_ptr<int64_t>();
        tp.num_seeds = seed_time_.numel();
      }
    } else if (n_ > 0) {  // a bad seed (flagged above) may map another type's entry: reset on error
      map_seeds_kernel<<<cuda_blocks(n_), kCudaThreads, 0, stream_>>>(d_, n_, spec_.total_nodes(),
                                                                       map_, status_);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
  }

  // Counts layer `layer` over the destinations d_, whose type t's are exactly
  // [dst_begin_[t], dst_begin_[t + 1]), and queues each relation's edge total for the sync.
  void count_exact(int64_t layer) {
    for (int64_t r = 0; r < R_; ++r) {
      const RelationSpec& rel = spec_.rels[r];
      const int64_t b = dst_begin_[rel.dst_type], n = dst_begin_[rel.dst_type + 1] - b;
      ca_[r] = std::make_unique<CountArrays>(n, long_opts_, tp_[r].times && rel.weighted());
      count_relation(r, layer, d_ + b, n, n, nullptr, *ca_[r]);
    }
  }

  void count_relation(int64_t r, int64_t layer, const int64_t* dst, int64_t upper, int64_t n_base,
                      const int32_t* n_extra, const CountArrays& ca) {
    const RelationSpec& rel = spec_.rels[r];
    launch_count(ip_[r], rel.indptr.numel() - 1, rel.indices.numel(), dst, upper, n_base, n_extra,
                 spec_.fanout(layer, r), replace_, wp_[r], ex_[r], tp_[r], node_mask_,
                 spec_.offsets[rel.dst_type], static_cast<ull>(r) << kRelShift, ca, status_,
                 bytes_opts_, stream_);
    total_kernel<int64_t><<<1, 1, 0, stream_>>>(status_ + kStatusSlots + r, ca.bp + upper);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }

  std::vector<ull> sync() { return sync_status(status_, slots_, stream_, spec_); }

  // Samples and relabels layer `layer` (its edge totals in `host`); returns the status of the
  // sync that ends it, which holds the next layer's edge totals.
  std::vector<ull> sample_layer(int64_t layer, const std::vector<ull>& host) {
    const int64_t n = n_;
    std::vector<int64_t> rel_edges(R_), edge_base(R_ + 1, 0);
    for (int64_t r = 0; r < R_; ++r) {
      rel_edges[r] = static_cast<int64_t>(host[kStatusSlots + r]);
      edge_base[r + 1] = edge_base[r] + rel_edges[r];
    }
    const int64_t edges = edge_base[R_];
    // Local ids are int32 in the map, and markers need edge positions below 2^31 - 2.
    TORCH_CHECK(edges <= std::numeric_limits<int32_t>::max() - 1 - n,
                "a block with 2^31 - 1 or more sources plus edges is not supported");
    const int64_t base = per_layer_ * layer, per_rel = return_eids_ ? 3 : 2;

    at::Tensor all_indices = at::empty({edges}, long_opts_);
    // sampled | flag | rank, or a temporal call's keys
    at::Tensor edge_scratch = disjoint_ ? at::Tensor() : at::empty({3 * edges + 1}, int_opts_);
    at::Tensor edge_keys = disjoint_ ? at::empty({edges}, long_opts_) : at::Tensor();
    at::Tensor src_buffer = disjoint_ ? at::Tensor() : at::empty({n + edges}, long_opts_);
    int64_t* bi = all_indices.data_ptr<int64_t>();
    int32_t* sampled = disjoint_ ? nullptr : edge_scratch.data_ptr<int32_t>();
    int32_t* flag = disjoint_ ? nullptr : sampled + edges;
    int32_t* rank = disjoint_ ? nullptr : flag + edges;
    int64_t* src = disjoint_ ? nullptr : src_buffer.data_ptr<int64_t>();
    if (n > 0 && !disjoint_) {
      C10_CUDA_CHECK(
          cudaMemcpyAsync(src, d_, n * sizeof(int64_t), cudaMemcpyDeviceToDevice, stream_));
    }
    const uint64_t layer_stream = layer_key(static_cast<uint64_t>(seed_),
                                            static_cast<uint64_t>(batch_id_),
                                            static_cast<uint64_t>(layer));
    for (int64_t r = 0; r < R_; ++r) {
      const RelationSpec& rel = spec_.rels[r];
      const int64_t b = dst_begin_[rel.dst_type], nd = dst_begin_[rel.dst_type + 1] - b;
      at::Tensor block_indptr = at::empty({nd + 1}, long_opts_);
      C10_CUDA_CHECK(cudaMemcpyAsync(block_indptr.data_ptr<int64_t>(), ca_[r]->bp,
                                     (nd + 1) * sizeof(int64_t), cudaMemcpyDeviceToDevice,
                                     stream_));
      out_[base + per_rel * r] = block_indptr;
      const int64_t e = rel_edges[r];
      if (e == 0) continue;
      // The block's indices hold the picked positions until fill_kernel overwrites them.
      int64_t* pos = bi + edge_base[r];
      launch_positions<IdT>(d_ + b, nd, *ca_[r], e, spec_.fanout(layer, r), replace_, wp_[r],
                            ex_[r], tp_[r].times && spec_.temporal_strategy == kTemporalLast,
                            relation_key(layer_stream, static_cast<uint64_t>(r)), pos,
                            long_opts_, stream_);
      if (return_eids_) {
        at::Tensor eids = at::empty({e}, long_opts_);
        C10_CUDA_CHECK(cudaMemcpyAsync(eids.data_ptr<int64_t>(), pos, e * sizeof(int64_t),
                                       cudaMemcpyDeviceToDevice, stream_));
        out_[base + per_rel * r + 2] = eids;
      }
      const int64_t src_offset = spec_.offsets[rel.src_type];
      if (disjoint_) {
        lookup_keys_kernel<IdT><<<cuda_blocks(e), kCudaThreads, 0, stream_>>>(
            ix_[r], spec_.offsets[rel.src_type + 1] - src_offset, src_offset,
            static_cast<ull>(r) << kRelShift, pos, e, d_ + b, ca_[r]->bp, nd, node_mask_,
            edge_keys.data_ptr<int64_t>() + edge_base[r], status_);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
        continue;
      }
      lookup_kernel<IdT><<<cuda_blocks(e), kCudaThreads, 0, stream_>>>(
          ix_[r], spec_.offsets[rel.src_type + 1] - src_offset, src_offset,
          static_cast<ull>(r) << kRelShift, pos, e, d_, n, map_, sampled + edge_base[r],
          status_);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    if (return_eids_) {
      for (int64_t r = 0; r < R_; ++r) {
        if (rel_edges[r] == 0) out_[base + per_rel * r + 2] = at::empty({0}, long_opts_);
      }
    }
    if (disjoint_) return finish_disjoint(layer, edge_keys, edge_base);
    if (edges > 0) {
      mark_kernel<<<cuda_blocks(edges), kCudaThreads, 0, stream_>>>(sampled, edges, map_);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
      first_use_kernel<<<cuda_blocks(edges), kCudaThreads, 0, stream_>>>(sampled, edges, map_,
                                                                         flag);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    exclusive_offsets<int32_t>(flag, rank, edges, bytes_opts_, stream_);
    if (edges > 0) {
      fill_kernel<<<cuda_blocks(edges), kCudaThreads, 0, stream_>>>(sampled, edges, map_, rank, n,
                                                                    bi, src, status_);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    total_kernel<int32_t><<<1, 1, 0, stream_>>>(status_ + kNumNew, rank + edges);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    if (T_ == 1) return finish_one_type(layer, all_indices, edge_base, src, rank + edges);
    return finish_typed(layer, all_indices, edge_base, src);
  }

  // A temporal call's layer: a sync raises what sampling found, then the sort relabels the
  // layer's keys (two syncs), the outputs are written (per type its node ids, then its
  // sources' seed indices) and the next layer is counted, and a sync reads its edge totals.
  std::vector<ull> finish_disjoint(int64_t layer, const at::Tensor& edge_keys,
                                   const std::vector<int64_t>& edge_base) {
    const int64_t base = per_layer_ * layer, per_rel = return_eids_ ? 3 : 2;
    sync();
    DisjointRelabel relabelled =
        disjoint_relabel(dst_, dst_begin_, edge_keys, spec_.offsets, node_mask_);
    for (int64_t r = 0; r < R_; ++r) {
      const int64_t e = edge_base[r + 1] - edge_base[r];
      out_[base + per_rel * r + 1] =
          R_ == 1 ? relabelled.ids : relabelled.ids.narrow(0, edge_base[r], e).clone();
    }
    const int64_t types_base = base + per_rel * R_;
    for (int64_t t = 0; t < T_; ++t) {
      const at::Tensor& keys = relabelled.sources[t];
      out_[types_base + t] = keys.bitwise_and(node_mask_).sub_(spec_.offsets[t]);
      out_[types_base + T_ + t] = keys.bitwise_right_shift(shift_);
      dst_begin_[t + 1] = dst_begin_[t] + keys.numel();
    }
    dst_ = at::cat(relabelled.sources);
    d_ = dst_.data_ptr<int64_t>();
    n_ = dst_begin_[T_];
    if (layer > 0) count_exact(layer - 1);
    return sync();
  }

  // One node type: the next layer is counted over the bound n + edges on its destinations
  // (counts past the real end are zero) before the sync; the last layer clears the map first.
  std::vector<ull> finish_one_type(int64_t layer, const at::Tensor& all_indices,
                                   const std::vector<int64_t>& edge_base, int64_t* src,
                                   const int32_t* num_new) {
    const int64_t n = n_, edges = edge_base[R_];
    const int64_t base = per_layer_ * layer, per_rel = return_eids_ ? 3 : 2;
    std::vector<std::unique_ptr<CountArrays>> next(R_);
    if (layer > 0) {
      for (int64_t r = 0; r < R_; ++r) {
        next[r] = std::make_unique<CountArrays>(n + edges, long_opts_);
        count_relation(r, layer - 1, src, n + edges, n, num_new, *next[r]);
      }
    } else if (n + edges > 0) {
      unmap_kernel<<<cuda_blocks(n + edges), kCudaThreads, 0, stream_>>>(src, n + edges, n,
                                                                          num_new, map_);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    std::vector<ull> host = sync();
    const int64_t num_src = n + static_cast<int64_t>(host[kNumNew]);
    at::Tensor src_nodes = at::empty({num_src}, long_opts_);
    if (num_src > 0) {  // src_buffer's block stays this stream's until the copy has run
      C10_CUDA_CHECK(cudaMemcpyAsync(src_nodes.data_ptr<int64_t>(), src, num_src * sizeof(int64_t),
                                     cudaMemcpyDeviceToDevice, stream_));
    }
    for (int64_t r = 0; r < R_; ++r) {
      const int64_t e = edge_base[r + 1] - edge_base[r];
      out_[base + per_rel * r + 1] =
          R_ == 1 ? all_indices : all_indices.narrow(0, edge_base[r], e).clone();
    }
    out_[base + per_rel * R_] = src_nodes;
    dst_ = src_nodes;
    d_ = dst_.data_ptr<int64_t>();
    n_ = num_src;
    dst_begin_[1] = num_src;
    for (int64_t r = 0; r < R_; ++r) ca_[r] = std::move(next[r]);
    return host;
  }

  // Several node types: sync for the source count, sort the sources by type (stably), renumber
  // the map and the blocks, sync for the types' counts, write the outputs and count the next
  // layer (or clear the map), and sync for its edge totals.
  std::vector<ull> finish_typed(int64_t layer, const at::Tensor& all_indices,
                                const std::vector<int64_t>& edge_base, int64_t* src) {
    const int64_t n = n_;
    const int64_t base = per_layer_ * layer, per_rel = return_eids_ ? 3 : 2;
    std::vector<ull> host = sync();
    const int64_t num_src = n + static_cast<int64_t>(host[kNumNew]);
    ull* type_counts = status_ + kStatusSlots + R_;
    C10_CUDA_CHECK(cudaMemsetAsync(type_counts, 0, T_ * sizeof(ull), stream_));
    // type | order | sorted type | sorted order | perm
    at::Tensor scratch = at::empty({5 * num_src + 1}, int_opts_);
    int32_t* type = scratch.data_ptr<int32_t>();
    int32_t* order = type + num_src;
    int32_t* sorted_type = order + num_src;
    int32_t* sorted_order = sorted_type + num_src;
    int32_t* perm = sorted_order + num_src;
    at::Tensor reordered = at::empty({num_src}, long_opts_);
    int64_t* re = reordered.data_ptr<int64_t>();
    if (num_src > 0) {
      type_kernel<<<cuda_blocks(num_src), kCudaThreads, 0, stream_>>>(
          src, num_src, offsets_.data_ptr<int64_t>(), T_, type, order, type_counts);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
      int end_bit = 1;
      while ((int64_t{1} << end_bit) < T_) ++end_bit;
      size_t temp_bytes = 0;
      C10_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, type, sorted_type, order,
                                                     sorted_order, static_cast<int>(num_src), 0,
                                                     end_bit, stream_));
      at::Tensor temp = at::empty({static_cast<int64_t>(temp_bytes)}, bytes_opts_);
      C10_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.data_ptr(), temp_bytes, type,
                                                     sorted_type, order, sorted_order,
                                                     static_cast<int>(num_src), 0, end_bit,
                                                     stream_));
      reorder_kernel<<<cuda_blocks(num_src), kCudaThreads, 0, stream_>>>(src, sorted_order,
                                                                         num_src, re, perm, map_);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    host = sync();
    std::vector<int64_t> type_base(T_ + 1, 0);
    for (int64_t t = 0; t < T_; ++t) {
      type_base[t + 1] = type_base[t] + static_cast<int64_t>(host[kStatusSlots + R_ + t]);
    }
    for (int64_t r = 0; r < R_; ++r) {
      const int64_t e = edge_base[r + 1] - edge_base[r];
      at::Tensor block_indices = at::empty({e}, long_opts_);
      if (e > 0) {
        renumber_kernel<<<cuda_blocks(e), kCudaThreads, 0, stream_>>>(
            all_indices.data_ptr<int64_t>() + edge_base[r], e, perm,
            type_base[spec_.rels[r].src_type], block_indices.data_ptr<int64_t>());
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      }
      out_[base + per_rel * r + 1] = block_indices;
    }
    for (int64_t t = 0; t < T_; ++t) {
      const int64_t count = type_base[t + 1] - type_base[t];
      at::Tensor src_nodes = at::empty({count}, long_opts_);
      if (count > 0) {
        add_kernel<<<cuda_blocks(count), kCudaThreads, 0, stream_>>>(
            re + type_base[t], count, -spec_.offsets[t], src_nodes.data_ptr<int64_t>());
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      }
      out_[base + per_rel * R_ + t] = src_nodes;
    }
    dst_ = reordered;
    d_ = re;
    n_ = num_src;
    dst_begin_ = type_base;
    if (layer > 0) {
      count_exact(layer - 1);
    } else if (num_src > 0) {
      unmap_kernel<<<cuda_blocks(num_src), kCudaThreads, 0, stream_>>>(re, num_src, num_src,
                                                                        nullptr, map_);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    return sync();
  }

  const TypedSpec& spec_;
  const std::vector<const int64_t*>& ip_;
  const std::vector<const IdT*>& ix_;
  const std::vector<WeightPtrs>& wp_;
  const std::vector<ExcludedPtrs>& ex_;
  const int64_t R_, T_;
  const bool replace_;
  const int64_t seed_, batch_id_;
  const bool return_eids_;
  int32_t* const map_;
  const cudaStream_t stream_;
  const at::TensorOptions long_opts_, int_opts_, bytes_opts_;
  const int64_t slots_, per_layer_;
  std::vector<at::Tensor> out_;
  at::Tensor status_tensor_, offsets_;  // offsets_: the types' global id offsets, on the device
  ull* status_ = nullptr;
  // The layer being sampled: its destinations d_[0..n_) (global ids, type t's from
  // dst_begin_[t]), each relation's counts over its destinations.
  at::Tensor dst_;
  const int64_t* d_ = nullptr;
  int64_t n_ = 0;
  std::vector<std::unique_ptr<CountArrays>> ca_;
  std::vector<int64_t> dst_begin_;
  // A temporal call: keys for ids, no map; per relation its time arguments (times null where
  // untimed), and the seeds' times they point into.
  const bool disjoint_;
  int shift_ = 0;
  int64_t node_mask_ = -1;  // all ones unless disjoint_: a key's global id is key & node_mask_
  std::vector<TimePtrs> tp_;
  at::Tensor seed_time_;
};

std::vector<at::Tensor> run_cuda_call(const TypedSpec& spec, bool replace, int64_t seed,
                                      int64_t batch_id, bool return_eids, at::Tensor& node_map) {
  const at::Device device = node_map.device();
  TORCH_CHECK(node_map.is_cuda(), "node_map must be a CUDA tensor when the op runs on the GPU");
  for (const at::Tensor& s : spec.seeds) {
    TORCH_CHECK(s.device() == device, "seeds are on ", s.device(), " but node_map is on ", device);
  }
  const c10::cuda::CUDAGuard device_guard(device);
  // GPU memory on the map's device, or pinned host memory read over UVA.
  std::vector<const int64_t*> ip;
  std::vector<const void*> ix;
  std::vector<WeightPtrs> wp(spec.rels.size());
  std::vector<ExcludedPtrs> ex(spec.rels.size());
  for (size_t r = 0; r < spec.rels.size(); ++r) {
    const RelationSpec& rel = spec.rels[r];
    if (rel.excluded.defined()) {  // on its indices' device (add_exclusions): GPU or pinned
      ex[r].positions = static_cast<const int64_t*>(
          device_readable_ptr(rel.excluded, "excluded_edges", device));
      ex[r].count = rel.excluded.numel();
      at::assert_no_overlap(node_map, rel.excluded);
    }
    if (!rel.weighted()) continue;
    // A relation without edges (or destinations) has null pointers here, never read.
    wp[r].weights =
        static_cast<const float*>(device_readable_ptr(rel.weights, "edge_weights", device));
    wp[r].table =
        static_cast<const int64_t*>(device_readable_ptr(rel.table, "alias_tables", device));
    wp[r].nonzero =
        static_cast<const int64_t*>(device_readable_ptr(rel.nonzero, "positive_counts", device));
    at::assert_no_overlap(node_map, rel.weights);
    at::assert_no_overlap(node_map, rel.table);
    at::assert_no_overlap(node_map, rel.nonzero);
  }
  for (const RelationSpec& rel : spec.rels) {
    TORCH_CHECK(rel.indptr.device() == rel.indices.device(), "indptr is on ", rel.indptr.device(),
                " but indices is on ", rel.indices.device());
    ip.push_back(static_cast<const int64_t*>(device_readable_ptr(rel.indptr, "indptr", device)));
    ix.push_back(device_readable_ptr(rel.indices, "indices", device));
    // The op writes node_map: it may not share memory with an input.
    at::assert_no_overlap(node_map, rel.indptr);
    at::assert_no_overlap(node_map, rel.indices);
  }
  for (const at::Tensor& s : spec.seeds) at::assert_no_overlap(node_map, s);
  for (const at::Tensor& s : spec.seed_times) at::assert_no_overlap(node_map, s);
  for (const RelationSpec& rel : spec.rels) {
    if (rel.times.defined()) at::assert_no_overlap(node_map, rel.times);
  }
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(device.index());
  int32_t* map = node_map.data_ptr<int32_t>();
  try {
    if (spec.rels[0].indices.scalar_type() == at::kInt) {
      std::vector<const int32_t*> ix32;
      for (const void* p : ix) ix32.push_back(static_cast<const int32_t*>(p));
      return CudaSampleCall<int32_t>(spec, ip, ix32, wp, ex, replace, seed, batch_id, return_eids,
                                     map, stream)
          .run();
    }
    std::vector<const int64_t*> ix64;
    for (const void* p : ix) ix64.push_back(static_cast<const int64_t*>(p));
    return CudaSampleCall<int64_t>(spec, ip, ix64, wp, ex, replace, seed, batch_id, return_eids,
                                   map, stream)
        .run();
  } catch (...) {
    // Reset the whole map (an error leaves markers and ids behind) and wait for it, so nothing
    // is queued on node_map when the error reaches the caller. A failure here is secondary to
    // the error being raised.
    try {
      if (node_map.numel() > 0) {
        C10_CUDA_CHECK(cudaMemsetAsync(map, 0xFF, node_map.numel() * sizeof(int32_t), stream));
      }
      c10::cuda::stream_synchronize(stream);
    } catch (...) {
    }
    throw;
  }
}

std::vector<at::Tensor> sample_fused_cuda(const at::Tensor& indptr, const at::Tensor& indices,
                                          const at::Tensor& seeds, at::IntArrayRef fanouts,
                                          bool replace, int64_t seed, int64_t batch_id,
                                          at::Tensor node_map) {
  check_sample_arg_values(indptr, indices, seeds, fanouts, node_map);
  TORCH_CHECK(seeds.is_cuda(), "seeds must be a CUDA tensor when the op runs on the GPU, got ",
              seeds.device());
  TORCH_CHECK(node_map.device() == seeds.device(), "node_map is on ", node_map.device(),
              " but seeds are on ", seeds.device());
  const std::vector<int64_t> num_nodes{indptr.numel() - 1}, zero{0};
  const TypedSpec spec = make_typed_spec({indptr}, {indices}, zero, zero, num_nodes, {seeds},
                                         fanouts, node_map, 1);
  return run_cuda_call(spec, replace, seed, batch_id, false, node_map);
}

std::vector<at::Tensor> sample_fused_typed_cuda(at::TensorList indptrs, at::TensorList indices,
                                                at::IntArrayRef src_types,
                                                at::IntArrayRef dst_types,
                                                at::IntArrayRef num_nodes, at::TensorList seeds,
                                                at::IntArrayRef fanouts, bool replace,
                                                int64_t seed, int64_t batch_id, bool return_eids,
                                                const OptionalTensors& edge_weights,
                                                const OptionalTensors& alias_tables,
                                                const OptionalTensors& positive_counts,
                                                const OptionalTensors& edge_times,
                                                at::TensorList seed_times, int64_t time_window,
                                                int64_t temporal_strategy,
                                                const OptionalTensors& excluded_edges,
                                                at::Tensor node_map) {
  const TemporalArgs temporal{edge_times, seed_times.vec(), time_window, temporal_strategy};
  TORCH_CHECK(!(replace && temporal_strategy == kTemporalLast && !seed_times.empty()),
              "temporal_strategy 'last' picks without replacement: replace must be false");
  const TypedSpec spec =
      make_typed_spec(indptrs, indices, src_types, dst_types, num_nodes, seeds, fanouts, node_map,
                      0, edge_weights, alias_tables, positive_counts, temporal, excluded_edges);
  return run_cuda_call(spec, replace, seed, batch_id, return_eids, node_map);
}

}  // namespace

TORCH_LIBRARY_IMPL(gnnrepro, CUDA, m) {
  m.impl("sample_fused", &sample_fused_cuda);
  m.impl("sample_fused_typed", &sample_fused_typed_cuda);
}

}  // namespace gnnrepro
