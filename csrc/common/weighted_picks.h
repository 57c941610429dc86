// Weighted neighbour picks: the per-destination rules that the CPU op and the CUDA kernels share
// (host and device), so that both give bit-identical blocks.
//
// A weighted relation carries, per edge position, its weight (float32, as sampled) and an entry
// of its destination's alias table, and per destination its count of positive weights
// (weight_table_range below builds the last two). An entry is kTableWords<IdT> int64 words: the
// slot's keep threshold and alias offset, then the neighbour ids of both (the slot's own and its
// alias's, copies of `indices`), so that the CPU op's table draw reads one random entry and no
// `indices` line after it (the CUDA kernels read `indices`; picks that are not table draws read
// `indices` on both, the CPU op in its gather: kIdFromIndices). The op therefore takes the
// table as weight_table built it for these `indices`: on any other table it stays in bounds,
// but the devices may disagree. A pick reads one table entry: a slot drawn uniformly over the
// destination's list keeps itself with probability threshold / 2^32, else gives its alias, so
// that each offset comes out proportional to its weight (to 2^-32 of a slot). Only positive
// weights are ever picked. Without replacement the picks are successive sampling, each
// proportional to the weights not yet picked (DGL's CPU sampler's scheme, and what its CUDA
// keys give): a table draw is kept if its offset is not picked yet; after kAliasAttempts draws
// that all land on picked offsets, the destination's remaining picks are resolved exactly over
// its unpicked weights (a pass over its list). A destination with at most kTreeLeaves
// candidates picks by a sum tree over their weights instead (tree_picks: exact, no draw
// redrawn, its weights read in order rather than its entries at random). Either way a pick is
// proportional to the unpicked weights. With replacement each pick is one table draw.
//
// Excluded edges (a link-prediction batch's own edges: common/exclusion.h) are never picked, as
// if their weights were zero for the call: the counts are over the positive weights not
// excluded (available_positive), a table draw on an excluded offset is redrawn as one on a
// picked offset is, exact picks and take-all destinations pass over them, and with
// replacement a destination with excluded edges draws up to kAliasAttempts times per pick, then
// exactly over the weights not excluded. A destination without excluded edges picks as before.
// A timed destination (a temporal call: temporal_picks.h) picks among its candidates only, a
// range [begin, end) of its list: offsets outside it are unavailable as excluded ones are, its
// counts are over the range's positive weights, and a range shorter than half the list draws
// over its running sums rather than the table (whose draws would mostly fall outside it), or
// by a sum tree where it is short enough.
//
// Bit-identical on both devices: every floating-point step is one correctly rounded IEEE
// operation (add_rn, sub_rn, mul_rn, div_rn: no fused multiply-add on the device, and the host
// build compiles with -ffp-contract=off), in the same order on both. Whatever the table and the
// counts hold, picks stay distinct offsets of the destination's list: nothing is read outside
// [start, start + degree).
#pragma once
#include <cstdint>
#include <cstring>

#include "exclusion.h"
#include "hd.h"
#include "rng.h"

namespace gnnrepro {

GNNREPRO_HD double add_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

GNNREPRO_HD double sub_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}

GNNREPRO_HD double mul_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

GNNREPRO_HD double div_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}

// Table draws a pick makes before the destination's picks are resolved exactly. Pick n's
// attempt a is draw index n * kAliasAttempts + a.
constexpr int kAliasAttempts = 4;

// A uniform double in [0, 1) from the draw's 53 high bits (exact: no rounding).
GNNREPRO_HD double unit_draw(uint64_t r) {
  return mul_rn(static_cast<double>(r >> 11), 1.0 / 9007199254740992.0);
}

// Words per table entry: threshold | alias, then the two ids (packed in one word for int32).
template <typename IdT>
constexpr int64_t kTableWords = sizeof(IdT) == 4 ? 2 : 3;

// A table entry's first word: the slot keeps itself when a 32-bit coin is below `threshold`,
// else gives offset `alias` (in its destination's list).
GNNREPRO_HD int64_t table_entry(uint32_t threshold, int64_t alias) {
  return static_cast<int64_t>((static_cast<uint64_t>(alias) << 32) | threshold);
}

// The neighbour id an entry gives: its own (kept) or its alias's.
template <typename IdT>
GNNREPRO_HD int64_t entry_id(const int64_t* entry, bool kept) {
  if (sizeof(IdT) == 4) {
    const auto word = static_cast<uint64_t>(entry[1]);
    return static_cast<int32_t>(static_cast<uint32_t>(kept ? word : word >> 32));
  }
  return entry[kept ? 1 : 2];
}

