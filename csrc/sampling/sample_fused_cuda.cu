// Fused neighbour sampling + to_block on the GPU: the CUDA kernel of gnnrepro::sample_fused.
//
// Same schema, same random numbers (common/rng.h) and same relabel order as the CPU op, so both
// give bit-identical blocks for the same (seed, batch_id, seeds). The graph (indptr, indices)
// is either in GPU memory or in pinned host memory that the kernels read over UVA; seeds,
// node_map, workspace and the outputs are on the GPU.
//
// Per layer, outward from the seeds (all kernels on the current stream):
//   count   destination i: start/degree from indptr, pick count -> scan -> block indptr (bp)
//   sample  a tile of G lanes per destination: Floyd positions (or all / with replacement),
//           neighbour ids into `sampled`; a neighbour not yet in the map gets a first-use marker
//           atomicMin(node_map[u], kMarkerBase + edge position), so the marker ends up holding
//           u's first position in CSC order
//   flag    is_first[e] = (node_map[sampled[e]] == marker of e) -> scan -> rank
//   fill    local id of edge e: a destination's id from the map, or num_dst + rank[first
//           position]; the first occurrence also writes the id into the map and u into src
// This is the CPU op's numbering exactly: destinations keep 0..num_dst-1 and new sources are
// numbered in order of first appearance scanning destinations, then their picks, in order.
//
// Host syncs: one before the first layer (its edge count) and one per layer, which reads back
// that layer's new-source count, the next layer's edge count (its count + scan already ran
// over an upper bound of the next frontier, counts past the real end being zero) and the error
// flags. Every kernel stays in bounds whatever the input holds; bad input is flagged on the
// device and raised at the next sync, after which node_map is reset to all -1.
#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cooperative_groups.h>
#include <torch/library.h>

#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "../common/cuda_utils.h"
#include "../common/rng.h"
#include "sample_args.h"

