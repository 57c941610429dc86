// Fused neighbour sampling + to_block on the GPU: the CUDA kernel of gnnrepro::sample_fused.
//
// Same schema, same per-destination rules (common/rng.h, picks.h, relabel.h: the functions the
// CPU op calls) and same error order (sample_errors.h) as the CPU op, so both give bit-identical
// blocks and the same error for the same input. The graph (indptr, indices) is either in GPU
// memory or in pinned host memory that the kernels read over UVA; seeds, node_map and the
// outputs are on the GPU. Scratch comes from torch's caching allocator per call (stream-ordered,
// no cudaMalloc in steady state, never shared between streams).
//
// Per layer, outward from the seeds (all kernels on the current stream):
//   count     destination i: start/degree from indptr, pick count -> scan -> block indptr (bp)
//   positions the picked positions into `indices`: one thread per edge for destinations that
//             take their whole list or sample with replacement (work split by edges, so a hub's
//             list spreads over the grid), a tile of G lanes per destination for Floyd; above G
//             picks the tile checks earlier rounds in a per-destination hash set (O(1) a pick)
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

#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "../common/cuda_utils.h"
#include "../common/picks.h"
#include "../common/relabel.h"
#include "../common/rng.h"
#include "sample_args.h"
#include "sample_errors.h"

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
  kNumNew,     // new source nodes of the layer just relabelled
  kNextEdges,  // edges of the next layer (or of the first, before the loop)
  kStatusSlots
};

__device__ __forceinline__ void flag_error(ull* status, ull bit, StatusSlot slot, ull detail) {
  atomicOr(&status[kErrors], bit);
  if (slot != kErrors) atomicMin(&status[slot], detail);
}

__global__ void init_status_kernel(ull* status) {
  status[kErrors] = 0;
  for (int s = kBadSeedPos; s <= kBadIndexPos; ++s) status[s] = kNone;
  status[kNumNew] = 0;
  status[kNextEdges] = 0;
}

// Seeds outside [0, N) and seeds whose map entry is not -1, before any entry is written (so
// what is read is the caller's map).
__global__ void check_seeds_kernel(const int64_t* __restrict__ seeds, int64_t n,
                                   int64_t num_nodes, const int32_t* __restrict__ map,
                                   ull* status) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t v = seeds[i];
    if (v < 0 || v >= num_nodes) {
      flag_error(status, kBadSeed, kBadSeedPos, static_cast<ull>(i));
    } else if (map[v] != kUnmapped) {
      flag_error(status, kDirtySeedMap, kErrors, 0);
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

// Start, degree and pick count of destinations 0..upper-1 (the first n_base + *n_extra are real;
// the rest get count 0, so a scan over `upper` gives the real total at its end). Counts are
// clamped to int32 max so the int64 scan cannot overflow; any real total that large fails the
// block size check anyway.
__global__ void count_kernel(const int64_t* __restrict__ indptr, int64_t num_nodes,
                             int64_t num_edges, const int64_t* __restrict__ dst, int64_t upper,
                             int64_t n_base, const int32_t* __restrict__ n_extra, int64_t fanout,
                             bool replace, int64_t* __restrict__ start,
                             int64_t* __restrict__ degree, int64_t* __restrict__ count,
                             ull* status) {
  const int64_t n = n_base + (n_extra ? *n_extra : 0);
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < upper;
       i += int64_t{gridDim.x} * blockDim.x) {
    int64_t lo = 0, deg = 0, c = 0;
    const int64_t v = i < n ? dst[i] : -1;
    if (v >= 0 && v < num_nodes) {  // seeds outside [0, N) are flagged by check_seeds_kernel
      const int64_t a = indptr[v], b = indptr[v + 1];
      if (0 <= a && a <= b && b <= num_edges) {
        lo = a;
        deg = b - a;
        c = std::min<int64_t>(pick_count(deg, fanout, replace),
                              std::numeric_limits<int32_t>::max());
      } else {
        flag_error(status, kBadIndptr, kBadIndptrNode, static_cast<ull>(v));
      }
    }
    start[i] = lo;
    degree[i] = deg;
    count[i] = c;
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
__global__ void edge_positions_kernel(const int64_t* __restrict__ dst, int64_t n,
                                      const int64_t* __restrict__ bp,
                                      const int64_t* __restrict__ start,
                                      const int64_t* __restrict__ degree, int64_t num_edges,
                                      int64_t fanout, bool replace, uint64_t seed,
                                      uint64_t batch_id, uint64_t layer,
                                      int64_t* __restrict__ pos) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < num_edges;
       e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t i = owner_of(bp, n, e);
    const int64_t k = e - bp[i], count = bp[i + 1] - bp[i], deg = degree[i];
    if (takes_all(deg, count, fanout, replace)) {
      pos[e] = start[i] + k;
    } else if (replace) {
      const uint64_t key = node_key(seed, batch_id, layer, static_cast<uint64_t>(dst[i]));
      pos[e] = start[i] + replace_offset(key, k, deg);
    }
  }
}

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
template <int G>
__global__ void __launch_bounds__(kCudaThreads)
floyd_kernel(const int64_t* __restrict__ dst, int64_t n, const int64_t* __restrict__ bp,
             const int64_t* __restrict__ start, const int64_t* __restrict__ degree,
             int64_t fanout, uint64_t seed, uint64_t batch_id, uint64_t layer,
             int64_t* __restrict__ pos, ull* __restrict__ hash) {
  const auto tile = cg::tiled_partition<G>(cg::this_thread_block());
  const int lane = static_cast<int>(tile.thread_rank());
  const int64_t tiles = int64_t{gridDim.x} * blockDim.x / G;
  for (int64_t i = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) / G; i < n; i += tiles) {
    const int64_t out = bp[i], count = bp[i + 1] - out, deg = degree[i];
    if (count == 0 || takes_all(deg, count, fanout, false)) continue;
    const uint64_t key = node_key(seed, batch_id, layer, static_cast<uint64_t>(dst[i]));
    ull* set = hash + 2 * out;
    const int64_t cap = 2 * count;
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
        pos[out + step] = start[i] + t;
        if (count > G) hash_insert(set, cap, t);
      }
      tile.sync();  // the next round looks these picks up
    }
  }
}