// Writes the ids of entry `slot` (offset `alias` its alias) of the list `ix` (from its start).
template <typename IdT>
GNNREPRO_HD void set_entry_ids(int64_t* entry, const IdT* ix, int64_t slot, int64_t alias) {
  if (sizeof(IdT) == 4) {
    entry[1] = static_cast<int64_t>((static_cast<uint64_t>(static_cast<uint32_t>(ix[alias])) << 32) |
                                    static_cast<uint32_t>(ix[slot]));
  } else {
    entry[1] = static_cast<int64_t>(ix[slot]);
    entry[2] = static_cast<int64_t>(ix[alias]);
  }
}
GNNREPRO_HD uint32_t entry_threshold(int64_t entry) { return static_cast<uint32_t>(entry); }
GNNREPRO_HD int64_t entry_alias(int64_t entry) {
  return static_cast<int64_t>(static_cast<uint64_t>(entry) >> 32);
}

// A slot's keep probability q in [0, 1] as a threshold out of 2^32 (rounded up, so that a
// positive q keeps a positive chance).
GNNREPRO_HD uint32_t keep_threshold(double q) {
  if (!(q > 0.0)) return 0;
  if (q >= 1.0) return 0xFFFFFFFFu;
  const double x = mul_rn(q, 4294967296.0);  // exact: a power of two
  uint64_t t = static_cast<uint64_t>(x);
  if (static_cast<double>(t) < x) ++t;
  return t > 0xFFFFFFFFull ? 0xFFFFFFFFu : static_cast<uint32_t>(t);
}

// Builds the alias table of one destination's weights w[lo, hi) (neighbours ix[lo, hi)) into
// its entries (table from entry lo) and returns how many weights are positive. Vose's
// construction as one sweep without work lists: each slot's scaled weight q = w * degree / total
// is kept in its entry's first word (as double bits) until the slot is final; smalls (q < 1) are
// visited in order, each topped up by the current large (the first slot, in order, with
// q >= 1), which becomes small once it has given below 1; a large that becomes small behind the
// visiting pointer is finished at once, one ahead of it is visited in turn. Slots left when
// either kind runs out keep themselves.
template <typename IdT>
GNNREPRO_HD int64_t weight_table_range(const float* w, const IdT* ix, int64_t lo, int64_t hi,
                                       int64_t* table) {
  constexpr int64_t S = kTableWords<IdT>;
  const int64_t degree = hi - lo;
  int64_t* entries = table + lo * S;
  const float* wl = w + lo;
  const IdT* il = ix + lo;
  auto finish = [&](int64_t slot, uint32_t threshold, int64_t alias) {
    entries[slot * S] = table_entry(threshold, alias);
    set_entry_ids(entries + slot * S, il, slot, alias);
  };
  double total = 0.0;
  int64_t positive = 0;
  for (int64_t j = 0; j < degree; ++j) {
    total = add_rn(total, static_cast<double>(wl[j]));
    positive += wl[j] > 0.0f;
  }
  if (!(total > 0.0 && total <= 1.7976931348623157e308)) {  // none positive (or not finite:
    for (int64_t j = 0; j < degree; ++j) finish(j, 0, j);   // weight_table refuses those)
    return positive;
  }
  const double scale = div_rn(static_cast<double>(degree), total);
  auto q_of = [&](int64_t j) { return mul_rn(static_cast<double>(wl[j]), scale); };
  auto store = [&](int64_t j, double q) {
    int64_t bits;
    static_assert(sizeof(bits) == sizeof(q), "an entry's first word holds a double meanwhile");
    memcpy(&bits, &q, sizeof(q));
    entries[j * S] = bits;
  };
  auto load = [&](int64_t j) {
    double q;
    memcpy(&q, &entries[j * S], sizeof(q));
    return q;
  };
  for (int64_t j = 0; j < degree; ++j) store(j, q_of(j));
  // The next small after x (among slots not final: those past the visiting pointer), and the
  // next large after x (a slot that is large from the start: larges change only as `large`).
  auto next_small = [&](int64_t x) {
    for (++x; x < degree && !(load(x) < 1.0); ++x) {}
    return x;
  };
  auto next_large = [&](int64_t x) {
    for (++x; x < degree && !(q_of(x) >= 1.0); ++x) {}
    return x;
  };
  int64_t visit = next_small(-1), large = next_large(-1), small = visit;
  while (small < degree && large < degree) {
    const double q_small = load(small);
    finish(small, keep_threshold(q_small), large);
    const double q_large = sub_rn(add_rn(load(large), q_small), 1.0);
    store(large, q_large);
    if (q_large < 1.0) {
      const int64_t became_small = large;
      large = next_large(large);
      if (became_small < visit) {
        small = became_small;
        continue;
      }
    }
    small = visit = next_small(visit);
  }
  // Leftovers (rounding): the current large and those after it, or the smalls not visited.
  if (small < degree) {
    for (; small < degree; small = visit = next_small(visit)) finish(small, 0xFFFFFFFFu, small);
  } else {
    for (; large < degree; large = next_large(large)) finish(large, 0xFFFFFFFFu, large);
  }
  return positive;
}

// Edges sampled for one destination with `nonzero` positive weights among `degree`.
GNNREPRO_HD int64_t weighted_pick_count(int64_t degree, int64_t nonzero, int64_t fanout,
                                        bool replace) {
  const int64_t positive = nonzero < 0 ? 0 : (nonzero > degree ? degree : nonzero);
  if (fanout < 0) return positive;
  if (replace) return positive > 0 ? fanout : 0;
  return positive < fanout ? positive : fanout;
}