namespace gnnrepro {
namespace {

namespace cg = cooperative_groups;
using ull = unsigned long long;

constexpr int32_t kUnmapped = -1;
// node_map value of a node first sampled at edge position e of the current layer: below every
// local id and below -1 (e <= 2^31 - 3, see the block size check), ordered like e.
constexpr int32_t kMarkerBase = std::numeric_limits<int32_t>::min();
constexpr ull kNone = ~0ull;

// The status block at the start of the workspace: error bits, one detail per error (the
// smallest offending position or node, kNone if none) and the counts read back at each sync.
enum StatusSlot : int {
  kErrors = 0,
  kBadSeedPos,      // smallest i with seeds[i] outside [0, N)
  kDuplicateNode,   // smallest node that appears twice in seeds
  kBadIndptrNode,   // smallest node whose indptr range is not valid
  kBadIndexPos,     // smallest position p with indices[p] outside [0, N)
  kNumNew,          // new source nodes of the layer just relabelled
  kNextEdges,       // edges of the next layer (or of the first, before the loop)
  kStatusSlots = 8  // int64 words reserved
};
enum ErrorBit : ull {
  kBadSeed = 1,
  kDuplicateSeed = 2,
  kDirtyMap = 4,
  kBadIndptr = 8,
  kBadIndex = 16
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

// Maps seed i to local id i. A seed outside [0, N), a duplicate seed or a map entry that is not
// -1 is flagged (the CPU op's three errors).
__global__ void map_seeds_kernel(const int64_t* __restrict__ seeds, int64_t n, int64_t num_nodes,
                                 int32_t* map, ull* status) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t v = seeds[i];
    if (v < 0 || v >= num_nodes) {
      flag_error(status, kBadSeed, kBadSeedPos, static_cast<ull>(i));
      continue;
    }
    const int32_t old = atomicCAS(&map[v], kUnmapped, static_cast<int32_t>(i));
    if (old == kUnmapped) continue;
    // Another position holding v got there first, or the map was not all -1.
    if (old >= 0 && old < n && old != i && seeds[old] == v) {
      flag_error(status, kDuplicateSeed, kDuplicateNode, static_cast<ull>(v));
    } else {
      flag_error(status, kDirtyMap, kErrors, 0);
    }
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
    if (v >= 0 && v < num_nodes) {  // seeds outside [0, N) are flagged by map_seeds_kernel
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

// Floyd's algorithm over tile lanes, drawing exactly the CPU op's positions: step n draws
// r = below(draw(key, n), j + 1) with j = degree - count + n and takes r unless r was taken
// before, else j. Steps go in rounds of G: lane l computes step c0 + l's draw and whether it
// hits a pick of an earlier round (those are in out[0..c0)); the round's steps are then
// resolved in order with one shuffle and one vote each. Writes absolute positions to
// out[0..count).
template <int G>
__device__ void floyd_positions(const cg::thread_block_tile<G>& tile, uint64_t key, int64_t lo,
                                int64_t deg, int64_t count, int64_t* out) {
  const int lane = static_cast<int>(tile.thread_rank());
  for (int64_t c0 = 0; c0 < count; c0 += G) {
    const int64_t n = c0 + lane;
    const bool active = n < count;
    const int64_t j = deg - count + n;
    const int64_t r =
        active ? lo + static_cast<int64_t>(below(draw(key, static_cast<uint64_t>(n)),
                                                 static_cast<uint64_t>(j + 1)))
               : -1;
    int earlier = 0;
    for (int64_t k = 0; active && k < c0; ++k) earlier |= out[k] == r;
    int64_t t = -1;
    const int steps = static_cast<int>(std::min<int64_t>(G, count - c0));
    for (int s = 0; s < steps; ++s) {
      const int64_t rs = tile.shfl(r, s);
      const bool taken = tile.any(lane < s && t == rs) || tile.shfl(earlier, s);
      if (lane == s) t = taken ? lo + j : rs;
    }
    if (active) out[n] = t;
    tile.sync();  // the next round (and the caller) read these picks
  }
}

// One tile of G lanes per destination: picks, neighbour ids into sampled[bp[i]..bp[i+1]), and a
// first-use marker for every neighbour that is not a destination. `pos` (the block's indices,
// overwritten by fill_kernel later) holds Floyd's positions. A neighbour id outside [0, N) or a
// map entry outside [-1, n) (only below -1 can be this layer's markers) is flagged; the edge
// then gets sampled = -1, which later kernels skip.
template <int G, typename IdT>
__global__ void __launch_bounds__(kCudaThreads)
sample_kernel(const IdT* __restrict__ indices, int64_t num_nodes, const int64_t* __restrict__ dst,
              int64_t n, const int64_t* __restrict__ bp, const int64_t* __restrict__ start,
              const int64_t* __restrict__ degree, int64_t fanout, bool replace, uint64_t seed,
              uint64_t batch_id, uint64_t layer, int32_t* map, int64_t* pos,
              int32_t* __restrict__ sampled, ull* status) {
  const auto tile = cg::tiled_partition<G>(cg::this_thread_block());
  const int lane = static_cast<int>(tile.thread_rank());
  const int64_t tiles = int64_t{gridDim.x} * blockDim.x / G;
  for (int64_t i = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) / G; i < n; i += tiles) {
    const int64_t out = bp[i], count = bp[i + 1] - out;
    if (count == 0) continue;
    const int64_t lo = start[i], deg = degree[i];
    const uint64_t key = node_key(seed, batch_id, layer, static_cast<uint64_t>(dst[i]));
    const bool all = fanout < 0 || (count == deg && !replace);
    if (!all && !replace) floyd_positions<G>(tile, key, lo, deg, count, pos + out);
    for (int64_t k = lane; k < count; k += G) {
      int64_t p;
      if (all) {
        p = lo + k;
      } else if (replace) {
        p = lo + static_cast<int64_t>(
                     below(draw(key, static_cast<uint64_t>(k)), static_cast<uint64_t>(deg)));
      } else {
        p = pos[out + k];
      }
      const int64_t u = static_cast<int64_t>(indices[p]);
      int32_t id = -1;
      if (u < 0 || u >= num_nodes) {
        flag_error(status, kBadIndex, kBadIndexPos, static_cast<ull>(p));
      } else {
        id = static_cast<int32_t>(u);
        const int32_t m = map[u];
        if (m >= n) {
          flag_error(status, kDirtyMap, kErrors, 0);
        } else if (m < 0) {
          atomicMin(&map[u], kMarkerBase + static_cast<int32_t>(out + k));
        }
      }
      sampled[out + k] = id;
    }
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
// edge of the same source may read the marker or the new id: both give the same id. A negative
// entry that is not this layer's marker of u (left in the map from outside) is flagged.
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

__global__ void unmap_kernel(const int64_t* __restrict__ nodes, int64_t n, int32_t* map) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    map[nodes[i]] = kUnmapped;
  }
}

// Restores node_map to all -1 (an async memset on the op's stream) unless done() was called:
// an error raised at a sync leaves markers and ids behind.
class NodeMapGuard {
 public:
  NodeMapGuard(int32_t* map, int64_t size, cudaStream_t stream)
      : map_(map), size_(size), stream_(stream) {}
  ~NodeMapGuard() {
    if (!done_ && size_ > 0) {
      // 0xFF bytes make int32 -1. No throwing here: an error would surface at the next call.
      (void)cudaMemsetAsync(map_, 0xFF, static_cast<size_t>(size_) * sizeof(int32_t), stream_);
    }
  }
  NodeMapGuard(const NodeMapGuard&) = delete;
  NodeMapGuard& operator=(const NodeMapGuard&) = delete;
  void done() { done_ = true; }