// Neighbour ids of the picked positions. An id outside [0, N) is flagged (the smallest
// position) and its edge gets sampled = -1, which later kernels skip; so is a map entry the op
// cannot have written (relabel.h: before marking, an entry is -1 or a destination's id).
template <typename IdT>
__global__ void lookup_kernel(const IdT* __restrict__ indices, int64_t num_nodes,
                              const int64_t* __restrict__ pos, int64_t num_edges,
                              const int64_t* __restrict__ dst, int64_t n,
                              const int32_t* __restrict__ map, int32_t* __restrict__ sampled,
                              ull* status) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < num_edges;
       e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t p = pos[e];
    const auto u = static_cast<int64_t>(indices[p]);
    int32_t id = -1;
    if (u < 0 || u >= num_nodes) {
      flag_error(status, kBadIndex, kBadIndexPos, static_cast<ull>(p));
    } else {
      id = static_cast<int32_t>(u);
      if (!map_entry_ok(map[u], u, n, dst)) flag_error(status, kDirtyMap, kErrors, 0);
    }
    sampled[e] = id;
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

// Copies the totals the host reads at the next sync into the status block.
__global__ void totals_kernel(ull* status, const int32_t* num_new, const int64_t* next_edges) {
  status[kNumNew] = num_new ? static_cast<ull>(*num_new) : 0;
  status[kNextEdges] = next_edges ? static_cast<ull>(*next_edges) : 0;
}