// The degree as the counting step records it for the picking step: ~degree (negative) where
// the destination takes its positive weights in order (fanout -1, or without replacement no
// more of them than the fanout) rather than sampling them.
GNNREPRO_HD int64_t weighted_degree_code(int64_t degree, int64_t nonzero, int64_t fanout,
                                         bool replace) {
  const int64_t positive = nonzero < 0 ? 0 : (nonzero > degree ? degree : nonzero);
  return fanout < 0 || (!replace && positive <= fanout) ? ~degree : degree;
}
GNNREPRO_HD bool weighted_takes_all(int64_t degree_code) { return degree_code < 0; }
GNNREPRO_HD int64_t code_degree(int64_t degree_code) {
  return degree_code < 0 ? ~degree_code : degree_code;
}

// Whether position `pos` is among out[0, n).
GNNREPRO_HD bool already_picked(const int64_t* out, int64_t n, int64_t pos) {
  for (int64_t i = 0; i < n; ++i) {
    if (out[i] == pos) return true;
  }
  return false;
}

// The slot table draw `index` reads (pick n's attempt a is index n * kAliasAttempts + a; with
// replacement pick n is index n), so that a loop can prefetch its entry.
GNNREPRO_HD int64_t table_slot(int64_t degree, uint64_t key, uint64_t index) {
  return static_cast<int64_t>(below(draw(key, 2 * index), static_cast<uint64_t>(degree)));
}

// The 32-bit coin of table draw `index` (whether its slot keeps itself).
GNNREPRO_HD uint32_t table_coin(uint64_t key, uint64_t index) {
  return static_cast<uint32_t>(draw(key, 2 * index + 1));
}

// The id a pick that is not a table draw leaves in `ids` (a value no neighbour id has): the
// caller reads it from `indices` afterwards (the CPU op's gather, with its reads prefetched).
constexpr int64_t kIdFromIndices = -0x7FFFFFFFFFFFFFFFll - 1;

// What slot `slot` of a destination's list (`table` from its first entry) gives for `coin`: an
// offset in [0, degree), and its neighbour id into *id where id is not null (an entry that
// holds kIdFromIndices, malformed, gives -1: out of range as it is, and not taken for a pick
// whose id is read from `indices`).
template <typename IdT>
GNNREPRO_HD int64_t entry_pick(const int64_t* table, int64_t degree, int64_t slot, uint32_t coin,
                               int64_t* id) {
  const int64_t* entry = table + slot * kTableWords<IdT>;
  const int64_t alias = entry_alias(entry[0]);
  const bool kept = coin < entry_threshold(entry[0]) || alias >= degree;  // (a malformed alias:
  if (id) {                                                                // the slot itself)
    const int64_t given = entry_id<IdT>(entry, kept);
    *id = given == kIdFromIndices ? -1 : given;
  }
  return kept ? slot : alias;
}

// One table draw over a destination's list (`table` from its first entry): an offset in
// [0, degree), and its neighbour id into *id where id is not null.
template <typename IdT>
GNNREPRO_HD int64_t table_draw(const int64_t* table, int64_t degree, uint64_t key, uint64_t index,
                               int64_t* id) {
  return entry_pick<IdT>(table, degree, table_slot(degree, key, index), table_coin(key, index),
                         id);
}

// Where one destination's picks go: positions (start + offset) into out[0, count) and, where
// `ids` is not null, their neighbour ids into ids[0, count): a table draw's from its entry,
// kIdFromIndices for the others.
struct PickOut {
  int64_t start;
  int64_t* out;
  int64_t* ids;
  GNNREPRO_HD void set(int64_t n, int64_t offset) const {
    out[n] = start + offset;
    if (ids) ids[n] = kIdFromIndices;
  }
};

// What one destination's picks consult besides its weights and table. `marks`: scratch that
// speeds them up where a caller has it (the CPU op), room for the destination's degree flags
// (which offsets are picked), all zero on entry and on exit; on the device it is null and
// membership is a pass over the picks: the same answers either way. `excluded`: the
// destination's excluded positions (sorted, within its list; num_excluded of them, none: null
// and 0), which are never picked. [begin, end): the offsets the picks come from, the whole list
// but for a timed destination (its candidates at its seed's time: temporal_picks.h); table
// draws outside it are redrawn as those on excluded offsets are. `sums`: more scratch of the
// CPU op, room for the candidates' running sums (null on the device: see sum_draw).
struct PickContext {
  uint8_t* marks;
  const int64_t* excluded = nullptr;
  int64_t num_excluded = 0;
  int64_t begin = 0, end = 0;
  double* sums = nullptr;
};