 private:
  int32_t* map_;
  int64_t size_;
  cudaStream_t stream_;
  bool done_ = false;
};

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

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

// out[0] = 0, out[1..items] = inclusive sum of in[0..items).
template <typename T>
void exclusive_offsets(const T* in, T* out, int64_t items, void* temp, size_t temp_bytes,
                       cudaStream_t stream) {
  C10_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(T), stream));
  if (items == 0) return;
  C10_CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp, temp_bytes, in, out + 1,
                                               static_cast<int>(items), stream));
}

// The op's scratch, carved out of the caller's int64 workspace (which it grows, keeping its
// contents, like the CPU op). Layout in int64 words, regions 256-byte aligned for cub:
//   [status: kStatusSlots]
//   [count arrays at stride S: start | degree | count | bp (S + 1)]  -- S = the bound on the
//       destinations of the layer they were computed for; the next layer's arrays overwrite
//       them once this layer's sampling has read them, so the region fits the larger stride
//   [sampled int32 E] [first-use flags int32 E] [rank int32 E + 1] [src int64 n + E]
//   [cub scratch]
constexpr int64_t kAlignWords = 32;

int64_t count_words(int64_t stride) { return 4 * stride + 1; }
// Words of `items` int32 values, rounded up to the alignment.
int64_t int32_words(int64_t items) { return round_up(items, 2 * kAlignWords) / 2; }

// Grows `workspace` to at least `words` (keeping its contents) and returns its base. Pointers
// into it must be taken again after every call.
int64_t* grow(at::Tensor& workspace, int64_t words) {
  if (workspace.numel() < words) workspace.resize_({words + words / 4});
  return workspace.data_ptr<int64_t>();
}

struct CountArrays {
  int64_t* start;
  int64_t* degree;
  int64_t* count;
  int64_t* bp;
  static CountArrays at(int64_t* base, int64_t stride) {
    int64_t* p = base + kStatusSlots;
    return {p, p + stride, p + 2 * stride, p + 3 * stride};
  }
};

template <typename T>
T* words_at(int64_t* base, int64_t offset) {
  return reinterpret_cast<T*>(base + offset);
}