// Clears the map entries of nodes[0 .. n_base + *n_extra), n_base + *n_extra <= upper.
__global__ void unmap_kernel(const int64_t* __restrict__ nodes, int64_t upper, int64_t n_base,
                             const int32_t* __restrict__ n_extra, int32_t* map) {
  const int64_t n = n_base + *n_extra;
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

// One layer's count arrays over `upper` destinations: start | degree | count | bp (upper + 1).
struct CountArrays {
  at::Tensor storage;
  int64_t* start;
  int64_t* degree;
  int64_t* count;
  int64_t* bp;
  CountArrays(int64_t upper, const at::TensorOptions& long_opts)
      : storage(at::empty({4 * upper + 1}, long_opts)) {
    start = storage.data_ptr<int64_t>();
    degree = start + upper;
    count = degree + upper;
    bp = count + upper;
  }
};

void launch_count(const int64_t* indptr, int64_t num_nodes, int64_t num_edges, const int64_t* dst,
                  int64_t upper, int64_t n_base, const int32_t* n_extra, int64_t fanout,
                  bool replace, const CountArrays& ca, ull* status,
                  const at::TensorOptions& bytes_opts, cudaStream_t stream) {
  if (upper > 0) {
    count_kernel<<<cuda_blocks(upper), kCudaThreads, 0, stream>>>(
        indptr, num_nodes, num_edges, dst, upper, n_base, n_extra, fanout, replace, ca.start,
        ca.degree, ca.count, status);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  exclusive_offsets<int64_t>(ca.count, ca.bp, upper, bytes_opts, stream);
}

// Picked positions of every edge of the layer into pos[0..edges).
void launch_positions(const int64_t* dst, int64_t n, const CountArrays& ca, int64_t edges,
                      int64_t fanout, bool replace, int64_t seed, int64_t batch_id, int64_t layer,
                      int64_t* pos, const at::TensorOptions& long_opts, cudaStream_t stream) {
  const auto s = static_cast<uint64_t>(seed), b = static_cast<uint64_t>(batch_id),
             l = static_cast<uint64_t>(layer);
  edge_positions_kernel<<<cuda_blocks(edges), kCudaThreads, 0, stream>>>(
      dst, n, ca.bp, ca.start, ca.degree, edges, fanout, replace, s, b, l, pos);
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
        dst, n, ca.bp, ca.start, ca.degree, fanout, s, b, l, pos, hash_ptr);
  } else if (fanout <= 16) {
    floyd_kernel<16><<<cuda_blocks(n * 16), kCudaThreads, 0, stream>>>(
        dst, n, ca.bp, ca.start, ca.degree, fanout, s, b, l, pos, hash_ptr);
  } else {
    floyd_kernel<kMaxTile><<<cuda_blocks(n * kMaxTile), kCudaThreads, 0, stream>>>(
        dst, n, ca.bp, ca.start, ca.degree, fanout, s, b, l, pos, hash_ptr);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// Reads the status block back (a counted host sync) and raises the first error it holds, in
// sample_errors.h's order, after resetting node_map (the caller's catch).
std::vector<ull> sync_status(const ull* status, cudaStream_t stream, const at::Tensor& seeds,
                             const at::Tensor& indices, int64_t num_nodes) {
  std::vector<ull> host(kStatusSlots);
  c10::cuda::memcpy_and_sync(host.data(), status, kStatusSlots * sizeof(ull),
                             cudaMemcpyDeviceToHost, stream);
  const ull errors = host[kErrors];
  if (errors == 0) return host;
  // Error path only: a few more syncs to name the culprit the way the CPU op does.
  SampleErrorDetail detail;
  if (errors & kBadSeed) {
    detail.bad_seed_pos = static_cast<int64_t>(host[kBadSeedPos]);
    detail.bad_seed_value = seeds[detail.bad_seed_pos].item<int64_t>();
  }
  if (errors & kDuplicateSeed) detail.duplicate_node = static_cast<int64_t>(host[kDuplicateNode]);
  if (errors & kBadIndex) {
    detail.bad_index_pos = static_cast<int64_t>(host[kBadIndexPos]);
    detail.bad_index_value = indices[detail.bad_index_pos].item<int64_t>();
  }
  if (errors & kBadIndptr) detail.bad_indptr_node = static_cast<int64_t>(host[kBadIndptrNode]);
  raise_sample_error(errors, detail, num_nodes);
  return host;  // not reached: errors != 0 raises
}

template <typename IdT>
std::vector<at::Tensor> sample_fused_cuda_typed(const int64_t* ip, const IdT* ix,
                                                const at::Tensor& indptr, const at::Tensor& indices,
                                                const at::Tensor& seeds, at::IntArrayRef fanouts,
                                                bool replace, int64_t seed, int64_t batch_id,
                                                int32_t* map, cudaStream_t stream) {
  const int64_t num_nodes = indptr.numel() - 1;
  const int64_t num_edges = indices.numel();
  const int64_t num_layers = static_cast<int64_t>(fanouts.size());
  const auto long_opts = seeds.options().dtype(at::kLong);
  const auto int_opts = seeds.options().dtype(at::kInt);
  const auto bytes_opts = seeds.options().dtype(at::kByte);
  std::vector<at::Tensor> out(3 * num_layers);

  at::Tensor status_tensor = at::empty({kStatusSlots}, long_opts);
  auto* status = reinterpret_cast<ull*>(status_tensor.data_ptr<int64_t>());
  // Before the first layer: check and map the seeds, count and scan the first layer's picks.
  int64_t n = seeds.numel();
  const int64_t* d = seeds.data_ptr<int64_t>();  // this layer's destinations
  auto ca = std::make_unique<CountArrays>(n, long_opts);
  init_status_kernel<<<1, 1, 0, stream>>>(status);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  if (n > 0) {
    check_seeds_kernel<<<cuda_blocks(n), kCudaThreads, 0, stream>>>(d, n, num_nodes, map, status);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    map_seeds_kernel<<<cuda_blocks(n), kCudaThreads, 0, stream>>>(d, n, num_nodes, map, status);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  launch_count(ip, num_nodes, num_edges, d, n, n, nullptr, fanouts[num_layers - 1], replace, *ca,
               status, bytes_opts, stream);
  totals_kernel<<<1, 1, 0, stream>>>(status, nullptr, ca->bp + n);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  int64_t edges =
      static_cast<int64_t>(sync_status(status, stream, seeds, indices, num_nodes)[kNextEdges]);

  for (int64_t layer = num_layers - 1; layer >= 0; --layer) {
    const int64_t fanout = fanouts[layer];
    // Local ids are int32 in the map, and markers need edge positions below 2^31 - 2.
    TORCH_CHECK(edges <= std::numeric_limits<int32_t>::max() - 1 - n,
                "a block with 2^31 - 1 or more sources plus edges is not supported");
    const bool last = layer == 0;
    const int64_t next_upper = last ? 0 : n + edges;  // bound on the next layer's destinations

    at::Tensor block_indptr = at::empty({n + 1}, long_opts);
    at::Tensor block_indices = at::empty({edges}, long_opts);
    at::Tensor edge_scratch = at::empty({3 * edges + 1}, int_opts);  // sampled | flag | rank
    at::Tensor src_buffer = at::empty({n + edges}, long_opts);
    int64_t* bp = block_indptr.data_ptr<int64_t>();
    int64_t* bi = block_indices.data_ptr<int64_t>();
    int32_t* sampled = edge_scratch.data_ptr<int32_t>();
    int32_t* flag = sampled + edges;
    int32_t* rank = flag + edges;
    int64_t* src = src_buffer.data_ptr<int64_t>();

    C10_CUDA_CHECK(cudaMemcpyAsync(bp, ca->bp, (n + 1) * sizeof(int64_t), cudaMemcpyDeviceToDevice,
                                   stream));
    if (n > 0) {
      C10_CUDA_CHECK(
          cudaMemcpyAsync(src, d, n * sizeof(int64_t), cudaMemcpyDeviceToDevice, stream));
    }
    if (edges > 0) {
      // The block's indices hold the picked positions until fill_kernel overwrites them.
      launch_positions(d, n, *ca, edges, fanout, replace, seed, batch_id, layer, bi, long_opts,
                       stream);
      lookup_kernel<IdT><<<cuda_blocks(edges), kCudaThreads, 0, stream>>>(
          ix, num_nodes, bi, edges, d, n, map, sampled, status);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
      mark_kernel<<<cuda_blocks(edges), kCudaThreads, 0, stream>>>(sampled, edges, map);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
      first_use_kernel<<<cuda_blocks(edges), kCudaThreads, 0, stream>>>(sampled, edges, map, flag);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    exclusive_offsets<int32_t>(flag, rank, edges, bytes_opts, stream);
    if (edges > 0) {
      fill_kernel<<<cuda_blocks(edges), kCudaThreads, 0, stream>>>(sampled, edges, map, rank, n,
                                                                   bi, src, status);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    // The next layer's counts over its destinations src[0..n + rank[edges]), bounded by n + edges;
    // after the last layer, the map is cleared over the input nodes (every node it holds: each
    // layer's sources include its destinations) before the last sync.
    auto next = std::make_unique<CountArrays>(next_upper, long_opts);
    if (!last) {
      launch_count(ip, num_nodes, num_edges, src, next_upper, n, rank + edges, fanouts[layer - 1],
                   replace, *next, status, bytes_opts, stream);
    } else if (n + edges > 0) {
      unmap_kernel<<<cuda_blocks(n + edges), kCudaThreads, 0, stream>>>(src, n + edges, n,
                                                                        rank + edges, map);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    totals_kernel<<<1, 1, 0, stream>>>(status, rank + edges,
                                       last ? nullptr : next->bp + next_upper);
    C10_CUDA_KERNEL_LAUNCH_CHECK();

    const std::vector<ull> host = sync_status(status, stream, seeds, indices, num_nodes);
    const int64_t num_src = n + static_cast<int64_t>(host[kNumNew]);
    at::Tensor src_nodes = at::empty({num_src}, long_opts);
    if (num_src > 0) {  // src_buffer's block stays this stream's until the copy has run
      C10_CUDA_CHECK(cudaMemcpyAsync(src_nodes.data_ptr<int64_t>(), src,
                                     num_src * sizeof(int64_t), cudaMemcpyDeviceToDevice, stream));
    }
    out[3 * layer] = block_indptr;
    out[3 * layer + 1] = block_indices;
    out[3 * layer + 2] = src_nodes;
    d = src_nodes.data_ptr<int64_t>();
    n = num_src;
    ca = std::move(next);
    edges = static_cast<int64_t>(host[kNextEdges]);
  }
  return out;
}

std::vector<at::Tensor> sample_fused_cuda(const at::Tensor& indptr, const at::Tensor& indices,
                                          const at::Tensor& seeds, at::IntArrayRef fanouts,
                                          bool replace, int64_t seed, int64_t batch_id,
                                          at::Tensor node_map) {
  check_sample_arg_values(indptr, indices, seeds, fanouts, node_map);
  TORCH_CHECK(seeds.is_cuda(), "seeds must be a CUDA tensor when the op runs on the GPU, got ",
              seeds.device());
  const at::Device device = seeds.device();
  TORCH_CHECK(node_map.device() == device, "node_map is on ", node_map.device(),
              " but seeds are on ", device);
  TORCH_CHECK(indptr.device() == indices.device(), "indptr is on ", indptr.device(),
              " but indices is on ", indices.device());
  const c10::cuda::CUDAGuard device_guard(device);
  // GPU memory on the seeds' device, or pinned host memory read over UVA.
  const auto* ip = static_cast<const int64_t*>(device_readable_ptr(indptr, "indptr", device));
  const void* ix = device_readable_ptr(indices, "indices", device);
  // The op writes node_map: it may not share memory with an input.
  for (const at::Tensor* input : {&indptr, &indices, &seeds}) {
    at::assert_no_overlap(node_map, *input);
  }
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(device.index());
  int32_t* map = node_map.data_ptr<int32_t>();
  try {
    if (indices.scalar_type() == at::kInt) {
      return sample_fused_cuda_typed<int32_t>(ip, static_cast<const int32_t*>(ix), indptr, indices,
                                              seeds, fanouts, replace, seed, batch_id, map, stream);
    }
    return sample_fused_cuda_typed<int64_t>(ip, static_cast<const int64_t*>(ix), indptr, indices,
                                            seeds, fanouts, replace, seed, batch_id, map, stream);
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

}  // namespace

TORCH_LIBRARY_IMPL(gnnrepro, CUDA, m) { m.impl("sample_fused", &sample_fused_cuda); }

}  // namespace gnnrepro