// The context of destination [start, start + degree), its picks from offsets [begin, end)
// (0 <= begin <= end <= degree), with relation-wide sorted excluded positions
// excluded[0, num_excluded) (null and 0: none).
GNNREPRO_HD PickContext pick_context(uint8_t* marks, const int64_t* excluded,
                                     int64_t num_excluded, int64_t start, int64_t begin,
                                     int64_t end) {
  if (num_excluded == 0) return {marks, nullptr, 0, begin, end};
  const int64_t first = first_not_below(excluded, num_excluded, start + begin);
  const int64_t last = first_not_below(excluded, num_excluded, start + end);
  return {marks, excluded + first, last - first, begin, end};
}

// pick_context over the whole list [0, degree).
GNNREPRO_HD PickContext pick_context(uint8_t* marks, const int64_t* excluded,
                                     int64_t num_excluded, int64_t start, int64_t degree) {
  return pick_context(marks, excluded, num_excluded, start, 0, degree);
}

// Whether a destination's picks are restricted (excluded edges, or candidates short of its list
// of `degree`): the routines below take `Restricted` false where not, so that such a call runs
// no check in its loops.
GNNREPRO_HD bool restricted(const PickContext& ctx, int64_t degree) {
  return ctx.num_excluded > 0 || ctx.begin > 0 || ctx.end < degree;
}

// Whether offset `offset` (position start + offset) is no candidate: outside [begin, end) or
// one of the destination's excluded edges.
template <bool Restricted>
GNNREPRO_HD bool is_excluded(const PickContext& ctx, int64_t start, int64_t offset) {
  if constexpr (Restricted) {
    if (offset < ctx.begin || offset >= ctx.end) return true;
    const int64_t position = start + offset;
    const int64_t i = first_not_below(ctx.excluded, ctx.num_excluded, position);
    return i < ctx.num_excluded && ctx.excluded[i] == position;
  } else {
    return false;
  }
}

// Whether offset `offset` cannot be picked: it is among the picks out[0, n) or no candidate.
template <bool Restricted>
GNNREPRO_HD bool unavailable(const PickContext& ctx, const int64_t* out, int64_t n,
                             int64_t start, int64_t offset) {
  const bool picked = ctx.marks ? ctx.marks[offset] != 0 : already_picked(out, n, start + offset);
  return picked || is_excluded<Restricted>(ctx, start, offset);
}

// The positive weights destination [lo, hi) may pick from (`w` from the relation's first
// edge): `nonzero`, its positive count clamped to [0, degree], less its excluded edges of
// positive weight, and never more than its edges not excluded (a count that overstates them).
GNNREPRO_HD int64_t available_positive(const float* w, int64_t lo, int64_t hi, int64_t nonzero,
                                       const int64_t* excluded, int64_t num_excluded) {
  const int64_t degree = hi - lo;
  int64_t positive = nonzero < 0 ? 0 : (nonzero > degree ? degree : nonzero);
  if (num_excluded == 0) return positive;
  int64_t here = 0;
  for (int64_t j = first_not_below(excluded, num_excluded, lo);
       j < num_excluded && excluded[j] < hi; ++j, ++here) {
    positive -= w[excluded[j]] > 0.0f;
  }
  positive = positive < 0 ? 0 : positive;
  return positive < degree - here ? positive : degree - here;
}

// Positive weights among w[lo, hi).
GNNREPRO_HD int64_t positive_in(const float* w, int64_t lo, int64_t hi) {
  int64_t positive = 0;
  for (int64_t j = lo; j < hi; ++j) positive += w[j] > 0.0f;
  return positive;
}

// available_positive over the candidates [begin, end) of a list [lo, hi) (lo <= begin <= end
// <= hi): a count over them, or over the rest of the list taken from `nonzero` where that is
// shorter (the same count for a `nonzero` that counts the list).
GNNREPRO_HD int64_t available_positive_in(const float* w, int64_t lo, int64_t hi, int64_t begin,
                                          int64_t end, int64_t nonzero, const int64_t* excluded,
                                          int64_t num_excluded) {
  const int64_t positive = 2 * (end - begin) < hi - lo
                               ? positive_in(w, begin, end)
                               : nonzero - positive_in(w, lo, begin) - positive_in(w, end, hi);
  return available_positive(w, begin, end, positive, excluded, num_excluded);
}

// The destination's positive candidates, in order, as its `count` picks; if they are fewer
// than `count` (a count that overstates them), the first other candidates fill the rest
// (count <= the candidates, as available_positive bounds it).
template <bool Restricted>
GNNREPRO_HD void weighted_take_all(const float* w, int64_t count, const PickOut& po,
                                   const PickContext& ctx) {
  int64_t n = 0;
  for (int64_t j = ctx.begin; j < ctx.end && n < count; ++j) {
    if (w[j] > 0.0f && !is_excluded<Restricted>(ctx, po.start, j)) po.set(n++, j);
  }
  for (int64_t j = ctx.begin; j < ctx.end && n < count; ++j) {
    if (!(w[j] > 0.0f) && !is_excluded<Restricted>(ctx, po.start, j)) po.set(n++, j);
  }
}