void launch_count(const int64_t* indptr, int64_t num_nodes, int64_t num_edges, const int64_t* dst,
                  int64_t upper, int64_t n_base, const int32_t* n_extra, int64_t fanout,
                  bool replace, const CountArrays& ca, ull* status, void* temp, size_t temp_bytes,
                  cudaStream_t stream) {
  if (upper > 0) {
    count_kernel<<<cuda_blocks(upper), kCudaThreads, 0, stream>>>(
        indptr, num_nodes, num_edges, dst, upper, n_base, n_extra, fanout, replace, ca.start,
        ca.degree, ca.count, status);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  exclusive_offsets<int64_t>(ca.count, ca.bp, upper, temp, temp_bytes, stream);
}

template <int G, typename IdT>
void launch_sample(const IdT* indices, int64_t num_nodes, const int64_t* dst, int64_t n,
                   const int64_t* bp, const CountArrays& ca, int64_t fanout, bool replace,
                   int64_t seed, int64_t batch_id, int64_t layer, int32_t* map, int64_t* pos,
                   int32_t* sampled, ull* status, cudaStream_t stream) {
  sample_kernel<G, IdT><<<cuda_blocks(n * G), kCudaThreads, 0, stream>>>(
      indices, num_nodes, dst, n, bp, ca.start, ca.degree, fanout, replace,
      static_cast<uint64_t>(seed), static_cast<uint64_t>(batch_id), static_cast<uint64_t>(layer),
      map, pos, sampled, status);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// Reads the status block back (the sync) and raises the first error it holds.
std::vector<ull> sync_status(const ull* status, cudaStream_t stream, const at::Tensor& seeds,
                             const at::Tensor& indices, int64_t num_nodes) {
  std::vector<ull> host(kStatusSlots);
  C10_CUDA_CHECK(cudaMemcpyAsync(host.data(), status, kStatusSlots * sizeof(ull),
                                 cudaMemcpyDeviceToHost, stream));
  C10_CUDA_CHECK(cudaStreamSynchronize(stream));
  const ull errors = host[kErrors];
  if (errors == 0) return host;
  // Error path only: a few more syncs to name the culprit the way the CPU op does.
  if (errors & kBadSeed) {
    const auto i = static_cast<int64_t>(host[kBadSeedPos]);
    TORCH_CHECK(false, "seeds[", i, "] = ", seeds[i].item<int64_t>(), " is outside [0, ",
                num_nodes, ")");
  }
  TORCH_CHECK(!(errors & kDuplicateSeed), "seeds must be unique; node ",
              static_cast<int64_t>(host[kDuplicateNode]), " appears twice");
  TORCH_CHECK(!(errors & kDirtyMap), "node_map must be all -1 on entry");
  TORCH_CHECK(!(errors & kBadIndptr), "indptr is not a valid CSC offset array at node ",
              static_cast<int64_t>(host[kBadIndptrNode]));
  if (errors & kBadIndex) {
    const auto p = static_cast<int64_t>(host[kBadIndexPos]);
    TORCH_CHECK(false, "indices holds node id ", indices[p].item<int64_t>(), " outside [0, ",
                num_nodes, ")");
  }
  TORCH_CHECK(false, "sample_fused: unknown error flags ", errors);
}

template <typename IdT>
std::vector<at::Tensor> sample_fused_cuda_typed(const int64_t* ip, const IdT* ix,
                                                const at::Tensor& indptr, const at::Tensor& indices,
                                                const at::Tensor& seeds, at::IntArrayRef fanouts,
                                                bool replace, int64_t seed, int64_t batch_id,
                                                at::Tensor& node_map, at::Tensor& workspace) {
  const int64_t num_nodes = indptr.numel() - 1;
  const int64_t num_edges = indices.numel();
  const int64_t num_layers = static_cast<int64_t>(fanouts.size());
  const auto long_opts = seeds.options().dtype(at::kLong);
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(seeds.device().index());
  int32_t* map = node_map.data_ptr<int32_t>();
  std::vector<at::Tensor> out(3 * num_layers);
  NodeMapGuard guard(map, num_nodes, stream);

  // Before the first layer: map the seeds, count and scan the first layer's picks.
  int64_t n = seeds.numel();
  int64_t stride = n;  // of the count arrays in the workspace
  const int64_t* d = seeds.data_ptr<int64_t>();  // this layer's destinations
  {
    const size_t temp_bytes = scan_temp_bytes<int64_t>(n, stream);
    const int64_t temp_at = round_up(kStatusSlots + count_words(stride), kAlignWords);
    int64_t* base = grow(workspace, temp_at + static_cast<int64_t>(temp_bytes / 8 + 1));
    ull* status = words_at<ull>(base, 0);
    init_status_kernel<<<1, 1, 0, stream>>>(status);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    if (n > 0) {
      map_seeds_kernel<<<cuda_blocks(n), kCudaThreads, 0, stream>>>(d, n, num_nodes, map, status);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    const CountArrays ca = CountArrays::at(base, stride);
    launch_count(ip, num_nodes, num_edges, d, n, n, nullptr, fanouts[num_layers - 1], replace, ca,
                 status, base + temp_at, temp_bytes, stream);
    totals_kernel<<<1, 1, 0, stream>>>(status, nullptr, ca.bp + n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  int64_t edges = static_cast<int64_t>(
      sync_status(words_at<ull>(workspace.data_ptr<int64_t>(), 0), stream, seeds, indices,
                  num_nodes)[kNextEdges]);

  for (int64_t layer = num_layers - 1; layer >= 0; --layer) {
    const int64_t fanout = fanouts[layer];
    // Local ids are int32 in the map, and markers need edge positions below 2^31 - 2.
    TORCH_CHECK(edges <= std::numeric_limits<int32_t>::max() - 1 - n,
                "a block with 2^31 - 1 or more sources plus edges is not supported");
    const bool last = layer == 0;
    const int64_t next_upper = last ? 0 : n + edges;  // bound on the next layer's destinations
    const int64_t next_stride = next_upper;
    const size_t temp_bytes = std::max(scan_temp_bytes<int32_t>(edges, stream),
                                       scan_temp_bytes<int64_t>(next_upper, stream));
    const int64_t edge_at =
        round_up(kStatusSlots + count_words(std::max(stride, next_stride)), kAlignWords);
    const int64_t flag_at = edge_at + int32_words(edges);
    const int64_t rank_at = flag_at + int32_words(edges);
    const int64_t src_at = rank_at + int32_words(edges + 1);
    const int64_t temp_at = round_up(src_at + n + edges, kAlignWords);
    int64_t* base = grow(workspace, temp_at + static_cast<int64_t>(temp_bytes / 8 + 1));
    ull* status = words_at<ull>(base, 0);
    const CountArrays ca = CountArrays::at(base, stride);
    int32_t* sampled = words_at<int32_t>(base, edge_at);
    int32_t* flag = words_at<int32_t>(base, flag_at);
    int32_t* rank = words_at<int32_t>(base, rank_at);
    int64_t* src = words_at<int64_t>(base, src_at);
    void* temp = base + temp_at;

    at::Tensor block_indptr = at::empty({n + 1}, long_opts);
    at::Tensor block_indices = at::empty({edges}, long_opts);
    int64_t* bp = block_indptr.data_ptr<int64_t>();
    int64_t* bi = block_indices.data_ptr<int64_t>();
    C10_CUDA_CHECK(cudaMemcpyAsync(bp, ca.bp, (n + 1) * sizeof(int64_t), cudaMemcpyDeviceToDevice,
                                   stream));
    if (n > 0) {
      C10_CUDA_CHECK(
          cudaMemcpyAsync(src, d, n * sizeof(int64_t), cudaMemcpyDeviceToDevice, stream));
    }

    if (edges > 0) {
      // Tiles of G lanes: about one lane per pick, whole warps for all-neighbour layers.
      if (fanout >= 0 && fanout <= 8) {
        launch_sample<8, IdT>(ix, num_nodes, d, n, bp, ca, fanout, replace, seed, batch_id, layer,
                              map, bi, sampled, status, stream);
      } else if (fanout >= 0 && fanout <= 16) {
        launch_sample<16, IdT>(ix, num_nodes, d, n, bp, ca, fanout, replace, seed, batch_id, layer,
                               map, bi, sampled, status, stream);
      } else {
        launch_sample<32, IdT>(ix, num_nodes, d, n, bp, ca, fanout, replace, seed, batch_id, layer,
                               map, bi, sampled, status, stream);
      }
      first_use_kernel<<<cuda_blocks(edges), kCudaThreads, 0, stream>>>(sampled, edges, map, flag);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    exclusive_offsets<int32_t>(flag, rank, edges, temp, temp_bytes, stream);
    if (edges > 0) {
      fill_kernel<<<cuda_blocks(edges), kCudaThreads, 0, stream>>>(sampled, edges, map, rank, n, bi,
                                                                   src, status);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    // The next layer's counts over its destinations src[0..n + rank[edges]), bounded by n + edges.
    const CountArrays next = CountArrays::at(base, next_stride);
    if (!last) {
      launch_count(ip, num_nodes, num_edges, src, next_upper, n, rank + edges, fanouts[layer - 1],
                   replace, next, status, temp, temp_bytes, stream);
    }
    totals_kernel<<<1, 1, 0, stream>>>(status, rank + edges, last ? nullptr : next.bp + next_upper);
    C10_CUDA_KERNEL_LAUNCH_CHECK();

    const std::vector<ull> host = sync_status(status, stream, seeds, indices, num_nodes);
    const int64_t num_src = n + static_cast<int64_t>(host[kNumNew]);
    at::Tensor src_nodes = at::empty({num_src}, long_opts);
    if (num_src > 0) {
      C10_CUDA_CHECK(cudaMemcpyAsync(src_nodes.data_ptr<int64_t>(), src,
                                     num_src * sizeof(int64_t), cudaMemcpyDeviceToDevice, stream));
    }
    out[3 * layer] = block_indptr;
    out[3 * layer + 1] = block_indices;
    out[3 * layer + 2] = src_nodes;
    d = src_nodes.data_ptr<int64_t>();
    n = num_src;
    stride = next_stride;
    edges = static_cast<int64_t>(host[kNextEdges]);
  }

  // Every node the map holds is an input node (each layer's sources include its destinations):
  // clearing just those restores the all -1 invariant.
  if (n > 0) {
    unmap_kernel<<<cuda_blocks(n), kCudaThreads, 0, stream>>>(d, n, map);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  guard.done();
  return out;
}

std::vector<at::Tensor> sample_fused_cuda(const at::Tensor& indptr, const at::Tensor& indices,
                                          const at::Tensor& seeds, at::IntArrayRef fanouts,
                                          bool replace, int64_t seed, int64_t batch_id,
                                          at::Tensor node_map, at::Tensor workspace) {
  check_sample_arg_values(indptr, indices, seeds, fanouts, node_map);
  TORCH_CHECK(seeds.is_cuda(), "seeds must be a CUDA tensor when the op runs on the GPU, got ",
              seeds.device());
  const at::Device device = seeds.device();
  TORCH_CHECK(node_map.device() == device, "node_map is on ", node_map.device(),
              " but seeds are on ", device);
  TORCH_CHECK(workspace.dim() == 1 && workspace.scalar_type() == at::kLong &&
                  workspace.is_contiguous() && workspace.device() == device,
              "workspace must be a contiguous 1-D int64 tensor on the seeds' device");
  TORCH_CHECK(indptr.device() == indices.device(), "indptr is on ", indptr.device(),
              " but indices is on ", indices.device());
  const c10::cuda::CUDAGuard device_guard(device);
  // GPU memory on the seeds' device, or pinned host memory read over UVA.
  const auto* ip = static_cast<const int64_t*>(device_readable_ptr(indptr, "indptr", device));
  const void* ix = device_readable_ptr(indices, "indices", device);
  // The op writes node_map and workspace (and may reallocate the workspace): neither may share
  // memory with an input or with each other.
  for (const at::Tensor* input : {&indptr, &indices, &seeds}) {
    at::assert_no_overlap(node_map, *input);
    at::assert_no_overlap(workspace, *input);
  }
  at::assert_no_overlap(workspace, node_map);
  if (indices.scalar_type() == at::kInt) {
    return sample_fused_cuda_typed<int32_t>(ip, static_cast<const int32_t*>(ix), indptr, indices,
                                            seeds, fanouts, replace, seed, batch_id, node_map,
                                            workspace);
  }
  return sample_fused_cuda_typed<int64_t>(ip, static_cast<const int64_t*>(ix), indptr, indices,
                                          seeds, fanouts, replace, seed, batch_id, node_map,
                                          workspace);
}

}  // namespace

TORCH_LIBRARY_IMPL(gnnrepro, CUDA, m) { m.impl("sample_fused", &sample_fused_cuda); }

}  // namespace gnnrepro
