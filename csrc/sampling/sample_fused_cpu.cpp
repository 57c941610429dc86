// Fused neighbour sampling + to_block on the CPU.
//
// Per layer, outward from the seeds: (1) count picks per destination, (2) sample neighbours in
// parallel over destinations straight into the block's `indices` (global ids, CSC order), and
// (3) relabel in place with a dense node map: destinations keep their ids 0..num_dst-1 and new
// sources get the next ids in first-occurrence order, either in one ordered pass beside the
// sampling or, on many threads, in parallel passes (relabel_mode.h) that give the same ids. No
// COO frontier and no hash table is built.
// A layer's sources, in order, are the next layer's destinations, so the map carries over
// between layers and is cleared once, at the end, over the input nodes only. The per-destination
// rules (random numbers, picks, relabel order, map contract) are the common/ headers the CUDA
// kernels call too; errors are collected and raised in sample_errors.h's order, like the CUDA op.
#include <ATen/MemoryOverlap.h>
#include <ATen/Parallel.h>
#include <sys/mman.h>
#include <torch/library.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <limits>
#include <vector>

#include "../common/exclusion.h"
#include "../common/output_pool.h"
#include "../common/picks.h"
#include "../common/relabel.h"
#include "../common/rng.h"
#include "../common/step_team.h"
#include "../common/temporal_picks.h"
#include "../common/weighted_picks.h"
#include "prefetch_distances.h"
#include "relabel_mode.h"
#include "sample_args.h"
#include "sample_errors.h"
#include "typed_spec.h"

namespace gnnrepro {
namespace {

// Destinations per item of the overlapped sample/relabel step (~15k edges at fanout 15), of the
// counting step, and input nodes per item of the final map clearing.
constexpr int64_t kChunk = 1024;
constexpr int64_t kCountChunk = 4096;
constexpr int64_t kClearChunk = 16384;
// Sources per item of a temporal call's output split.
constexpr int64_t kSplitChunk = 32768;
// Edges per item of the parallel relabel's last pass.
constexpr int64_t kResolveChunk = 16384;

// The parallel relabel's marks on a block's entries between its passes: a node new in the layer
// (its id not known yet), and a claim on its first appearance. Node ids stay below both.
constexpr int64_t kNewNode = int64_t{1} << 62;
constexpr int64_t kFirstSeen = int64_t{1} << 61;
constexpr int64_t kNodeBits = kFirstSeen - 1;

// A map entry during the parallel relabel: the position (over the layer's blocks, relations in
// order) of a new node's first appearance so far, below -1 so that it is neither an id nor
// unmapped, and ordered as the positions are (the smallest wins an atomic min).
int32_t first_position_code(int64_t position) {
  return static_cast<int32_t>(std::numeric_limits<int32_t>::min() + position);
}

// The map entry a block entry marked `mark` refers to, else entry 0 (a line in the cache): the
// passes prefetch and load through it without a branch on the mark (taken about half the time).
int64_t marked_node(int64_t entry, int64_t mark) {
  return entry & kNodeBits & -static_cast<int64_t>((entry & mark) != 0);
}
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

// The relabel map of a temporal call, whose subgraphs are disjoint per seed: keys (seed index
// << shift | global node id) to local ids within the node's type, by open addressing with linear
// probing. Rebuilt per layer from the layer's destinations (each layer's sources include them),
// at most half full. Per calling thread, kept across calls, like thread_scratch.
// The slots live in anonymous memory advised for huge pages (the lookups are random reads over
// tens of MB), and a slot is empty unless it carries the current generation, so emptying the map
// for the next layer costs nothing (no pass over the slots). Where the layer's keys are spread
// over its seeds evenly enough, each seed's keys hash into a region of their own (a power of two
// at least twice its keys, probes wrapping inside it): a destination's picks share its seed, so
// their lookups stay in a region a few KB wide while its seed's destinations are relabelled,
// rather than each missing the cache somewhere in the whole map.
class DisjointMap {
 public:
  // A key, its id and the generation that wrote it, side by side: a lookup reads one line.
  struct Slot {
    int64_t key;
    int32_t id;
    uint32_t generation;
  };

  DisjointMap() = default;
  DisjointMap(const DisjointMap&) = delete;
  DisjointMap& operator=(const DisjointMap&) = delete;
  ~DisjointMap() { release(); }

  // Empties the map with room for `entries` keys (at most half full), at most `per_seed` of
  // them under one of `seeds` seed indices (key >> shift).
  void reset(int64_t entries, int64_t seeds, int64_t per_seed, int shift) {
    int64_t capacity = 64;
    while (capacity < 2 * entries) capacity *= 2;
    int64_t region = 64, regions = 1;
    while (region < 2 * per_seed) region *= 2;
    while (regions < seeds) regions *= 2;
    const bool regional = regions > 1 && regions * region <= kRegionalGrowth * capacity;
    if (regional) capacity = regions * region;
    shift_ = shift;
    region_bits_ = 0;
    while (regional && (int64_t{1} << region_bits_) < region) ++region_bits_;
    region_mask_ = regional ? region - 1 : capacity - 1;
    if (capacity > capacity_) {
      release();
      const size_t bytes = static_cast<size_t>(capacity) * sizeof(Slot);
      void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      TORCH_CHECK(p != MAP_FAILED, "out of memory for the relabel map of a temporal call (",
                  bytes, " bytes)");
#ifdef MADV_HUGEPAGE
      madvise(p, bytes, MADV_HUGEPAGE);  // advice only: 4 KiB pages if refused
#endif
      slots_ = static_cast<Slot*>(p);  // zero pages: generation 0, empty
      capacity_ = capacity;
      generation_ = 0;
    }
    if (++generation_ == 0) {  // wrapped: clear the stale generations once
      std::memset(static_cast<void*>(slots_), 0, static_cast<size_t>(capacity_) * sizeof(Slot));
      generation_ = 1;
    }
    mask_ = capacity - 1;
  }
  // The slot a lookup of `key` starts at (in its seed's region, if regional), and the next one
  // it probes after `at`.
  int64_t slot(int64_t key) const {
    const int64_t region = (((key >> shift_) << region_bits_) & mask_) & ~region_mask_;
    return region | (static_cast<int64_t>(mix64(key)) & region_mask_);
  }
  int64_t next(int64_t at) const { return (at & ~region_mask_) | ((at + 1) & region_mask_); }
  // Adds `key` (not in the map) with local id `id`.
  void insert_new(int64_t key, int64_t id) {
    int64_t at = slot(key);
    while (slots_[at].generation == generation_) at = next(at);
    slots_[at] = {key, static_cast<int32_t>(id), generation_};
  }
  Slot* slots() const { return slots_; }
  uint32_t generation() const { return generation_; }