// A timed destination's picks under temporal_strategy "last": the `count` most recent candidates
// of positive weight (the weights act as a mask: which edges may be taken, not how likely),
// none excluded, written in time order. If they are fewer than `count` (a count that overstates
// them: see weighted_take_all), the most recent other candidates fill the rest.
template <bool Restricted>
GNNREPRO_HD void weighted_last(const float* w, int64_t count, const PickOut& po,
                               const PickContext& ctx) {
  int64_t first = ctx.end, found = 0;  // the positive ones: from `first` on
  while (found < count && first > ctx.begin) {
    --first;
    found += w[first] > 0.0f && !is_excluded<Restricted>(ctx, po.start, first);
  }
  int64_t other = ctx.end, others = 0;  // the fillers: from `other` on
  while (found + others < count && other > ctx.begin) {
    --other;
    others += !(w[other] > 0.0f) && !is_excluded<Restricted>(ctx, po.start, other);
  }
  int64_t n = 0;
  for (int64_t j = first < other ? first : other; j < ctx.end && n < count; ++j) {
    if (!is_excluded<Restricted>(ctx, po.start, j) && (w[j] > 0.0f ? j >= first : j >= other)) {
      po.set(n++, j);
    }
  }
}

// The unpicked weight: a sum over the available offsets (candidates not among out[0, n)), in
// order.
template <bool Restricted>
GNNREPRO_HD double unpicked_weight(const float* w, const PickContext& ctx, int64_t start,
                                   const int64_t* out, int64_t n) {
  double rest = 0.0;
  for (int64_t j = ctx.begin; j < ctx.end; ++j) {
    if (w[j] > 0.0f && !unavailable<Restricted>(ctx, out, n, start, j)) {
      rest = add_rn(rest, static_cast<double>(w[j]));
    }
  }
  return rest;
}

// A pick resolved exactly, with draw `index`: x uniform over the available weight `rest`, then
// the first available offset (a candidate not among out[0, n)) whose running sum exceeds x (one
// pass over the candidates).
template <bool Restricted>
GNNREPRO_HD int64_t exact_pick(const float* w, const PickContext& ctx, int64_t start,
                               const int64_t* out, int64_t n, int64_t index, double rest,
                               uint64_t key) {
  const double x = mul_rn(unit_draw(draw(key, static_cast<uint64_t>(index))), rest);
  double sum = 0.0;
  int64_t last = -1;
  for (int64_t j = ctx.begin; j < ctx.end; ++j) {
    if (w[j] > 0.0f && !unavailable<Restricted>(ctx, out, n, start, j)) {
      sum = add_rn(sum, static_cast<double>(w[j]));
      if (sum > x) return j;
      last = j;
    }
  }
  if (last >= 0) return last;  // rounding: the last available positive weight
  for (int64_t k = ctx.begin; k < ctx.end; ++k) {  // malformed input (counts past the positive
    if (!unavailable<Restricted>(ctx, out, n, start, k)) return k;  // weights)
  }
  return ctx.begin;  // (none available: counts past the candidates; stays in bounds)
}

// The candidates' running sums of their available weights (positive, not excluded), in order,
// into ctx.sums[0, end - begin) where the caller gives that scratch; returns their total (the
// same sum, in the same order, either way).
template <bool Restricted>
GNNREPRO_HD double candidate_sums(const float* w, const PickContext& ctx, int64_t start) {
  double sum = 0.0;
  for (int64_t j = ctx.begin; j < ctx.end; ++j) {
    if (w[j] > 0.0f && !is_excluded<Restricted>(ctx, start, j)) {
      sum = add_rn(sum, static_cast<double>(w[j]));
    }
    if (ctx.sums) ctx.sums[j - ctx.begin] = sum;
  }
  return sum;
}

// One draw proportional to the candidates' weights, picked or not (draw `index`): x uniform
// over their `total`, then the first candidate whose running sum exceeds x; -1 if none does
// (rounding). A binary search over ctx.sums where the caller has them, else a pass over the
// candidates: the same answer.
template <bool Restricted>
GNNREPRO_HD int64_t sum_draw(const float* w, const PickContext& ctx, int64_t start, double total,
                             uint64_t key, uint64_t index) {
  const double x = mul_rn(unit_draw(draw(key, 2 * index)), total);
  if (ctx.sums) {
    int64_t lo = 0, hi = ctx.end - ctx.begin;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (ctx.sums[mid] > x) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    return lo < ctx.end - ctx.begin ? ctx.begin + lo : -1;
  }
  double sum = 0.0;
  for (int64_t j = ctx.begin; j < ctx.end; ++j) {
    if (w[j] > 0.0f && !is_excluded<Restricted>(ctx, start, j)) {
      sum = add_rn(sum, static_cast<double>(w[j]));
      if (sum > x) return j;
    }
  }
  return -1;
}

// Candidates that a destination without replacement picks among by a sum tree (tree_picks)
// rather than by draws (a power of two). Their weights span a quarter of the cache lines their
// table entries do (4 bytes an edge against 16) and are read in order; their picks often cover
// much of them, where table draws would land on picked offsets and turn exact. 64 read the
// fewest lines over a products-sim 1.0 batch's frontier (benchmarks/NOTES.md, session 25).
constexpr int64_t kTreeLeaves = 64;

