// The typed graph one sample_fused_typed call samples, checked and laid out the same way for the
// CPU and the CUDA kernel.
//
// Node types have their own id ranges [0, num_nodes[t]); the op numbers them globally, type t's
// node v being offsets[t] + v (offsets: the prefix sums of num_nodes), so one node map of
// sum(num_nodes) entries relabels every type. A relation r is a CSC over its destination type
// (indptrs[r]: num_nodes[dst_types[r]] + 1 entries) whose `indices` hold ids of its source type.
// The homogeneous graph is one type and one relation, and then global ids are the node ids.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "../common/temporal_picks.h"
#include "sample_errors.h"

namespace gnnrepro {

struct RelationSpec {
  at::Tensor indptr, indices;
  int64_t src_type = 0, dst_type = 0;
  // A weighted relation's weights (float32) and alias table (int64), one per edge, and its
  // positive weights per destination (int64): common/weighted_picks.h. Undefined if uniform.
  at::Tensor weights, table, nonzero;
  // A timed relation's edge times (int64, one per edge, non-decreasing within each destination:
  // common/temporal_picks.h). Undefined if untimed.
  at::Tensor times;
  // Edges this call must not sample: sorted, distinct CSC positions (int64; common/
  // exclusion.h). Undefined if none.
  at::Tensor excluded;
  bool weighted() const { return weights.defined(); }
};

using OptionalTensors = c10::List<std::optional<at::Tensor>>;

// The temporal arguments of one call: per relation its edge times (None: untimed), per node
// type its seeds' times (empty: the call is not temporal), the window (-1: none) and the
// strategy (common/temporal_picks.h).
struct TemporalArgs {
  OptionalTensors edge_times;
  std::vector<at::Tensor> seed_times;
  int64_t window = -1;
  int64_t strategy = 0;
};

struct TypedSpec {
  std::vector<int64_t> offsets;  // num_types + 1 global id offsets
  std::vector<RelationSpec> rels;
  std::vector<at::Tensor> seeds;  // per type, int64 ids of that type
  std::vector<int64_t> fanouts;   // num_layers x num_rels, layer-major, GNN layer 0 first
  int64_t num_layers = 0;
  // Temporal calls only: per type its seeds' times; the window and the strategy. Such a call
  // samples each seed's subgraph on its own (disjoint): a node reached from two seeds is two
  // sources, and each source carries its seed's index.
  std::vector<at::Tensor> seed_times;
  int64_t time_window = -1, temporal_strategy = 0;