 private:
  void release() {
    if (slots_) munmap(slots_, static_cast<size_t>(capacity_) * sizeof(Slot));
    slots_ = nullptr;
    capacity_ = 0;
  }
  // How much larger than a global map the regions may make it (seeds with few keys beside
  // one with many leave their regions mostly empty) before a layer hashes globally instead.
  static constexpr int64_t kRegionalGrowth = 4;
  Slot* slots_ = nullptr;
  int64_t capacity_ = 0, mask_ = 0, region_mask_ = 0;
  int shift_ = 0, region_bits_ = 0;
  uint32_t generation_ = 0;
};

DisjointMap& thread_disjoint_map() {
  thread_local DisjointMap map;
  return map;
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
// the ordered relabel; then clearing the map. With the parallel relabel (relabel_mode.h) a layer
// is counted, sampled with each chunk claiming its new nodes' first positions, marked and
// assigned; its resolve pass runs beside the next layer's counting. Each `plan(s)` runs
// serially once step s-1 is complete: it checks what that step found and sets up step s. The
// members below are the state those steps share.
//
// A typed graph (typed_spec.h) is sampled the same way: a step's items are chunks of every
// relation's destinations, relation by relation, and the ordered relabel numbers each node
// type's sources on its own (a source list and counter per type, the map holding ids within
// the type): its destinations first, then its new sources in order of first appearance,
// relations in order, then destinations, then picks. No pass over the sources follows. One
// type and one relation is the homogeneous op exactly.
template <typename IdT>
class SampleCall {
 public:
  SampleCall(const TypedSpec& spec, bool replace, int64_t seed, int64_t batch_id,
             bool return_eids, at::Tensor& node_map)
      : spec_(spec),
        num_nodes_(spec.total_nodes()),
        num_types_(spec.num_types()),
        num_rels_(spec.num_rels()),
        map_(node_map.data_ptr<int32_t>()),
        num_layers_(spec.num_layers),
        replace_(replace),
        seed_(seed),
        batch_id_(batch_id),
        return_eids_(return_eids),
        per_layer_(outputs_per_layer(spec, return_eids)),
        out_(per_layer_ * num_layers_),
        scratch_(thread_scratch()),  // the calling thread's: plans run on any team thread
        rels_(num_rels_),
        dst_begin_(num_types_ + 1, 0),
        layer_(num_layers_),
        srcs_(num_types_),
        next_(num_types_, 0),
        disjoint_(spec.temporal()),
        disjoint_map_(thread_disjoint_map()) {
    if (disjoint_) {  // keys: seed index << shift_ | global node id
      while ((int64_t{1} << shift_) < spec.total_nodes()) ++shift_;
      node_mask_ = (int64_t{1} << shift_) - 1;
      for (const at::Tensor& t : spec.seed_times) {
        const int64_t* times = t.data_ptr<int64_t>();
        seed_time_.insert(seed_time_.end(), times, times + t.numel());
      }
    }
    for (int64_t r = 0; r < num_rels_; ++r) {
      const RelationSpec& rs = spec.rels[r];
      Rel& rel = rels_[r];
      rel.ip = rs.indptr.data_ptr<int64_t>();
      rel.ix = rs.indices.data_ptr<IdT>();
      rel.num_edges = rs.indices.numel();
      rel.src_offset = spec.offsets[rs.src_type];
      rel.num_src_nodes = spec.offsets[rs.src_type + 1] - rel.src_offset;
      rel.dst_offset = spec.offsets[rs.dst_type];
      rel.dst_type = rs.dst_type;
      rel.src_type = rs.src_type;
      if (rs.weighted()) {
        rel.weights = rs.weights.data_ptr<float>();
        rel.table = rs.table.data_ptr<int64_t>();
        rel.nonzero = rs.nonzero.data_ptr<int64_t>();
      }
      if (rs.times.defined()) rel.times = rs.times.data_ptr<int64_t>();
      weighted_timed_ |= rel.times && rel.weights;
      if (rs.excluded.defined()) {
        rel.excluded = bucket_excluded(rs.excluded.data_ptr<int64_t>(), rs.excluded.numel(),
                                       rel.num_edges, rel.excluded_start);
      }
    }
  }

  // Samples every layer and returns the op's outputs, GNN layer 0 first (outputs_per_layer).
  std::vector<at::Tensor> run() {
    NodeMapGuard guard(map_, num_nodes_);
    map_seeds();
    const int64_t threads = at::get_num_threads();
    parallel_relabel_ = !disjoint_ && threads >= parallel_relabel_threads();
    const int64_t tail_steps = parallel_relabel_ ? 2 : 1;  // (resolve,) clear
    run_steps(steps_per_layer() * num_layers_ + tail_steps, threads,
              [this](int64_t step) { return plan(step); });
    guard.done();
    return std::move(out_);
  }

 private:
  // One relation's arrays, and its block in the layer being sampled.
  struct Rel {
    const int64_t* ip = nullptr;
    const IdT* ix = nullptr;
    const float* weights = nullptr;  // weighted relations only (common/weighted_picks.h)
    const int64_t *table = nullptr, *nonzero = nullptr;
    const int64_t* times = nullptr;  // timed relations of temporal calls only
    // excluded edges, bucketed (common/exclusion.h; count 0: none) in excluded_start
    ExcludedBuckets excluded;
    std::vector<int64_t> excluded_start;
    int64_t num_edges = 0, src_offset = 0, num_src_nodes = 0, dst_offset = 0, dst_type = 0,
            src_type = 0;
    // The layer: its fanout, its destinations (global ids: d[0..n)), their scratch (start and
    // degree from `scratch` offset `seg`), the block (bp: indptr, bi: indices, eid: positions).
    int64_t fanout = 0, n = 0, seg = 0;
    const int64_t* d = nullptr;
    at::Tensor indptr, indices, eids;
    int64_t *bp = nullptr, *bi = nullptr, *eid = nullptr;
    uint64_t stream = 0;
  };
  // A step's item: destinations [begin, end) of relation rel.
  struct Item {
    int64_t rel, begin, end;
  };
  // An item of the parallel relabel's last pass: a block's entries ids[begin, end).
  struct ResolveItem {
    int64_t* ids;
    int64_t begin, end;
  };
  // An item of a temporal call's output split: keys[begin, end) of one node type's sources
  // into their node ids (less the type's offset) and their seeds' indices.
  struct SplitItem {
    const int64_t* keys;
    int64_t* nodes;
    int64_t* seeds;
    int64_t offset, begin, end;
  };

  // Checks the seeds and gives them local ids 0, 1, ... type by type. Range, then a clean map at
  // every seed, then duplicates (the smallest repeated node), each over all seeds before the
  // next, as the CUDA op's kernels do.
  void map_seeds() {
    for (int64_t t = 0; t < num_types_; ++t) {
      const int64_t* s = spec_.seeds[t].data_ptr<int64_t>();
      const int64_t n = spec_.seeds[t].numel(), limit = spec_.offsets[t + 1] - spec_.offsets[t];
      for (int64_t i = 0; i < n; ++i) {
        if (s[i] < 0 || s[i] >= limit) {
          detail_.bad_seed_pos = i;
          detail_.bad_seed_value = s[i];
          detail_.bad_seed_type = t;
          raise_sample_error(kBadSeed, detail_, limit, !spec_.homogeneous());
        }
      }
      dst_begin_[t + 1] = dst_begin_[t] + n;
    }
    num_dst_ = dst_begin_[num_types_];
    if (disjoint_) {  // seed i is key (i << shift_ | its global id): seeds may repeat
      dst_ = pooled_empty(num_dst_, at::kLong);
      int64_t* d = dst_.data_ptr<int64_t>();
      for (int64_t t = 0; t < num_types_; ++t) {
        const int64_t* s = spec_.seeds[t].data_ptr<int64_t>();
        for (int64_t i = dst_begin_[t]; i < dst_begin_[t + 1]; ++i) {
          d[i] = (i << shift_) | (s[i - dst_begin_[t]] + spec_.offsets[t]);
        }
      }
      return;
    }
    if (num_types_ == 1) {
      dst_ = spec_.seeds[0];  // global ids are the node ids: no copy
    } else {
      dst_ = pooled_empty(num_dst_, at::kLong);
      int64_t* d = dst_.data_ptr<int64_t>();
      for (int64_t t = 0; t < num_types_; ++t) {
        const int64_t* s = spec_.seeds[t].data_ptr<int64_t>();
        for (int64_t i = dst_begin_[t]; i < dst_begin_[t + 1]; ++i) {
          d[i] = s[i - dst_begin_[t]] + spec_.offsets[t];
        }
      }
    }
    const int64_t* s = dst_.data_ptr<int64_t>();
    for (int64_t i = 0; i < num_dst_; ++i) {
      if (map_[s[i]] != kUnmapped) raise_sample_error(kDirtySeedMap, detail_, num_nodes_);
    }
    for (int64_t t = 0; t < num_types_; ++t) {  // ids within the type: 0, 1, ...
      for (int64_t i = dst_begin_[t]; i < dst_begin_[t + 1]; ++i) {
        const int64_t v = s[i];
        if (map_[v] != kUnmapped) {
          detail_.duplicate_node =
              detail_.duplicate_node < 0 ? v : std::min(detail_.duplicate_node, v);
          continue;
        }
        map_[v] = static_cast<int32_t>(i - dst_begin_[t]);
      }
    }
    if (detail_.duplicate_node >= 0) {
      detail_.duplicate_type = spec_.type_of(detail_.duplicate_node);
      detail_.duplicate_node -= spec_.offsets[detail_.duplicate_type];
      raise_sample_error(kDuplicateSeed, detail_, num_nodes_, !spec_.homogeneous());
    }
  }

  // Steps a layer takes: count, sample (with the ordered relabel), or count, sample (with the
  // parallel relabel's claims), verify, verify again (no items unless the first verification
  // repaired a claim) and assign; the parallel relabel's resolve pass of a layer shares the next
  // layer's counting step (or has one of its own after the last layer).
  int64_t steps_per_layer() const { return parallel_relabel_ ? 5 : 2; }

  // Sets up step `step` (see the class comment); a layer's first step first ends the layer
  // before it.
  TeamStep plan(int64_t step) {
    const int64_t per_layer = steps_per_layer(), layer_steps = per_layer * num_layers_;
    if (step < layer_steps) {
      switch (step % per_layer) {
        case 0:
          if (step > 0) finish_layer();
          return plan_count();  // the next layer outward
        case 1:
          return plan_sample();  // the layer just counted
        case 2:
          return plan_verify(true);
        case 3:
          return plan_verify(repaired_.load());
        default:
          return plan_assign();
      }
    }
    if (step == layer_steps) {
      finish_layer();
      if (parallel_relabel_) return plan_resolve();
      return plan_clear();
    }
    if (parallel_relabel_ && step == layer_steps + 1) {
      raise_dirty_map();  // found by the last layer's resolve pass
      return plan_clear();
    }
    return {};  // the final tail: nothing left to do
  }

  void raise_dirty_map() {
    if (map_dirty_.load()) raise_sample_error(kDirtyMap, detail_, num_nodes_);
  }

  // The items of a step over every relation's destinations, `chunk` destinations an item.
  void make_items(int64_t chunk) {
    items_.clear();
    for (int64_t r = 0; r < num_rels_; ++r) {
      for (int64_t b = 0; b < rels_[r].n; b += chunk) {
        items_.push_back({r, b, std::min(rels_[r].n, b + chunk)});
      }
    }
  }

  // Step (1) of the next layer outward: per relation its block indptr, its destinations (those
  // of its destination type) and room for their starts and degrees.
  TeamStep plan_count() {
    if (parallel_relabel_ && layer_ < num_layers_) collect_resolve_items();  // the layer before
    --layer_;
    const int64_t* d = dst_.data_ptr<int64_t>();
    const uint64_t layer_stream = layer_key(static_cast<uint64_t>(seed_),
                                            static_cast<uint64_t>(batch_id_),
                                            static_cast<uint64_t>(layer_));
    int64_t seg = 0;
    for (int64_t r = 0; r < num_rels_; ++r) {
      Rel& rel = rels_[r];
      rel.fanout = spec_.fanout(layer_, r);
      rel.d = d + dst_begin_[rel.dst_type];
      rel.n = dst_begin_[rel.dst_type + 1] - dst_begin_[rel.dst_type];
      rel.seg = seg;
      seg += rel.n;
      rel.indptr = pooled_empty(rel.n + 1, at::kLong);
      rel.bp = rel.indptr.template data_ptr<int64_t>();
      rel.stream = relation_key(layer_stream, static_cast<uint64_t>(r));
    }
    // Scratch layout: start[seg] | degree[seg] | per type its source list (plan_sample).
    start_ = grow(scratch_, 2 * seg);
    degree_ = start_ + seg;
    segs_ = seg;
    if (weighted_timed_ && static_cast<int64_t>(candidates_.size()) < 2 * seg) {
      candidates_.resize(2 * seg);
    }
    bad_indptr_.store(kNoError);
    make_items(kCountChunk);
    const auto counting = static_cast<int64_t>(items_.size());
    const auto resolving = static_cast<int64_t>(resolve_items_.size());
    return {counting + resolving + static_cast<int64_t>(split_items_.size()),
            [this, counting, resolving](int64_t c) {
              if (c < counting) {
                count_range(items_[c]);
              } else if (c < counting + resolving) {
                resolve_chunk(resolve_items_[c - counting]);
              } else {
                split_chunk(split_items_[c - counting - resolving]);
              }
            }};
  }

  // Destination v's neighbour positions [lo, hi) in relation r's indptr `ip` (`edges` edges);
  // an indptr entry outside them is recorded (raised once counting is done) and reads empty.
  CandidateRange list_range(const int64_t* ip, int64_t v, int64_t edges, int64_t r) {
    const int64_t lo = ip[v], hi = ip[v + 1];
    if (0 <= lo && lo <= hi && hi <= edges) return {lo, hi};
    atomic_min(bad_indptr_, (r << kRelShift) | v);
    return {0, 0};
  }

  // (1) Degrees and pick counts of one item's destinations; indptr is read once per destination.
  void count_range(const Item& item) {
    // Locals, not the members: those share cache lines with ones other threads write, and a
    // store through an int64_t* could alias them, forcing reloads.
    const Rel& rel = rels_[item.rel];
    if (rel.times) {
      count_timed(item);
      return;
    }
    const int64_t* dst_ids = rel.d;
    const int64_t* ip = rel.ip;
    const int64_t dst_offset = rel.dst_offset, rel_edges = rel.num_edges;
    int64_t *starts = start_ + rel.seg, *degrees = degree_ + rel.seg, *counts = rel.bp + 1;
    const int64_t layer_fanout = rel.fanout;
    const int64_t* nonzero = rel.nonzero;
    const float* weights = rel.weights;
    const ExcludedBuckets excluded = rel.excluded;
    const int64_t node_mask = node_mask_;
    for (int64_t i = item.begin; i < item.end; ++i) {
      if (i + kPrefetchAhead < item.end) {
        __builtin_prefetch(ip + (dst_ids[i + kPrefetchAhead] & node_mask) - dst_offset);
        if (nonzero) {
          __builtin_prefetch(nonzero + (dst_ids[i + kPrefetchAhead] & node_mask) - dst_offset);
        }
      }
      const int64_t v = (dst_ids[i] & node_mask) - dst_offset;
      const auto [lo, hi] = list_range(ip, v, rel_edges, item.rel);
      starts[i] = lo;
      if (nonzero) {  // a weighted relation: its degree code (weighted_picks.h)
        const ExcludedSpan near = excluded_near(excluded, lo, hi);  // usually none
        const int64_t positive =
            available_positive(weights, lo, hi, nonzero[v], near.excluded, near.n);
        degrees[i] = weighted_degree_code(hi - lo, positive, layer_fanout, replace_);
        counts[i] = weighted_pick_count(hi - lo, positive, layer_fanout, replace_);
      } else if (excluded.count) {  // sampled among the neighbours not excluded
        const ExcludedSpan near = excluded_near(excluded, lo, hi);
        degrees[i] = hi - lo - excluded_in(near.excluded, near.n, lo, hi);
        counts[i] = pick_count(degrees[i], layer_fanout, replace_);
      } else {
        degrees[i] = hi - lo;
        counts[i] = pick_count(hi - lo, layer_fanout, replace_);
      }
    }
  }

  // count_range for a timed relation: its destinations' candidates at their seeds' times
  // (temporal_picks.h). A search is a chain of dependent misses in `times`, so the searches of
  // kTimeSearchGroup destinations run in lockstep, one step each in turn: their misses overlap.
  void count_timed(const Item& item) {
    constexpr int G = kTimeSearchGroup;
    const Rel& rel = rels_[item.rel];  // locals: see count_range
    const int64_t* dst_ids = rel.d;
    const int64_t* ip = rel.ip;
    const int64_t* times = rel.times;
    const int64_t dst_offset = rel.dst_offset, rel_edges = rel.num_edges;
    int64_t *starts = start_ + rel.seg, *degrees = degree_ + rel.seg, *counts = rel.bp + 1;
    const int64_t layer_fanout = rel.fanout, node_mask = node_mask_;
    const int64_t window = spec_.time_window, strategy = spec_.temporal_strategy;
    const int64_t* seed_time = seed_time_.data();
    const int shift = shift_;
    auto lockstep = [times](TimeSearch* s, int n, const int64_t* t) {
      for (bool open = true; open;) {
        open = false;
        for (int k = 0; k < n; ++k) open |= time_search_step(s[k], times, t[k]);
      }
    };
    for (int64_t g = item.begin; g < item.end; g += G) {
      const int n = static_cast<int>(std::min<int64_t>(G, item.end - g));
      TimeSearch s[G];
      int64_t lo[G], hi[G], end[G], t[G], floor[G];
      for (int k = 0; k < n; ++k) {
        const int64_t i = g + k;
        if (i + kPrefetchAhead < item.end) {
          __builtin_prefetch(ip + (dst_ids[i + kPrefetchAhead] & node_mask) - dst_offset);
        }
        const auto [l, h] = list_range(ip, (dst_ids[i] & node_mask) - dst_offset, rel_edges,
                                       item.rel);
        lo[k] = l;
        hi[k] = h;
        t[k] = seed_time[dst_ids[i] >> shift];
        s[k] = {l, h - l};
      }
      lockstep(s, n, t);  // the ends: the first edge after the seed's time
      for (int k = 0; k < n; ++k) {
        end[k] = s[k].first;
        floor[k] = 0;
        const bool floored = window >= 0 && window_floor(t[k], window, &floor[k]);
        s[k] = {lo[k], floored ? end[k] - lo[k] : 0};  // else the range starts at lo
      }
      if (window >= 0) lockstep(s, n, floor);  // the beginnings: the first after the floor
      for (int k = 0; k < n; ++k) {
        const ExcludedSpan near = excluded_near(rel.excluded, s[k].first, end[k]);
        if (rel.weights) {  // weighted: the whole list, its candidates [first, end) beside it
          const int64_t i = g + k, v = (dst_ids[i] & node_mask) - dst_offset;
          const int64_t positive = available_positive_in(rel.weights, lo[k], hi[k], s[k].first,
                                                         end[k], rel.nonzero[v], near.excluded,
                                                         near.n);
          starts[i] = lo[k];
          degrees[i] = weighted_degree_code(hi[k] - lo[k], positive, layer_fanout, replace_);
          counts[i] = weighted_pick_count(hi[k] - lo[k], positive, layer_fanout, replace_);
          candidates_[2 * (rel.seg + i)] = s[k].first - lo[k];
          candidates_[2 * (rel.seg + i) + 1] = end[k] - lo[k];
          continue;
        }
        const KeptRange c = kept_strategy_range({s[k].first, end[k]}, layer_fanout, strategy,
                                                near.excluded, near.n);
        starts[g + k] = c.range.begin;
        degrees[g + k] = c.kept;  // pick_chunk moves its offsets past the excluded positions
        counts[g + k] = pick_count(c.kept, layer_fanout, replace_);
      }
    }
  }

  // Steps (2)+(3) of the layer just counted: raises what counting found, turns the counts into
  // the block indptrs and sizes the blocks' indices and the source list.
  TeamStep plan_sample() {
    raise_dirty_map();  // the parallel relabel's resolve pass of the layer before
    if (bad_indptr_.load() != kNoError) {
      detail_.bad_indptr_rel = bad_indptr_.load() >> kRelShift;
      detail_.bad_indptr_node = bad_indptr_.load() & kPosMask;
      raise_sample_error(kBadIndptr, detail_, num_nodes_, !spec_.homogeneous());
    }
    // Local ids are int32 in the map: sources (<= num_dst + edges) must stay below 2^31 - 1.
    const int64_t limit = std::numeric_limits<int32_t>::max() - 1 - num_dst_;
    int64_t block_edges = 0;
    rel_base_.assign(num_rels_, 0);
    for (int64_t r = 0; r < num_rels_; ++r) {
      Rel& rel = rels_[r];
      rel_base_[r] = block_edges;  // positions over the layer's blocks (the parallel relabel's)
      int64_t* bp = rel.bp;
      bp[0] = 0;
      for (int64_t i = 0; i < rel.n; ++i) {
        TORCH_CHECK(bp[i + 1] <= limit - block_edges - bp[i],
                    "a block with 2^31 - 1 or more sources plus edges is not supported");
        bp[i + 1] += bp[i];
      }
      block_edges += bp[rel.n];
    }
    layer_edges_ = block_edges;
    // Per type its sources in order of their local ids: its destinations, then at most one
    // new source per edge of the relations from that type.
    std::vector<int64_t> capacity(num_types_ + 1, 0);
    for (int64_t t = 0; t < num_types_; ++t) capacity[t + 1] = dst_begin_[t + 1] - dst_begin_[t];
    for (const Rel& rel : rels_) capacity[rel.src_type + 1] += rel.bp[rel.n];
    for (int64_t t = 0; t < num_types_; ++t) capacity[t + 1] += capacity[t];
    start_ = grow(scratch_, 2 * segs_ + capacity[num_types_]);
    degree_ = start_ + segs_;
    const int64_t* d = dst_.data_ptr<int64_t>();
    for (int64_t t = 0; t < num_types_; ++t) {
      srcs_[t] = degree_ + segs_ + capacity[t];
      next_[t] = dst_begin_[t + 1] - dst_begin_[t];
      if (next_[t]) std::memcpy(srcs_[t], d + dst_begin_[t], next_[t] * sizeof(int64_t));
    }
    for (Rel& rel : rels_) {
      const int64_t edges = rel.bp[rel.n];
      rel.indices = pooled_empty(edges, at::kLong);
      rel.bi = rel.indices.template data_ptr<int64_t>();
      if (return_eids_) {
        rel.eids = pooled_empty(edges, at::kLong);
        rel.eid = rel.eids.template data_ptr<int64_t>();
      }
    }
    map_dirty_.store(false);
    bad_index_.store(kNoError);
    bad_table_.store(kNoError);
    make_items(kChunk);
    if (disjoint_) {
      reset_disjoint_map(num_dst_ + block_edges);
      DisjointMap::Slot* const slots = disjoint_map_.slots();
      for (int64_t t = 0; t < num_types_; ++t) {
        for (int64_t i = dst_begin_[t]; i < dst_begin_[t + 1]; ++i) {
          // random writes into the layer's cold map: its first probes prefetched for writing
          if (i + kRelabelPrefetchAhead < num_dst_) {
            __builtin_prefetch(slots + disjoint_map_.slot(d[i + kRelabelPrefetchAhead]), 1);
          }
          disjoint_map_.insert_new(d[i], i - dst_begin_[t]);
        }
      }
      return {static_cast<int64_t>(items_.size()),
              [this](int64_t c) { sample_chunk(items_[c]); },
              [this](int64_t c) { relabel_disjoint_chunk(items_[c]); }};
    }
    if (parallel_relabel_) {  // each chunk claims its new nodes' first positions as it goes
      firsts_.assign(items_.size(), 0);
      return {static_cast<int64_t>(items_.size()), [this](int64_t c) {
                sample_chunk(items_[c]);
                claim_chunk(c);
              }};
    }
    return {static_cast<int64_t>(items_.size()), [this](int64_t c) { sample_chunk(items_[c]); },
            [this](int64_t c) { relabel_chunk(items_[c]); }};
  }

  // The parallel relabel's second pass, once every chunk has claimed (if `needed`: else no
  // items): each claim checks that it holds its node's map entry.
  TeamStep plan_verify(bool needed) {
    repaired_.store(false);
    return {needed ? static_cast<int64_t>(items_.size()) : 0,
            [this](int64_t c) { verify_chunk(c); }};
  }

  // Its third pass: each chunk's first appearances take the next ids of their type from the
  // chunk's offset (the firsts of the chunks before it, relations in order), as the ordered
  // pass would number them.
  TeamStep plan_assign() {
    for (size_t c = 0; c < items_.size(); ++c) {
      const int64_t t = rels_[items_[c].rel].src_type;
      const int64_t firsts = firsts_[c];
      firsts_[c] = next_[t];  // from here on: the chunk's first id
      next_[t] += firsts;
    }
    return {static_cast<int64_t>(items_.size()), [this](int64_t c) { assign_chunk(c); }};
  }

  // Its last pass over the layer just finished, after the assign pass: the entries of nodes
  // that are not first appearances read their ids from the map.
  void collect_resolve_items() {
    resolve_items_.clear();
    for (const Rel& rel : rels_) {
      const int64_t edges = rel.bp[rel.n];
      for (int64_t b = 0; b < edges; b += kResolveChunk) {
        resolve_items_.push_back({rel.bi, b, std::min(edges, b + kResolveChunk)});
      }
    }
  }

  TeamStep plan_resolve() {
    collect_resolve_items();
    return {static_cast<int64_t>(resolve_items_.size()),
            [this](int64_t c) { resolve_chunk(resolve_items_[c]); }};
  }

  // Empties the disjoint map for the layer planned: `entries` keys, its destinations and at
  // most one new source per edge, counted per seed (a key's seed index is its destination's).
  void reset_disjoint_map(int64_t entries) {
    const int64_t* d = dst_.data_ptr<int64_t>();
    const auto seeds = static_cast<int64_t>(seed_time_.size());  // one time per seed
    std::vector<int64_t> keys(seeds, 0);
    for (int64_t i = 0; i < num_dst_; ++i) ++keys[d[i] >> shift_];
    for (const Rel& rel : rels_) {
      for (int64_t i = 0; i < rel.n; ++i) keys[rel.d[i] >> shift_] += rel.bp[i + 1] - rel.bp[i];
    }
    const int64_t per_seed = keys.empty() ? 0 : *std::max_element(keys.begin(), keys.end());
    disjoint_map_.reset(entries, seeds, per_seed, shift_);
  }

  // (2) Sample a chunk: first the picked positions (random numbers only, sequential writes),
  // then a gather of the neighbour ids with prefetching, so the random reads of `indices`
  // (mostly one cache line per pick: frontiers favour hubs) overlap.
  void sample_chunk(const Item& item) {
    const Rel& rel = rels_[item.rel];
    if (rel.weights) {
      thread_local std::vector<int64_t> thread_ids;  // the chunk's neighbour ids
      const int64_t e_begin = rel.bp[item.begin], e_end = rel.bp[item.end];
      if (static_cast<int64_t>(thread_ids.size()) < e_end - e_begin) thread_ids.resize(e_end - e_begin);
      weighted_pick_chunk(rel, item.begin, item.end, thread_ids.data());
      weighted_gather_chunk(rel, item.rel, e_begin, e_end, thread_ids.data());
    } else {
      pick_chunk(rel, item.begin, item.end);
      gather_chunk(rel, item.rel, rel.bp[item.begin], rel.bp[item.end]);
    }
    if (disjoint_) tag_seeds(rel, item.begin, item.end);
  }

  // The parallel relabel, pass 1 (chunk c, just sampled): a node mapped before the layer takes
  // its id (its map entry checked as relabel_chunk does); a new node is marked kNewNode, and
  // where its position is smaller than the one its map entry holds, it claims its first
  // appearance there (kFirstSeen) and writes its position. Plain stores, no locked
  // instruction: two threads may write one entry at once and the smaller position be lost,
  // which the verification repairs. Branch-free, as relabel_chunk: a new node is about as
  // likely as a mapped one, a claim as likely as none.
  void claim_chunk(int64_t c) {
    const Item& item = items_[c];
    const Rel& rel = rels_[item.rel];
    int64_t* ids = rel.bi;  // locals: see count_range
    const int64_t* sources = srcs_[rel.src_type];
    int32_t* const node_map = map_;
    const int64_t mapped = next_[rel.src_type];  // ids given before this layer
    const int64_t base = rel_base_[item.rel];
    const int32_t layer_end = first_position_code(layer_edges_);
    int32_t unused = 0;  // where a store that claims nothing goes
    bool all_ok = true;
    const int64_t e_end = rel.bp[item.end];
    for (int64_t e = rel.bp[item.begin]; e < e_end; ++e) {
      if (e + kRelabelPrefetchAhead < e_end && ids[e + kRelabelPrefetchAhead] >= 0) {
        __builtin_prefetch(node_map + ids[e + kRelabelPrefetchAhead], 1);
      }
      if (e + kOwnerPrefetchAhead < e_end && ids[e + kOwnerPrefetchAhead] >= 0) {
        // The map entry was prefetched above; prefetch the check's read of `sources` next.
        const int32_t m_ahead = std::atomic_ref<int32_t>(node_map[ids[e + kOwnerPrefetchAhead]])
                                    .load(std::memory_order_relaxed);
        __builtin_prefetch(sources + (map_id_in_range(m_ahead, mapped) ? m_ahead : 0));
      }
      const int64_t u = ids[e];
      if (u < 0) {  // a bad index (raised after the layer)
        ids[e] = 0;
        continue;
      }
      const int32_t m = std::atomic_ref<int32_t>(node_map[u]).load(std::memory_order_relaxed);
      const int32_t code = first_position_code(base + e);
      // A destination or a source of an earlier layer (m >= 0), checked; else unmapped (-1) or
      // a position of this layer (below -1; one outside the layer was there on entry).
      const bool in_range = map_id_in_range(m, mapped);
      const int64_t mapped_mask = -static_cast<int64_t>(m >= 0);
      const int64_t owner = sources[in_range ? m : 0];
      all_ok &= m >= 0 ? in_range & (owner == u) : (m == kUnmapped) | (m < layer_end);
      const bool claim = (m < 0) & (code < m);
      std::atomic_ref<int32_t>(claim ? node_map[u] : unused)
          .store(code, std::memory_order_relaxed);
      const int64_t marked = u | kNewNode | (claim ? kFirstSeen : 0);
      ids[e] = ((in_range ? m : 0) & mapped_mask) | (marked & ~mapped_mask);
    }
    if (!all_ok) map_dirty_.store(true, std::memory_order_relaxed);
  }

  // Pass 2 (every chunk claimed): a claim keeps its mark where the map entry holds its
  // position, drops it where the entry holds a smaller one, and where the entry holds a larger
  // one (its store was lost to another thread's) lowers it to its own (an atomic minimum) and
  // asks for a second verification, since claims verified before the repair may have seen the
  // larger one. After one verification the entry holds the smallest claim, which a second one
  // leaves alone, so two always suffice. Counts the chunk's first appearances (the claims whose
  // position the entry holds); writes no block entry.
  void verify_chunk(int64_t c) {
    const Item& item = items_[c];
    const Rel& rel = rels_[item.rel];
    int64_t* ids = rel.bi;  // locals: see count_range
    int32_t* const node_map = map_;
    const int64_t base = rel_base_[item.rel];
    int32_t unclaimed = 0;  // what a load for an entry without a claim reads
    int64_t firsts = 0;
    bool repaired = false;
    const int64_t e_end = rel.bp[item.end];
    for (int64_t e = rel.bp[item.begin]; e < e_end; ++e) {
      if (e + kRelabelPrefetchAhead < e_end) {
        __builtin_prefetch(node_map + marked_node(ids[e + kRelabelPrefetchAhead], kFirstSeen));
      }
      const int64_t v = ids[e];
      const bool claim = v & kFirstSeen;
      std::atomic_ref<int32_t> entry(claim ? node_map[v & kNodeBits] : unclaimed);
      int32_t m = entry.load(std::memory_order_relaxed);
      const int32_t code = claim ? first_position_code(base + e) : 0;
      if (m > code) [[unlikely]] {  // a lost store: take the entry back
        while (code < m && !entry.compare_exchange_weak(m, code, std::memory_order_relaxed)) {
        }
        repaired = true;
        m = code;
      }
      firsts += claim & (m == code);  // read only: the assign pass checks the claim again
    }
    firsts_[c] = firsts;
    if (repaired) repaired_.store(true, std::memory_order_relaxed);
  }

  // Pass 3: the chunk's first appearances (the claims whose position their map entry holds)
  // take their ids, in order, and enter the map and the type's source list. Another chunk's
  // claim on the same node, checked at once, sees either the first's position or its id: never
  // its own position. Branch-free (see claim_chunk).
  void assign_chunk(int64_t c) {
    const Item& item = items_[c];
    const Rel& rel = rels_[item.rel];
    int64_t* ids = rel.bi;  // locals: see count_range
    int64_t* sources = srcs_[rel.src_type];
    int32_t* const node_map = map_;
    const int64_t base = rel_base_[item.rel];
    int32_t unused_entry = 0;  // where the stores of an entry that is no first appearance go:
    int64_t unused_source = 0;  // the next chunk's threads write its first ids
    int64_t fresh_id = firsts_[c];
    const int64_t e_end = rel.bp[item.end];
    for (int64_t e = rel.bp[item.begin]; e < e_end; ++e) {
      if (e + kRelabelPrefetchAhead < e_end) {
        __builtin_prefetch(node_map + marked_node(ids[e + kRelabelPrefetchAhead], kFirstSeen), 1);
      }
      const int64_t v = ids[e];
      const int64_t u = v & kNodeBits;
      const bool claim = v & kFirstSeen;
      std::atomic_ref<int32_t> entry(claim ? node_map[u] : unused_entry);
      const bool first = claim & (entry.load(std::memory_order_relaxed) ==
                                  first_position_code(base + e));
      std::atomic_ref<int32_t>(first ? node_map[u] : unused_entry)
          .store(static_cast<int32_t>(fresh_id), std::memory_order_relaxed);
      (first ? sources[fresh_id] : unused_source) = u;
      ids[e] = first ? fresh_id : v;
      fresh_id += first;
    }
  }

  // Pass 4 (beside the next layer's counting): the other appearances of new nodes read the ids
  // their first ones took. A new node whose entry is still a position had no first appearance:
  // its entry held a smaller position on entry to the op. Branch-free (see claim_chunk).
  void resolve_chunk(const ResolveItem& item) {
    int64_t* ids = item.ids;
    const int32_t* const node_map = map_;
    bool all_ok = true;
    for (int64_t e = item.begin; e < item.end; ++e) {
      if (e + kRelabelPrefetchAhead < item.end) {
        __builtin_prefetch(node_map + marked_node(ids[e + kRelabelPrefetchAhead], kNewNode));
      }
      const int64_t v = ids[e];
      const bool fresh = v & kNewNode;
      const int32_t m = node_map[marked_node(v, kNewNode)];
      all_ok &= !fresh | (m >= 0);
      ids[e] = fresh ? (m >= 0 ? m : 0) : v;
    }
    if (!all_ok) map_dirty_.store(true, std::memory_order_relaxed);
  }

  // A temporal call's picks of destinations [begin, end) take their destination's seed index
  // (the key's high bits): the sources of two seeds stay apart.
  void tag_seeds(const Rel& rel, int64_t begin, int64_t end) const {
    int64_t* ids = rel.bi;  // locals: see count_range
    const int64_t* offsets = rel.bp;
    const int64_t* dst_ids = rel.d;
    const int64_t seed_bits = ~node_mask_;
    for (int64_t i = begin; i < end; ++i) {
      const int64_t tag = dst_ids[i] & seed_bits;
      for (int64_t e = offsets[i]; e < offsets[i + 1]; ++e) {
        if (ids[e] >= 0) ids[e] |= tag;  // -1: a bad index, raised after the layer
      }
    }
  }

  // The picked positions of destinations [begin, end) into bi[bp[begin]..bp[end]).
  void pick_chunk(const Rel& rel, int64_t begin, int64_t end) {
    const int64_t* offsets = rel.bp;  // locals: see count_range
    const int64_t* dst_ids = rel.d;
    const int64_t *starts = start_ + rel.seg, *degrees = degree_ + rel.seg;
    int64_t* picks = rel.bi;
    const int64_t layer_fanout = rel.fanout;
    const uint64_t stream = rel.stream;
    thread_local std::vector<uint64_t> thread_bitmap;  // all zero between destinations
    std::vector<uint64_t>& bitmap = thread_bitmap;  // looked up once, not per destination
    for (int64_t i = begin; i < end; ++i) {
      const int64_t count = offsets[i + 1] - offsets[i];
      if (count == 0) continue;
      const uint64_t key = node_key(stream, static_cast<uint64_t>(dst_ids[i]));
      pick_positions(starts[i], degrees[i], count, layer_fanout, replace_, key,
                     picks + offsets[i], bitmap);
      if (rel.excluded.count) {  // offsets among the kept neighbours -> their positions
        const ExcludedSpan after = excluded_from(rel.excluded, starts[i]);
        for (int64_t* p = picks + offsets[i]; p < picks + offsets[i + 1]; ++p) {
          *p = skip_excluded(*p, after.excluded, after.n, 0);
        }
      }
    }
  }

  // pick_chunk for a weighted relation (weighted_picks.h), in three passes over destinations
  // [begin, end):
  // (1) the first table draw of each pick of a destination whose picks start with one
  //     (first_draws_from_table): its slot's position into bi, its coin into `ids` (random
  //     numbers only, sequential writes; -1 in bi for the other destinations' picks);
  // (2) those slots' table entries read as gather_chunk reads `indices`, prefetched a fixed
  //     number of picks ahead, so that their random reads overlap across destinations: the
  //     drawn offset's position into bi, its neighbour id into `ids`;
  // (3) each destination resolved by weighted_positions, which takes the first draws from
  //     there: draws on picked offsets drawn again, exact picks, take-all and timed ones. A
  //     destination of table draws (of at most kDeferredPicksMax picks) whose draw lands on a
  //     picked offset waits for its redraw's entry (prefetched) while up to kRedrawsInFlight
  //     others are resolved (resume_drawn_picks: the same picks).
  // Positions end in bi, their neighbour ids (from the table entries, or `indices` for picks
  // that are not table draws) in `ids` at the same offsets from bp[begin].
  void weighted_pick_chunk(const Rel& rel, int64_t begin, int64_t end, int64_t* ids) {
    constexpr int64_t S = kTableWords<IdT>;
    const int64_t* offsets = rel.bp;  // locals: see count_range
    const int64_t* dst_ids = rel.d;
    const int64_t *starts = start_ + rel.seg, *degrees = degree_ + rel.seg;
    const float* weights = rel.weights;
    const int64_t* table = rel.table;
    const IdT* ix = rel.ix;
    int64_t* picks = rel.bi;
    const int64_t base = offsets[begin], e_end = offsets[end];
    const bool attempts = !replace_;
    const bool last = rel.times && spec_.temporal_strategy == kTemporalLast;  // a mask
    thread_local std::vector<uint8_t> thread_marks;  // exact picks' scratch (weighted_picks.h)
    std::vector<uint8_t>& marks = thread_marks;  // looked up once, not per destination
    thread_local std::vector<double> thread_sums;  // a timed destination's running sums
    std::vector<double>& sums = thread_sums;
    // A timed relation's candidates of destination i (count_timed), else null: the whole list.
    auto range_of = [&](int64_t i) {
      return rel.times ? candidates_.data() + 2 * (rel.seg + i) : nullptr;
    };
    auto context_of = [&](int64_t i) {
      const int64_t start = starts[i], degree = code_degree(degrees[i]);
      const ExcludedSpan near = excluded_near(rel.excluded, start, start + degree);
      const int64_t* range = range_of(i);
      return pick_context(attempts ? marks.data() : nullptr, near.excluded, near.n, start,
                          range ? range[0] : 0, range ? range[1] : degree);
    };
    for (int64_t i = begin; i < end; ++i) {  // (1)
      int64_t* out = picks + offsets[i];
      const int64_t count = offsets[i + 1] - offsets[i];
      if (count == 0) continue;
      if (!first_draws_from_table(degrees[i], replace_, context_of(i), last)) {
        std::fill(out, out + count, int64_t{-1});
        continue;
      }
      const uint64_t key = node_key(rel.stream, static_cast<uint64_t>(dst_ids[i]));
      int64_t* coins = ids + (offsets[i] - base);
      for (int64_t n = 0; n < count; ++n) {
        const uint64_t index = first_draw_index(n, replace_);
        out[n] = starts[i] + table_slot(degrees[i], key, index);
        coins[n] = table_coin(key, index);
      }
    }
    for (int64_t i = begin, e = base; i < end; ++i) {  // (2)
      const int64_t start = starts[i], degree = code_degree(degrees[i]);
      const bool drawn = e < offsets[i + 1] && picks[e] >= 0;
      for (; e < offsets[i + 1]; ++e) {
        if (e + kGatherPrefetchAhead < e_end && picks[e + kGatherPrefetchAhead] >= 0) {
          __builtin_prefetch(table + picks[e + kGatherPrefetchAhead] * S);
        }
        if (!drawn) continue;
        int64_t id = 0;
        const int64_t offset = entry_pick<IdT>(table + start * S, degree, picks[e] - start,
                                               static_cast<uint32_t>(ids[e - base]), &id);
        picks[e] = start + offset;
        ids[e - base] = id;
      }
    }
    // (3): destinations waiting on a redraw's entry, oldest first (a ring).
    struct Waiting {
      int64_t i;
      DrawProgress progress;
    };
    std::array<Waiting, kRedrawsInFlight> waiting;
    int64_t oldest = 0, held = 0;
    auto resume = [&](int64_t i, DrawProgress progress) {
      const int64_t start = starts[i];
      const uint64_t key = node_key(rel.stream, static_cast<uint64_t>(dst_ids[i]));
      const PickOut po{start, picks + offsets[i], ids + (offsets[i] - base)};
      const int64_t slot =
          resume_drawn_picks<IdT>(weights + start, table + start * S, degrees[i],
                                  offsets[i + 1] - offsets[i], key, po, context_of(i), progress);
      if (slot < 0) return;
      const int64_t* entry = table + (start + slot) * S;
      __builtin_prefetch(entry);
      __builtin_prefetch(entry + S - 1);  // (an int64 entry, 24 bytes, may cross a line)
      waiting[(oldest + held++) % kRedrawsInFlight] = {i, progress};
    };
    auto resume_oldest = [&] {
      const Waiting w = waiting[oldest];
      oldest = (oldest + 1) % kRedrawsInFlight;
      --held;
      resume(w.i, w.progress);
    };
    for (int64_t i = begin; i < end; ++i) {  // (3)
      const int64_t ahead = i + kWeightedPrefetchAhead;
      const int64_t* ahead_range = ahead < end ? range_of(ahead) : nullptr;
      if (last && ahead_range) {
        // "last" with a mask reads no table entry: its weights and ids back from the end of
        // its candidates (weighted_last)
        const int64_t from = starts[ahead] + ahead_range[1] - 1;
        if (ahead_range[1] > ahead_range[0]) {
          __builtin_prefetch(weights + from);
          __builtin_prefetch(ix + from);
        }
      } else if (attempts && ahead_range &&
                 2 * (ahead_range[1] - ahead_range[0]) < code_degree(degrees[ahead])) {
        // drawn over its running sums (weighted_picks.h): no table entry, its weights read
        __builtin_prefetch(weights + starts[ahead] + ahead_range[0]);
      } else if (ahead < end && (weighted_takes_all(degrees[ahead]) ||
                                 (attempts && code_degree(degrees[ahead]) <= kTreeLeaves))) {
        // taking its positive weights, or picking by a sum tree: its weights read in order
        const float* first = weights + starts[ahead];
        const int64_t read = std::min(code_degree(degrees[ahead]), kTreeLeaves);
        for (int64_t j = 0; j < read; j += 64 / sizeof(float)) __builtin_prefetch(first + j);
      }
      const int64_t count = offsets[i + 1] - offsets[i];
      if (count == 0) continue;
      const uint64_t key = node_key(rel.stream, static_cast<uint64_t>(dst_ids[i]));
      const int64_t start = starts[i];
      const PickOut po{start, picks + offsets[i], ids + (offsets[i] - base)};
      if (attempts && !weighted_takes_all(degrees[i]) &&
          static_cast<int64_t>(marks.size()) < degrees[i]) {
        marks.resize(degrees[i], 0);  // only successive sampling marks its picks
      }
      PickContext ctx = context_of(i);
      if (attempts && count <= kDeferredPicksMax &&
          first_draws_from_table(degrees[i], replace_, ctx, last)) {
        while (held == kRedrawsInFlight) resume_oldest();
        resume(i, DrawProgress{});
        continue;
      }
      if (rel.times && attempts) {  // scratch for running sums (PickMethod::kSums)
        if (static_cast<int64_t>(sums.size()) < ctx.end - ctx.begin) {
          sums.resize(ctx.end - ctx.begin);
        }
        ctx.sums = sums.data();
      }
      weighted_positions<IdT>(weights + start, table + start * S, degrees[i], count, replace_,
                              key, po, ctx, last, /*first_drawn=*/true);
    }
    while (held > 0) resume_oldest();
  }

  // gather_chunk for a weighted relation: the ids are those weighted_pick_chunk read from the
  // table entries, and for its other picks (kIdFromIndices) those of `indices`, read here with
  // prefetching as gather_chunk reads them.
  void weighted_gather_chunk(const Rel& rel, int64_t r, int64_t e_begin, int64_t e_end,
                             const int64_t* ids) {
    int64_t* picks = rel.bi;  // locals: see count_range
    const IdT* ix = rel.ix;
    const int64_t src_nodes = rel.num_src_nodes, src_offset = rel.src_offset;
    if (rel.eid && e_end > e_begin) {
      std::memcpy(rel.eid + e_begin, picks + e_begin, (e_end - e_begin) * sizeof(int64_t));
    }
    const int64_t* chunk_ids = ids - e_begin;  // indexed by edge
    for (int64_t e = e_begin; e < e_end; ++e) {
      const int64_t ahead = e + kGatherPrefetchAhead;
      if (ahead < e_end && chunk_ids[ahead] == kIdFromIndices) {
        __builtin_prefetch(ix + picks[ahead]);
      }
      const bool from_table = chunk_ids[e] != kIdFromIndices;
      const int64_t u = from_table ? chunk_ids[e] : static_cast<int64_t>(ix[picks[e]]);
      if (static_cast<uint64_t>(u) >= static_cast<uint64_t>(src_nodes)) {
        // An id out of range: `indices` holds it, or the table does where `indices` does not.
        const bool table_only =
            from_table && static_cast<uint64_t>(ix[picks[e]]) < static_cast<uint64_t>(src_nodes);
        atomic_min(table_only ? bad_table_ : bad_index_, (r << kRelShift) | picks[e]);
        picks[e] = -1;  // skipped by the relabel; the error is raised after the layer
        continue;
      }
      picks[e] = u + src_offset;
    }
  }

  // Replaces the positions bi[e_begin..e_end) by the (global) neighbour ids they hold, keeping
  // the positions as edge ids if asked; an id outside its type's range is recorded and its
  // edge marked -1.
  void gather_chunk(const Rel& rel, int64_t r, int64_t e_begin, int64_t e_end) {
    int64_t* picks = rel.bi;  // locals: see count_range
    const IdT* ix = rel.ix;
    const int64_t src_nodes = rel.num_src_nodes, src_offset = rel.src_offset;
    if (rel.eid && e_end > e_begin) {
      std::memcpy(rel.eid + e_begin, picks + e_begin, (e_end - e_begin) * sizeof(int64_t));
    }
    for (int64_t e = e_begin; e < e_end; ++e) {
      if (e + kGatherPrefetchAhead < e_end) {
        __builtin_prefetch(ix + picks[e + kGatherPrefetchAhead]);
      }
      const int64_t u = ix[picks[e]];
      if (static_cast<uint64_t>(u) >= static_cast<uint64_t>(src_nodes)) {
        atomic_min(bad_index_, (r << kRelShift) | picks[e]);
        picks[e] = -1;  // skipped by the relabel; the error is raised after the layer
        continue;
      }
      picks[e] = u + src_offset;
    }
  }

  // (3) Relabel a chunk in place, within its relation's source type: the type's destinations
  // keep ids 0..n-1 (the previous layer mapped them so), new sources take the type's next ids
  // in first-occurrence order; chunks come in order, so the result does not depend on threads. Branch-free (a new node is as likely as
  // a seen one, so a branch mispredicts half the time), with the map entries prefetched. An
  // entry the op did not write (relabel.h) can only come from a map that was not all -1 on
  // entry: it is reported after the layer and its output discarded. Its check (`src[m] == u`,
  // a random read) only feeds that report, never the next id, so it stays off the loop's
  // dependency chain; an entry out of range is never read through.
  void relabel_chunk(const Item& item) {
    const Rel& rel = rels_[item.rel];
    int64_t* ids = rel.bi;  // locals: see count_range
    int64_t* sources = srcs_[rel.src_type];
    int32_t* const node_map = map_;
    int64_t fresh_id = next_[rel.src_type];
    bool all_ok = true;
    const int64_t e_end = rel.bp[item.end];
    for (int64_t e = rel.bp[item.begin]; e < e_end; ++e) {
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
    next_[rel.src_type] = fresh_id;
    if (!all_ok) map_dirty_.store(true, std::memory_order_relaxed);
  }

  // relabel_chunk for a temporal call: the keys (seed, node) through disjoint_map_, which holds
  // the layer's destinations; new keys take the type's next ids in first-occurrence order.
  void relabel_disjoint_chunk(const Item& item) {
    const Rel& rel = rels_[item.rel];
    int64_t* ids = rel.bi;  // locals: see count_range
    int64_t* sources = srcs_[rel.src_type];
    int64_t fresh_id = next_[rel.src_type];
    DisjointMap::Slot* const slots = disjoint_map_.slots();
    const uint32_t generation = disjoint_map_.generation();
    const int64_t e_end = rel.bp[item.end];
    for (int64_t e = rel.bp[item.begin]; e < e_end; ++e) {
      if (e + kRelabelPrefetchAhead < e_end && ids[e + kRelabelPrefetchAhead] >= 0) {
        __builtin_prefetch(slots + disjoint_map_.slot(ids[e + kRelabelPrefetchAhead]));
      }
      const int64_t key = ids[e];
      if (key < 0) {  // a bad index (raised after the layer)
        ids[e] = 0;
        continue;
      }
      int64_t at = disjoint_map_.slot(key);
      while (slots[at].generation == generation && slots[at].key != key) {
        at = disjoint_map_.next(at);
      }
      if (slots[at].generation != generation) {  // a new key
        slots[at] = {key, static_cast<int32_t>(fresh_id), generation};
        sources[fresh_id++] = key;
      }
      ids[e] = slots[at].id;
    }
    next_[rel.src_type] = fresh_id;
  }

  // Ends the layer just sampled: its errors, its source lists (the next layer's destinations).
  void finish_layer() {
    if (bad_table_.load() != kNoError) {
      const int64_t r = bad_table_.load() >> kRelShift;
      TORCH_CHECK(false, "alias_tables",
                  num_rels_ > 1 ? " of relation " + std::to_string(r) : std::string(),
                  " does not belong to its indices (it is not what weight_table built for "
                  "them): a draw at position ", bad_table_.load() & kPosMask,
                  " gives a node id outside [0, ", rels_[r].num_src_nodes, ")");
    }
    if (bad_index_.load() != kNoError) {
      const int64_t r = bad_index_.load() >> kRelShift;
      detail_.bad_index_rel = r;
      detail_.bad_index_pos = bad_index_.load() & kPosMask;
      detail_.bad_index_value = static_cast<int64_t>(rels_[r].ix[detail_.bad_index_pos]);
      detail_.bad_index_limit = rels_[r].num_src_nodes;
      raise_sample_error(kBadIndex, detail_, num_nodes_, !spec_.homogeneous());
    }
    raise_dirty_map();
    const int64_t base = per_layer_ * layer_;
    const int64_t per_rel = return_eids_ ? 3 : 2;
    for (int64_t r = 0; r < num_rels_; ++r) {
      out_[base + per_rel * r] = rels_[r].indptr;
      out_[base + per_rel * r + 1] = rels_[r].indices;
      if (return_eids_) out_[base + per_rel * r + 2] = rels_[r].eids;
    }
    const int64_t types_base = base + per_rel * num_rels_;
    for (int64_t t = 0; t < num_types_; ++t) dst_begin_[t + 1] = dst_begin_[t] + next_[t];
    if (disjoint_) {  // per type its ids and their seeds' indices; the keys go on
      dst_ = pooled_empty(dst_begin_[num_types_], at::kLong);
      int64_t* all = dst_.data_ptr<int64_t>();
      split_items_.clear();
      for (int64_t t = 0; t < num_types_; ++t) {
        const int64_t n = next_[t];
        at::Tensor src_nodes = pooled_empty(n, at::kLong), src_seeds = pooled_empty(n, at::kLong);
        if (n) std::memcpy(all + dst_begin_[t], srcs_[t], n * sizeof(int64_t));
        // split by the next step's team (the next layer's counting, or the clearing)
        for (int64_t b = 0; b < n; b += kSplitChunk) {
          split_items_.push_back({all + dst_begin_[t], src_nodes.data_ptr<int64_t>(),
                                  src_seeds.data_ptr<int64_t>(), spec_.offsets[t], b,
                                  std::min(n, b + kSplitChunk)});
        }
        out_[types_base + t] = src_nodes;
        out_[types_base + num_types_ + t] = src_seeds;
      }
    } else if (num_types_ == 1) {  // global ids are the node ids: the sources are the next layer's list
      at::Tensor src_nodes = pooled_empty(next_[0], at::kLong);
      if (next_[0]) std::memcpy(src_nodes.data_ptr<int64_t>(), srcs_[0], next_[0] * 8);
      out_[types_base] = src_nodes;
      dst_ = src_nodes;
    } else {  // per type its ids; the next layer's list holds every type's global ids
      dst_ = pooled_empty(dst_begin_[num_types_], at::kLong);
      int64_t* all = dst_.data_ptr<int64_t>();
      for (int64_t t = 0; t < num_types_; ++t) {
        const int64_t n = next_[t], offset = spec_.offsets[t];
        at::Tensor src_nodes = pooled_empty(n, at::kLong);
        int64_t* out = src_nodes.data_ptr<int64_t>();
        const int64_t* from = srcs_[t];
        if (n) std::memcpy(all + dst_begin_[t], from, n * sizeof(int64_t));
        for (int64_t i = 0; i < n; ++i) out[i] = from[i] - offset;
        out_[types_base + t] = src_nodes;
      }
    }
    num_dst_ = dst_begin_[num_types_];
  }

  // The last step: every node the map holds is an input node (each layer's sources include its
  // destinations), so clearing just those restores the all -1 invariant.
  TeamStep plan_clear() {
    if (disjoint_) {  // a temporal call never wrote the map: the last layer's split is left
      return {static_cast<int64_t>(split_items_.size()),
              [this](int64_t c) { split_chunk(split_items_[c]); }};
    }
    const int64_t* input_nodes = dst_.data_ptr<int64_t>();
    const int64_t n = num_dst_;
    int32_t* const map = map_;
    return {(n + kClearChunk - 1) / kClearChunk, [=](int64_t c) {
              const int64_t end = std::min(n, (c + 1) * kClearChunk);
              for (int64_t i = c * kClearChunk; i < end; ++i) {  // random writes: prefetched
                if (i + kRelabelPrefetchAhead < end) {
                  __builtin_prefetch(map + input_nodes[i + kRelabelPrefetchAhead], 1);
                }
                map[input_nodes[i]] = kUnmapped;
              }
            }};
  }

  // A temporal call's output split (finish_layer), one item.
  void split_chunk(const SplitItem& item) const {
    const int64_t mask = node_mask_, offset = item.offset;
    const int shift = shift_;
    for (int64_t i = item.begin; i < item.end; ++i) {
      item.nodes[i] = (item.keys[i] & mask) - offset;
      item.seeds[i] = item.keys[i] >> shift;
    }
  }

  // Errors found in parallel are recorded as (relation << kRelShift) | position, so that the
  // smallest is the first relation's smallest position.
  static constexpr int kRelShift = 47;
  static constexpr int64_t kPosMask = (int64_t{1} << kRelShift) - 1;

  // The inputs.
  const TypedSpec& spec_;
  const int64_t num_nodes_, num_types_, num_rels_;
  int32_t* const map_;
  const int64_t num_layers_;
  const bool replace_;
  const int64_t seed_, batch_id_;
  const bool return_eids_;
  const int64_t per_layer_;

  std::vector<at::Tensor> out_;
  SampleErrorDetail detail_;
  std::vector<int64_t>& scratch_;
  std::vector<Rel> rels_;
  std::vector<Item> items_;

  // The layer being sampled: its destinations (the previous layer's sources, global ids, type
  // t's at dst_[dst_begin_[t] .. dst_begin_[t + 1])).
  at::Tensor dst_;
  int64_t num_dst_ = 0;
  std::vector<int64_t> dst_begin_;
  int64_t layer_;
  // Scratch: per relation and destination the first neighbour position and the degree, and per
  // type its source list srcs_[t][0..next_[t]).
  int64_t *start_ = nullptr, *degree_ = nullptr;
  std::vector<int64_t*> srcs_;
  std::vector<int64_t> next_;
  int64_t segs_ = 0;
  // The parallel relabel (relabel_mode.h): the layer's edges, per relation its first position
  // over the layer's blocks; per item of the sample step its first appearances (verify), then
  // its first id (assign); the resolve pass's items.
  bool parallel_relabel_ = false;
  int64_t layer_edges_ = 0;
  std::vector<int64_t> rel_base_, firsts_;
  std::atomic<bool> repaired_{false};  // a verification took back a lost store
  std::vector<ResolveItem> resolve_items_;
  std::vector<SplitItem> split_items_;  // a temporal call's output split (finish_layer)
  // A temporal call with a timed and weighted relation: per destination (as start_) its
  // candidates [begin, end) as offsets into its list (count_timed; weighted_pick_chunk).
  bool weighted_timed_ = false;
  std::vector<int64_t> candidates_;
  // What its steps found: a map entry the op did not write, the smallest bad node / position.
  std::atomic<bool> map_dirty_{false};
  std::atomic<int64_t> bad_indptr_{kNoError}, bad_index_{kNoError}, bad_table_{kNoError};
  // A temporal call (spec.temporal()): its nodes are keys (seed index << shift_ | global id),
  // relabelled through disjoint_map_; seed_time_ holds every seed's time, types in order.
  const bool disjoint_;
  int shift_ = 0;
  int64_t node_mask_ = -1;  // all ones unless disjoint_: a key's global id is key & node_mask_
  std::vector<int64_t> seed_time_;
  DisjointMap& disjoint_map_;
};

std::vector<at::Tensor> run_sample_call(const TypedSpec& spec, bool replace, int64_t seed,
                                        int64_t batch_id, bool return_eids,
                                        at::Tensor& node_map) {
  if (spec.rels[0].indices.scalar_type() == at::kInt) {
    return SampleCall<int32_t>(spec, replace, seed, batch_id, return_eids, node_map).run();
  }
  return SampleCall<int64_t>(spec, replace, seed, batch_id, return_eids, node_map).run();
}

// The op writes node_map: it may not share memory with an input.
void check_map_overlap(const TypedSpec& spec, const at::Tensor& node_map) {
  for (const RelationSpec& rel : spec.rels) {
    at::assert_no_overlap(node_map, rel.indptr);
    at::assert_no_overlap(node_map, rel.indices);
    if (rel.weighted()) {
      at::assert_no_overlap(node_map, rel.weights);
      at::assert_no_overlap(node_map, rel.table);
      at::assert_no_overlap(node_map, rel.nonzero);
    }
    if (rel.times.defined()) at::assert_no_overlap(node_map, rel.times);
    if (rel.excluded.defined()) at::assert_no_overlap(node_map, rel.excluded);
  }
  for (const at::Tensor& s : spec.seeds) at::assert_no_overlap(node_map, s);
  for (const at::Tensor& s : spec.seed_times) at::assert_no_overlap(node_map, s);
}

void check_cpu(const TypedSpec& spec, const at::Tensor& node_map) {
  auto on_cpu = [](const at::Tensor& t) { return t.device().is_cpu(); };
  bool all_cpu = on_cpu(node_map);
  for (const RelationSpec& rel : spec.rels) {
    all_cpu &= on_cpu(rel.indptr) && on_cpu(rel.indices);
    if (rel.weighted()) all_cpu &= on_cpu(rel.weights) && on_cpu(rel.table) && on_cpu(rel.nonzero);
    if (rel.times.defined()) all_cpu &= on_cpu(rel.times);
    if (rel.excluded.defined()) all_cpu &= on_cpu(rel.excluded);
  }
  for (const at::Tensor& s : spec.seeds) all_cpu &= on_cpu(s);
  for (const at::Tensor& s : spec.seed_times) all_cpu &= on_cpu(s);
  TORCH_CHECK(all_cpu, "every tensor argument of the CPU op must be a CPU tensor");
}

std::vector<at::Tensor> sample_fused_cpu(const at::Tensor& indptr, const at::Tensor& indices,
                                         const at::Tensor& seeds, at::IntArrayRef fanouts,
                                         bool replace, int64_t seed, int64_t batch_id,
                                         at::Tensor node_map) {
  check_sample_args(indptr, indices, seeds, fanouts, node_map);
  const std::vector<int64_t> num_nodes{indptr.numel() - 1}, zero{0};
  const TypedSpec spec = make_typed_spec({indptr}, {indices}, zero, zero, num_nodes, {seeds},
                                         fanouts, node_map, 1);
  check_map_overlap(spec, node_map);
  return run_sample_call(spec, replace, seed, batch_id, false, node_map);
}

std::vector<at::Tensor> sample_fused_typed_cpu(at::TensorList indptrs, at::TensorList indices,
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
  check_cpu(spec, node_map);
  check_map_overlap(spec, node_map);
  return run_sample_call(spec, replace, seed, batch_id, return_eids, node_map);
}

}  // namespace

TORCH_LIBRARY_IMPL(gnnrepro, CPU, m) {
  m.impl("sample_fused", &sample_fused_cpu);
  m.impl("sample_fused_typed", &sample_fused_typed_cpu);
}

}  // namespace gnnrepro