// How a destination's picks without replacement are drawn: by a sum tree over few candidates;
// over the candidates' running sums (sum_draw) where they are short of half the list (a timed
// destination early in its list, whose table draws would mostly fall outside them); else
// from the table.
enum class PickMethod { kTree, kSums, kTable };
GNNREPRO_HD PickMethod pick_method(const PickContext& ctx, int64_t degree) {
  if (ctx.end - ctx.begin <= kTreeLeaves) return PickMethod::kTree;
  return 2 * (ctx.end - ctx.begin) < degree ? PickMethod::kSums : PickMethod::kTable;
}

// Draws read ahead: a destination whose picks start with table draws (first_draws_from_table)
// may have every pick's first draw made before the destination is resolved, so that a caller
// can make them over many destinations at once and their entries' random reads overlap as a
// gather's do (the CPU op's weighted pick chunk). Pick n's first draw is table draw
// first_draw_index(n, replace); a caller that made it keeps its position (start + offset) in
// out[n] and its id in ids[n], and says so with `first_drawn`, and the routines below take it
// from there rather than draw it again: the same draws, the same picks.
GNNREPRO_HD bool first_draws_from_table(int64_t degree_code, bool replace, const PickContext& ctx,
                                        bool last) {
  if (last || weighted_takes_all(degree_code)) return false;
  const int64_t degree = code_degree(degree_code);
  if (replace) return !restricted(ctx, degree);  // (replaced_pick: not)
  return pick_method(ctx, degree) == PickMethod::kTable;
}
GNNREPRO_HD uint64_t first_draw_index(int64_t n, bool replace) {
  return replace ? static_cast<uint64_t>(n) : static_cast<uint64_t>(n) * kAliasAttempts;
}

// A weight as a sum tree's leaf: itself where positive, else zero (NaN too), by a mask rather
// than a branch, which half-zero weights would mispredict half the time.
GNNREPRO_HD double leaf_weight(float weight) {
  double leaf = static_cast<double>(weight);
  uint64_t bits;
  memcpy(&bits, &leaf, sizeof(bits));
  bits &= 0ull - static_cast<uint64_t>(leaf > 0.0);
  memcpy(&leaf, &bits, sizeof(bits));
  return leaf;
}

// `count` distinct picks by successive sampling over at most kTreeLeaves candidates, exactly:
// a sum tree over their available weights (positive, not excluded), pick n's draw (index
// n * kAliasAttempts) descends it to a leaf in proportion to the unpicked weight, and the
// picked leaf is zeroed, its ancestors summed again from their children. Every node is thus
// the sum of its children as they are (no subtraction that could cancel a small weight beside
// a large picked one), in one order on both devices. A descent takes a child of positive sum
// only, so it ends on a positive leaf; with counts past the positive weights (malformed input)
// the first candidates not picked fill the rest.
template <bool Restricted>
GNNREPRO_HD void tree_picks(const float* w, int64_t count, uint64_t key, const PickOut& po,
                            const PickContext& ctx) {
  double tree[2 * kTreeLeaves];  // node v's children 2v and 2v + 1; leaves from `leaves` on
  const int64_t m = ctx.end - ctx.begin;
  int64_t leaves = 1;
  while (leaves < m) leaves *= 2;
  for (int64_t j = 0; j < m; ++j) {
    const int64_t offset = ctx.begin + j;
    tree[leaves + j] = is_excluded<Restricted>(ctx, po.start, offset) ? 0.0 : leaf_weight(w[offset]);
  }
  for (int64_t j = m; j < leaves; ++j) tree[leaves + j] = 0.0;
  for (int64_t v = leaves - 1; v >= 1; --v) tree[v] = add_rn(tree[2 * v], tree[2 * v + 1]);
  for (int64_t n = 0; n < count; ++n) {
    int64_t leaf = -1;
    if (tree[1] > 0.0) {
      const uint64_t index = static_cast<uint64_t>(n) * kAliasAttempts;
      double x = mul_rn(unit_draw(draw(key, 2 * index)), tree[1]);
      int64_t v = 1;
      while (v < leaves) {
        const double left = tree[2 * v], right = tree[2 * v + 1];
        const bool go_left = left > 0.0 && (x < left || !(right > 0.0));
        x = go_left ? x : sub_rn(x, left);
        v = 2 * v + (go_left ? 0 : 1);
      }
      leaf = v - leaves;
    }
    if (leaf < 0) {  // no positive weight left (malformed counts): the first candidate not
      for (leaf = 0; leaf < m - 1; ++leaf) {  // picked nor excluded, else the last
        const int64_t offset = ctx.begin + leaf;
        if (!already_picked(po.out, n, po.start + offset) &&
            !is_excluded<Restricted>(ctx, po.start, offset)) {
          break;
        }
      }
    }
    po.set(n, ctx.begin + leaf);
    // The leaf zeroed and its ancestors summed again, the running sum kept in a register.
    double sum = 0.0;
    int64_t v = leaves + leaf;
    tree[v] = 0.0;
    for (; v > 1; v /= 2) {
      sum = add_rn(sum, tree[v ^ 1]);  // (addition commutes: the same as left + right)
      tree[v / 2] = sum;
    }
  }
}