  int64_t num_types() const { return static_cast<int64_t>(offsets.size()) - 1; }
  int64_t num_rels() const { return static_cast<int64_t>(rels.size()); }
  int64_t total_nodes() const { return offsets.back(); }
  int64_t fanout(int64_t layer, int64_t rel) const { return fanouts[layer * num_rels() + rel]; }
  bool homogeneous() const { return num_types() == 1 && num_rels() == 1; }
  bool temporal() const { return !seed_times.empty(); }
  // The type of global id u (u in [0, total_nodes)).
  int64_t type_of(int64_t u) const {
    int64_t t = 0;
    while (u >= offsets[t + 1]) ++t;
    return t;
  }
};

// Sets each weighted relation's arrays: all three lists empty (no relation is weighted) or one
// entry per relation in each, None for a uniform relation.
inline void add_weights(TypedSpec& spec, const OptionalTensors& weights,
                        const OptionalTensors& tables, const OptionalTensors& nonzeros,
                        at::IntArrayRef num_nodes) {
  const auto num_rels = static_cast<int64_t>(spec.rels.size());
  if (weights.empty() && tables.empty() && nonzeros.empty()) return;
  TORCH_CHECK(static_cast<int64_t>(weights.size()) == num_rels &&
                  static_cast<int64_t>(tables.size()) == num_rels &&
                  static_cast<int64_t>(nonzeros.size()) == num_rels,
              "edge_weights, alias_tables and positive_counts must be empty or hold one entry "
              "per relation");
  for (int64_t r = 0; r < num_rels; ++r) {
    const std::optional<at::Tensor> w = weights.get(r), table = tables.get(r),
                                    nonzero = nonzeros.get(r);
    TORCH_CHECK(w.has_value() == table.has_value() && w.has_value() == nonzero.has_value(),
                "relation ", r, " needs its edge_weights, alias_tables and positive_counts "
                "entries all given, or all None");
    if (!w.has_value()) continue;
    RelationSpec& rel = spec.rels[r];
    const int64_t edges = rel.indices.numel(), dst_nodes = num_nodes[rel.dst_type];
    TORCH_CHECK(w->dim() == 1 && w->scalar_type() == at::kFloat && w->numel() == edges &&
                    w->is_contiguous(),
                "edge_weights of relation ", r, " must be contiguous float32 [", edges, "]");
    // Entries of 2 words (int32 indices) or 3 (int64): common/weighted_picks.h, kTableWords.
    const int64_t words = rel.indices.scalar_type() == at::kInt ? 2 : 3;
    TORCH_CHECK(table->dim() == 1 && table->scalar_type() == at::kLong &&
                    table->numel() == edges * words && table->is_contiguous(),
                "alias_tables of relation ", r, " must be contiguous int64 [", edges * words,
                "] (weight_table's, for indices of this dtype)");
    TORCH_CHECK(nonzero->dim() == 1 && nonzero->scalar_type() == at::kLong &&
                    nonzero->numel() == dst_nodes && nonzero->is_contiguous(),
                "positive_counts of relation ", r, " must be contiguous int64 [", dst_nodes,
                "] (one per destination)");
    const at::Device device = rel.indices.device();
    TORCH_CHECK(w->device() == device && table->device() == device &&
                    nonzero->device() == device,
                "relation ", r, "'s weights must be on its indices' device");
    rel.weights = *w;
    rel.table = *table;
    rel.nonzero = *nonzero;
  }
}

// Sets a temporal call's arrays: edge times empty (no relation timed) or one entry per relation
// (None: untimed), and one seed-times tensor per type. Seeds may then repeat; there must be
// fewer than 2^31 of them, and a timed relation that is weighted samples its candidates by
// weight (strategy uniform only).
inline void add_times(TypedSpec& spec, const TemporalArgs& temporal, at::TensorList seeds) {
  const auto num_rels = static_cast<int64_t>(spec.rels.size());
  if (temporal.seed_times.empty()) {
    TORCH_CHECK(temporal.edge_times.empty(), "edge_times needs seed_times (a temporal call)");
    return;
  }
  TORCH_CHECK(temporal.seed_times.size() == seeds.size(),
              "seed_times must hold one tensor per node type (", seeds.size(), "), got ",
              temporal.seed_times.size());
  TORCH_CHECK(temporal.edge_times.empty() ||
                  static_cast<int64_t>(temporal.edge_times.size()) == num_rels,
              "edge_times must be empty or hold one entry per relation");
  TORCH_CHECK(temporal.strategy == kTemporalUniform || temporal.strategy == kTemporalLast,
              "temporal_strategy must be 0 (uniform) or 1 (last), got ", temporal.strategy);
  TORCH_CHECK(temporal.window >= -1, "time_window must be -1 (none) or >= 0, got ",
              temporal.window);
  int64_t total = 0;
  for (size_t t = 0; t < seeds.size(); ++t) {
    const at::Tensor& st = temporal.seed_times[t];
    TORCH_CHECK(st.dim() == 1 && st.scalar_type() == at::kLong && st.is_contiguous() &&
                    st.numel() == seeds[t].numel(),
                "seed_times[", t, "] must be contiguous int64 with one time per seed (",
                seeds[t].numel(), ")");
    TORCH_CHECK(st.device() == seeds[t].device(), "seed_times must be on the seeds' device");
    total += seeds[t].numel();
  }
  TORCH_CHECK_VALUE(total < std::numeric_limits<int32_t>::max(),
                    "a temporal call takes fewer than 2^31 - 1 seeds, got ", total);
  for (int64_t r = 0; r < static_cast<int64_t>(temporal.edge_times.size()); ++r) {
    const std::optional<at::Tensor> times = temporal.edge_times.get(r);
    if (!times.has_value()) continue;
    RelationSpec& rel = spec.rels[r];
    const int64_t edges = rel.indices.numel();
    TORCH_CHECK(times->dim() == 1 && times->scalar_type() == at::kLong &&
                    times->numel() == edges && times->is_contiguous(),
                "edge_times of relation ", r, " must be contiguous int64 [", edges, "]");
    TORCH_CHECK(times->device() == rel.indices.device(),
                "relation ", r, "'s edge_times must be on its indices' device");
    rel.times = *times;
  }
  spec.seed_times = temporal.seed_times;
  spec.time_window = temporal.window;
  spec.temporal_strategy = temporal.strategy;
}

// Sets each relation's excluded edges: empty (none) or one entry per relation, None or its
// sorted, distinct CSC positions, on its indices' device (pinned for a host graph the GPU reads
// over UVA). Entries on the host are checked here, those in GPU memory by the CUDA op's first
// kernel (raised at its first sync): a position out of order or range is a clear error
// (sample_errors.h, kBadExcluded), never a read. A timed relation's positions are those of its
// time-sorted lists.
inline void add_exclusions(TypedSpec& spec, const OptionalTensors& excluded) {
  const auto num_rels = static_cast<int64_t>(spec.rels.size());
  if (excluded.empty()) return;
  TORCH_CHECK(static_cast<int64_t>(excluded.size()) == num_rels,
              "excluded_edges must be empty or hold one entry per relation");
  for (int64_t r = 0; r < num_rels; ++r) {
    const std::optional<at::Tensor> ex = excluded.get(r);
    if (!ex.has_value()) continue;
    RelationSpec& rel = spec.rels[r];
    TORCH_CHECK(ex->dim() == 1 && ex->scalar_type() == at::kLong && ex->is_contiguous(),
                "excluded_edges of relation ", r, " must be contiguous 1-D int64");
    TORCH_CHECK(ex->device() == rel.indices.device(),
                "relation ", r, "'s excluded_edges must be on its indices' device");
    if (ex->device().is_cpu()) {
      const int64_t* p = ex->data_ptr<int64_t>();
      const int64_t n = ex->numel(), edges = rel.indices.numel();
      for (int64_t i = 0; i < n; ++i) {
        if (p[i] >= 0 && p[i] < edges && (i == 0 || p[i] > p[i - 1])) continue;
        SampleErrorDetail detail;
        detail.bad_excluded_rel = r;
        detail.bad_excluded_entry = i;
        detail.bad_excluded_value = p[i];
        detail.bad_excluded_limit = edges;
        raise_sample_error(kBadExcluded, detail, spec.total_nodes(), !spec.homogeneous());
      }
    }
    rel.excluded = *ex;
  }
}

// Checks shapes, dtypes and sizes (not devices, not values: the kernels check those) and lays
// the lists out as a TypedSpec. `min_fanout` is 1 for the homogeneous op (whose schema has no
// way to skip a layer) and 0 for the typed one (fanout 0: the relation is not sampled there).
inline TypedSpec make_typed_spec(at::TensorList indptrs, at::TensorList indices,
                                 at::IntArrayRef src_types, at::IntArrayRef dst_types,
                                 at::IntArrayRef num_nodes, at::TensorList seeds,
                                 at::IntArrayRef fanouts, const at::Tensor& node_map,
                                 int64_t min_fanout,
                                 const OptionalTensors& weights = OptionalTensors(),
                                 const OptionalTensors& tables = OptionalTensors(),
                                 const OptionalTensors& nonzeros = OptionalTensors(),
                                 const TemporalArgs& temporal = TemporalArgs(),
                                 const OptionalTensors& excluded = OptionalTensors()) {
  TypedSpec spec;
  const auto num_types = static_cast<int64_t>(num_nodes.size());
  const auto num_rels = static_cast<int64_t>(indptrs.size());
  TORCH_CHECK(num_types >= 1, "num_nodes must name at least one node type");
  TORCH_CHECK(num_rels >= 1, "indptrs must hold at least one relation");
  TORCH_CHECK(static_cast<int64_t>(indices.size()) == num_rels &&
                  static_cast<int64_t>(src_types.size()) == num_rels &&
                  static_cast<int64_t>(dst_types.size()) == num_rels,
              "indptrs, indices, src_types and dst_types must have one entry per relation");
  TORCH_CHECK(static_cast<int64_t>(seeds.size()) == num_types,
              "seeds must hold one tensor per node type (", num_types, "), got ", seeds.size());
  spec.offsets.assign(1, 0);
  for (int64_t t = 0; t < num_types; ++t) {
    TORCH_CHECK(num_nodes[t] >= 0, "num_nodes[", t, "] must be >= 0, got ", num_nodes[t]);
    TORCH_CHECK(num_nodes[t] < std::numeric_limits<int32_t>::max() - spec.offsets.back(),
                "graphs with 2^31 - 1 or more nodes (all types together) are not supported");
    spec.offsets.push_back(spec.offsets.back() + num_nodes[t]);
  }
  const at::ScalarType index_type = indices[0].scalar_type();
  for (int64_t r = 0; r < num_rels; ++r) {
    const at::Tensor &ip = indptrs[r], &ix = indices[r];
    TORCH_CHECK(src_types[r] >= 0 && src_types[r] < num_types && dst_types[r] >= 0 &&
                    dst_types[r] < num_types,
                "relation ", r, "'s source and destination types must lie in [0, ", num_types,
                ")");
    const int64_t dst_nodes = num_nodes[dst_types[r]];
    TORCH_CHECK(ip.dim() == 1 && ip.numel() == dst_nodes + 1 && ip.scalar_type() == at::kLong,
                "indptr", num_rels > 1 ? " of relation " + std::to_string(r) : std::string(),
                " must be int64 [N+1] with N = ", dst_nodes,
                num_rels > 1 ? " (its destination type's nodes)" : "");
    TORCH_CHECK(ix.dim() == 1, "indices must be 1-D");
    TORCH_CHECK(ix.scalar_type() == at::kLong || ix.scalar_type() == at::kInt,
                "indices must be int32 or int64");
    TORCH_CHECK(ix.scalar_type() == index_type, "every relation's indices must have one dtype");
    TORCH_CHECK(ip.is_contiguous() && ix.is_contiguous(), "indptr and indices must be contiguous");
    spec.rels.push_back({ip, ix, src_types[r], dst_types[r], {}, {}, {}, {}, {}});
  }
  add_weights(spec, weights, tables, nonzeros, num_nodes);
  add_times(spec, temporal, seeds);
  add_exclusions(spec, excluded);
  for (int64_t t = 0; t < num_types; ++t) {
    const at::Tensor& s = seeds[t];
    TORCH_CHECK(s.dim() == 1 && s.scalar_type() == at::kLong && s.is_contiguous(),
                "seeds must be 1-D int64");
    // Unique seeds in [0, N) number at most N; checked first, so that no kernel sizes anything
    // (the CUDA scans take int counts) from a longer, necessarily invalid, seed list. A
    // temporal call's seeds may repeat (one node at two times): add_times bounds those.
    TORCH_CHECK_VALUE(spec.temporal() || s.numel() <= num_nodes[t], "seeds must be unique node ids: seeds",
                      num_types > 1 ? " of node type " + std::to_string(t) : std::string(),
                      " has ", s.numel(), " entries but the graph has only ", num_nodes[t],
                      " nodes", num_types > 1 ? " of that type" : "");
    spec.seeds.push_back(s);
  }
  TORCH_CHECK(node_map.dim() == 1 && node_map.scalar_type() == at::kInt &&
                  node_map.numel() == spec.total_nodes() && node_map.is_contiguous(),
              "node_map must be int32 [num_nodes]", num_types > 1 ? " (all types together)" : "");
  TORCH_CHECK(!fanouts.empty() && static_cast<int64_t>(fanouts.size()) % num_rels == 0,
              "fanouts must not be empty and must hold one fanout per layer and relation");
  for (int64_t f : fanouts) {
    TORCH_CHECK(f == -1 || (f >= min_fanout && f <= std::numeric_limits<int32_t>::max()),
                "every fanout must be -1 (all neighbours) or in [", min_fanout,
                ", 2^31 - 1], got ", f);
  }
  spec.fanouts.assign(fanouts.begin(), fanouts.end());
  spec.num_layers = static_cast<int64_t>(fanouts.size()) / num_rels;
  return spec;
}

// The op's outputs per layer: per relation its block indptr, indices (and edge ids: positions
// in the relation's `indices`), then per type its source nodes (ids of that type).
inline int64_t outputs_per_layer(const TypedSpec& spec, bool return_eids) {
  return spec.num_rels() * (return_eids ? 3 : 2) + spec.num_types() * (spec.temporal() ? 2 : 1);
}

}  // namespace gnnrepro