// Where a destination's picks by draws stand (resume_drawn_picks): pick n's attempt a is the
// next draw, or with `exact` pick n is resolved exactly over the unpicked weight `rest`.
// `entry_due`: attempt a reads its table entry now (a caller deferred it to prefetch it).
struct DrawProgress {
  int64_t n = 0;
  int a = 0;
  bool exact = false;
  bool entry_due = false;
  double rest = 0.0;
};

// Picks n on of weighted_picks' draws (pick_method kSums or kTable), from `progress`. Returns -1
// once the `count` picks are made. With `defer`, a table draw whose entry is not at hand (any
// but a first draw given by the caller) is not read: its slot's offset is returned, `progress`
// at it, and the next call reads it, so that a caller can prefetch the entry and resolve other
// destinations meanwhile (the CPU op). The same draws in the same order either way: deferring
// changes no pick. The marks of ctx (if any) hold picks [0, n) while this runs and are all zero
// when it returns.
template <typename IdT, bool Restricted>
GNNREPRO_HD int64_t resume_picks_with(const float* w, const int64_t* table, int64_t degree,
                                      int64_t count, uint64_t key, const PickOut& po,
                                      const PickContext& ctx, bool first_drawn, bool by_sums,
                                      double total, DrawProgress& progress, bool defer) {
  DrawProgress& p = progress;
  if (ctx.marks) {
    for (int64_t i = 0; i < p.n; ++i) ctx.marks[po.out[i] - po.start] = 1;
  }
  const uint64_t exact_key = mix64(key ^ 0x5851F42D4C957F2Dull);
  int64_t deferred = -1;
  for (; p.n < count && deferred < 0; ++p.n) {
    const int64_t n = p.n;
    bool drawn = false;
    for (; !p.exact && p.a < kAliasAttempts; ++p.a) {
      const uint64_t index = static_cast<uint64_t>(n) * kAliasAttempts + p.a;
      int64_t id = 0;
      int64_t t;
      if (p.a == 0 && first_drawn) {
        t = po.out[n] - po.start;
        if (po.ids) id = po.ids[n];
      } else if (by_sums) {
        t = sum_draw<Restricted>(w, ctx, po.start, total, key, index);
      } else {
        const int64_t slot = table_slot(degree, key, index);
        if (defer && !p.entry_due) {
          p.entry_due = true;
          deferred = slot;
          break;
        }
        p.entry_due = false;
        t = entry_pick<IdT>(table, degree, slot, table_coin(key, index), po.ids ? &id : nullptr);
      }
      if (t >= 0 && !unavailable<Restricted>(ctx, po.out, n, po.start, t)) {
        if (by_sums) {
          po.set(n, t);
        } else {
          po.out[n] = po.start + t;
          if (po.ids) po.ids[n] = id;
        }
        if (ctx.marks) ctx.marks[t] = 1;
        drawn = true;
        break;
      }
    }
    if (deferred >= 0) break;  // (pick n stays next)
    p.a = 0;
    if (drawn) continue;
    if (!p.exact) {  // from here on, this destination's picks are exact
      p.exact = true;
      p.rest = unpicked_weight<Restricted>(w, ctx, po.start, po.out, n);
    }
    const int64_t j = exact_pick<Restricted>(w, ctx, po.start, po.out, n, n, p.rest, exact_key);
    if (ctx.marks) ctx.marks[j] = 1;
    po.set(n, j);
    // The next pick's unpicked weight: subtracted while the pick is at most half of it (the
    // difference then loses no more than an ulp or two), else summed afresh, so that a small
    // weight left beside a huge picked one keeps its share.
    const double picked = static_cast<double>(w[j]);
    p.rest = picked <= mul_rn(p.rest, 0.5) ? sub_rn(p.rest, picked)
                                           : unpicked_weight<Restricted>(w, ctx, po.start, po.out,
                                                                         n + 1);
  }
  if (ctx.marks) {
    for (int64_t i = 0; i < p.n; ++i) ctx.marks[po.out[i] - po.start] = 0;
  }
  return deferred;
}

// `count` distinct picks by successive sampling (count <= the candidates, as
// weighted_pick_count gives; the scheme's distribution needs count <= the positive weights).
// Few candidates are picked by a sum tree (tree_picks); else a draw is a table draw, or one
// over the candidates' running sums (sum_draw) where pick_method says so. Either way a draw
// on a picked offset is redrawn, and after kAliasAttempts such draws the destination's picks
// are exact (resume_picks_with, without deferring).
// `first_drawn`: the picks' first draws are in po.out and po.ids (first_draws_from_table).
template <typename IdT, bool Restricted>
GNNREPRO_HD void weighted_picks(const float* w, const int64_t* table, int64_t degree,
                                int64_t count, uint64_t key, const PickOut& po,
                                const PickContext& ctx, bool first_drawn) {
  const PickMethod method = pick_method(ctx, degree);
  if (method == PickMethod::kTree) {
    tree_picks<Restricted>(w, count, key, po, ctx);
    return;
  }
  const bool by_sums = method == PickMethod::kSums;
  const double total = by_sums ? candidate_sums<Restricted>(w, ctx, po.start) : 0.0;
  DrawProgress progress;
  resume_picks_with<IdT, Restricted>(w, table, degree, count, key, po, ctx, first_drawn, by_sums,
                                     total, progress, /*defer=*/false);
}

// Pick n with replacement of a restricted destination: table draws (draw index
// n * kAliasAttempts + a) until one is a candidate, after kAliasAttempts of them exactly over
// the candidates' weights (earlier picks stay available).
template <typename IdT>
GNNREPRO_HD void replaced_pick(const float* w, const int64_t* table, int64_t degree, int64_t n,
                               uint64_t key, const PickOut& po, const PickContext& ctx) {
  for (int a = 0; a < kAliasAttempts; ++a) {
    int64_t id = 0;
    const int64_t t = table_draw<IdT>(table, degree, key,
                                      static_cast<uint64_t>(n) * kAliasAttempts + a,
                                      po.ids ? &id : nullptr);
    if (!is_excluded<true>(ctx, po.start, t)) {
      po.out[n] = po.start + t;
      if (po.ids) po.ids[n] = id;
      return;
    }
  }
  const double rest = unpicked_weight<true>(w, ctx, po.start, po.out, 0);
  po.set(n, exact_pick<true>(w, ctx, po.start, po.out, 0, n, rest,
                             mix64(key ^ 0x5851F42D4C957F2Dull)));
}

// Positions (and ids) of one weighted destination's `count` picks: `w` and `table` from its
// first edge. `degree_code`: weighted_degree_code's (of available_positive's count).
template <typename IdT, bool Restricted>
GNNREPRO_HD void weighted_positions_with(const float* w, const int64_t* table,
                                         int64_t degree_code, int64_t count, bool replace,
                                         uint64_t key, const PickOut& po,
                                         const PickContext& ctx, bool first_drawn) {
  const int64_t degree = code_degree(degree_code);
  if (weighted_takes_all(degree_code)) {
    weighted_take_all<Restricted>(w, count, po, ctx);
  } else if (replace && Restricted) {
    for (int64_t n = 0; n < count; ++n) replaced_pick<IdT>(w, table, degree, n, key, po, ctx);
  } else if (replace) {  // independent table draws
    for (int64_t n = 0; n < count && !first_drawn; ++n) {
      int64_t id = 0;
      po.out[n] = po.start + table_draw<IdT>(table, degree, key, static_cast<uint64_t>(n),
                                             po.ids ? &id : nullptr);
      if (po.ids) po.ids[n] = id;
    }
  } else {
    weighted_picks<IdT, Restricted>(w, table, degree, count, key, po, ctx, first_drawn);
  }
}

// `ctx`: pick_context's, its [begin, end) within [0, code_degree(degree_code)]. `last`: a
// timed destination under temporal_strategy "last" (weighted_last; never with replacement).
// `first_drawn`: where first_draws_from_table holds, the picks' first draws are in po.out and
// po.ids.
template <typename IdT>
GNNREPRO_HD void weighted_positions(const float* w, const int64_t* table, int64_t degree_code,
                                    int64_t count, bool replace, uint64_t key,
                                    const PickOut& po, const PickContext& ctx,
                                    bool last = false, bool first_drawn = false) {
  if (count <= 0) return;
  first_drawn = first_drawn && first_draws_from_table(degree_code, replace, ctx, last);
  if (last) {
    weighted_last<true>(w, count, po, ctx);
  } else if (restricted(ctx, code_degree(degree_code))) {
    weighted_positions_with<IdT, true>(w, table, degree_code, count, replace, key, po, ctx,
                                       first_drawn);
  } else {
    weighted_positions_with<IdT, false>(w, table, degree_code, count, replace, key, po, ctx,
                                        first_drawn);
  }
}

// weighted_positions for a destination whose first draws are in po.out and po.ids
// (first_draws_from_table, without replacement: its picks are table draws), resumable: from
// `progress` on, each table entry past the first draws deferred as resume_picks_with defers it.
// Returns -1 once the picks are made, else the offset of the entry the next call reads. The
// same picks as weighted_positions(..., first_drawn = true).
template <typename IdT>
GNNREPRO_HD int64_t resume_drawn_picks(const float* w, const int64_t* table, int64_t degree_code,
                                       int64_t count, uint64_t key, const PickOut& po,
                                       const PickContext& ctx, DrawProgress& progress) {
  const int64_t degree = code_degree(degree_code);
  if (restricted(ctx, degree)) {
    return resume_picks_with<IdT, true>(w, table, degree, count, key, po, ctx, true, false, 0.0,
                                        progress, /*defer=*/true);
  }
  return resume_picks_with<IdT, false>(w, table, degree, count, key, po, ctx, true, false, 0.0,
                                       progress, /*defer=*/true);
}

}  // namespace gnnrepro
