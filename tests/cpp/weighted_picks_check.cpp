// The weighted picking rule (csrc/common/weighted_picks.h) checked on the CPU with no torch and
// no GPU: over random relations (lists short and long, weights zero, tied, heavy-tailed, NaN,
// negative, denormal; tables well-formed or garbage; counts true or overstated; excluded
// edges; timed ranges, "last"; with and without replacement), per destination,
// - the CPU op's way (first draws made beforehand, marks and running-sum scratch, ids read from
//   table entries) and the CUDA kernel's way (no first draws, no scratch, no ids) give the same
//   positions: the two devices' blocks can differ only if the rule's code differs;
// - deferring redraws (resume_drawn_picks, as the CPU op's third pass does) gives the same
//   positions and ids as not deferring, whatever the number in flight, the order they are
//   resumed in, and the marks' storage moving while destinations wait;
// - picks stay in their destination's candidates, distinct without replacement, the marks all
//   zero between calls, and with a well-formed table a pick's id is its position's neighbour.
// Usage: weighted_picks_check CASES SEED. Prints a summary; exits 1 on the first failure.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <limits>
#include <random>
#include <vector>

#include "../../csrc/common/weighted_picks.h"

namespace {

using gnnrepro::DrawProgress;
using gnnrepro::PickContext;
using gnnrepro::PickOut;

struct Relation {
  std::vector<float> w;
  std::vector<int64_t> ix;
  std::vector<int64_t> table;
  std::vector<int64_t> excluded;
  bool replace;
  bool well_formed;
};

struct Destination {
  int64_t start, degree_code, count, begin, end;
  uint64_t key;
  bool last;
};

[[noreturn]] void fail(const char* what, int c, size_t i) {
  std::fprintf(stderr, "FAIL case %d destination %zu: %s\n", c, i, what);
  std::exit(1);
}

PickContext context(const Relation& r, const Destination& d, uint8_t* marks) {
  return gnnrepro::pick_context(marks, r.excluded.empty() ? nullptr : r.excluded.data(),
                                static_cast<int64_t>(r.excluded.size()), d.start, d.begin, d.end);
}

// The CPU op's passes 1 and 2 for one destination: its picks' first draws (position, id).
template <typename IdT>
void first_draws(const Relation& r, const Destination& d, const PickContext& ctx, int64_t* out,
                 int64_t* ids) {
  constexpr int64_t S = gnnrepro::kTableWords<IdT>;
  if (!gnnrepro::first_draws_from_table(d.degree_code, r.replace, ctx, d.last)) {
    std::fill(out, out + d.count, int64_t{-1});
    return;
  }
  const int64_t degree = gnnrepro::code_degree(d.degree_code);
  for (int64_t n = 0; n < d.count; ++n) {
    const uint64_t index = gnnrepro::first_draw_index(n, r.replace);
    const int64_t slot = gnnrepro::table_slot(degree, d.key, index);
    int64_t id = 0;
    out[n] = d.start + gnnrepro::entry_pick<IdT>(r.table.data() + d.start * S, degree, slot,
                                                 gnnrepro::table_coin(d.key, index), &id);
    ids[n] = id;
  }
}

template <typename IdT>
void check_case(int c, std::mt19937_64& g, int64_t& deferrals, int64_t& picks) {
  constexpr int64_t S = gnnrepro::kTableWords<IdT>;
  auto uniform = [&](double a, double b) {
    return std::uniform_real_distribution<double>(a, b)(g);
  };
  auto between = [&](int64_t a, int64_t b) {
    return static_cast<int64_t>(g() % static_cast<uint64_t>(b - a + 1)) + a;
  };
  Relation r;
  r.replace = g() % 5 == 0;
  const int num_dst = static_cast<int>(between(1, 48));
  std::vector<int64_t> lo(num_dst + 1, 0);
  for (int i = 0; i < num_dst; ++i) {
    const int kind = static_cast<int>(g() % 4);
    lo[i + 1] = lo[i] + (kind == 0   ? between(0, 64)
                         : kind == 1 ? between(65, 140)
                                     : between(60, 400));
  }
  const int64_t edges = lo[num_dst];
  const int weights_kind = static_cast<int>(g() % 5);
  r.w.resize(edges);
  for (float& x : r.w) {
    const int k = static_cast<int>(g() % 100);
    if (weights_kind == 0) {
      x = static_cast<float>(uniform(0, 1));
    } else if (weights_kind == 1) {  // a few heavy ones: many redraws, exact picks
      x = k < 3 ? 1e6f : static_cast<float>(uniform(0, 1e-3));
    } else if (weights_kind == 2) {  // half zero (dgl#7462's)
      x = k < 50 ? 0.0f : static_cast<float>(uniform(0, 1));
    } else if (weights_kind == 3) {  // ties
      x = k < 30 ? 0.0f : 1.0f;
    } else {  // what a validating caller refuses, handed to the rule directly
      x = k < 10   ? std::numeric_limits<float>::quiet_NaN()
          : k < 20 ? -0.0f
          : k < 25 ? std::numeric_limits<float>::denorm_min()
          : k < 30 ? -static_cast<float>(uniform(0, 1))
          : k < 35 ? 3e38f
                   : static_cast<float>(uniform(0, 1));
    }
  }
  r.ix.resize(edges);
  for (int64_t& v : r.ix) v = between(0, 1000);
  std::vector<IdT> ix(r.ix.begin(), r.ix.end());
  r.table.assign(edges * S, 0);
  for (int i = 0; i < num_dst; ++i) {
    gnnrepro::weight_table_range<IdT>(r.w.data(), ix.data(), lo[i], lo[i + 1], r.table.data());
  }
  const int table_kind = static_cast<int>(g() % 4);
  r.well_formed = table_kind == 0;
  if (table_kind == 1) {  // garbage thresholds and aliases
    for (int64_t e = 0; e < edges; ++e) r.table[e * S] = static_cast<int64_t>(g());
  } else if (table_kind == 2) {  // every word garbage
    for (int64_t& word : r.table) word = static_cast<int64_t>(g());
  } else if (table_kind == 3) {  // aliases in range of some lists, not of others
    for (int64_t e = 0; e < edges; ++e) {
      r.table[e * S] = gnnrepro::table_entry(static_cast<uint32_t>(g()), between(0, 500));
    }
  }
  if (g() % 2) {
    const double p = uniform(0, 0.4);
    for (int64_t e = 0; e < edges; ++e) {
      if (uniform(0, 1) < p) r.excluded.push_back(e);
    }
  }
  const bool timed = g() % 3 == 0;
  const bool last = timed && !r.replace && g() % 4 == 0;
  const int64_t fanout = g() % 8 == 0 ? -1 : between(1, 40);
  std::vector<Destination> ds(num_dst);
  std::vector<int64_t> offsets(num_dst + 1, 0);
  const int64_t* excluded = r.excluded.empty() ? nullptr : r.excluded.data();
  const auto num_excluded = static_cast<int64_t>(r.excluded.size());
  for (int i = 0; i < num_dst; ++i) {
    const int64_t degree = lo[i + 1] - lo[i];
    int64_t begin = 0, end = degree;
    if (timed) {
      begin = g() % 2 ? 0 : between(0, degree);
      end = between(begin, degree);
    }
    int64_t nonzero = 0;
    for (int64_t e = lo[i]; e < lo[i + 1]; ++e) nonzero += r.w[e] > 0.0f;
    if (g() % 3 == 0) nonzero = between(-5, 2 * degree + 5);  // a count that lies
    const int64_t positive =
        timed ? gnnrepro::available_positive_in(r.w.data(), lo[i], lo[i + 1], lo[i] + begin,
                                                lo[i] + end, nonzero, excluded, num_excluded)
              : gnnrepro::available_positive(r.w.data(), lo[i], lo[i + 1], nonzero, excluded,
                                             num_excluded);
    ds[i] = {lo[i],
             gnnrepro::weighted_degree_code(degree, positive, fanout, r.replace),
             gnnrepro::weighted_pick_count(degree, positive, fanout, r.replace),
             begin,
             end,
             g(),
             last};
    offsets[i + 1] = offsets[i] + ds[i].count;
  }
  const int64_t total = offsets[num_dst];
  picks += total;
  const bool attempts = !r.replace;
  std::vector<uint8_t> marks;
  std::vector<double> sums;
  auto check_marks = [&](size_t i) {
    if (std::any_of(marks.begin(), marks.end(), [](uint8_t m) { return m != 0; })) {
      fail("marks left set", c, i);
    }
  };
  auto grow_marks = [&](int64_t at_least) {  // new storage, the old freed: a stale pointer shows
    std::vector<uint8_t> bigger(std::max<int64_t>(at_least, marks.size()) + g() % 3, 0);
    std::copy(marks.begin(), marks.end(), bigger.begin());
    marks.swap(bigger);
  };
  // The CPU op's way, without and with deferral, and the CUDA kernel's way.
  std::vector<int64_t> cpu(total), cpu_ids(total), ring(total), ring_ids(total), device(total);
  for (int i = 0; i < num_dst; ++i) {
    const Destination& d = ds[i];
    if (d.count == 0) continue;
    const int64_t degree = gnnrepro::code_degree(d.degree_code);
    if (attempts && static_cast<int64_t>(marks.size()) < degree) marks.resize(degree, 0);
    PickContext ctx = context(r, d, attempts ? marks.data() : nullptr);
    first_draws<IdT>(r, d, ctx, cpu.data() + offsets[i], cpu_ids.data() + offsets[i]);
    first_draws<IdT>(r, d, ctx, ring.data() + offsets[i], ring_ids.data() + offsets[i]);
    if (attempts) {
      if (static_cast<int64_t>(sums.size()) < d.end - d.begin) sums.resize(d.end - d.begin);
      ctx.sums = sums.data();
    }
    gnnrepro::weighted_positions<IdT>(
        r.w.data() + d.start, r.table.data() + d.start * S, d.degree_code, d.count, r.replace,
        d.key, PickOut{d.start, cpu.data() + offsets[i], cpu_ids.data() + offsets[i]}, ctx,
        d.last, /*first_drawn=*/true);
    check_marks(i);
    gnnrepro::weighted_positions<IdT>(
        r.w.data() + d.start, r.table.data() + d.start * S, d.degree_code, d.count, r.replace,
        d.key, PickOut{d.start, device.data() + offsets[i], nullptr},
        context(r, d, nullptr), d.last, /*first_drawn=*/false);
  }
  struct Waiting {
    size_t i;
    DrawProgress progress;
  };
  std::deque<Waiting> waiting;
  const size_t capacity = static_cast<size_t>(between(1, 16));
  const bool oldest_first = g() % 2;
  auto resume = [&](size_t i, DrawProgress progress) {
    const Destination& d = ds[i];
    const int64_t slot = gnnrepro::resume_drawn_picks<IdT>(
        r.w.data() + d.start, r.table.data() + d.start * S, d.degree_code, d.count, d.key,
        PickOut{d.start, ring.data() + offsets[i], ring_ids.data() + offsets[i]},
        context(r, d, marks.data()), progress);
    check_marks(i);
    if (slot < 0) return;
    if (slot >= gnnrepro::code_degree(d.degree_code)) {
      fail("a deferred slot outside the list", c, i);
    }
    ++deferrals;
    waiting.push_back({i, progress});
  };
  auto resume_one = [&] {
    const size_t k = oldest_first ? 0 : g() % waiting.size();
    const Waiting next = waiting[k];
    waiting.erase(waiting.begin() + static_cast<std::ptrdiff_t>(k));
    if (g() % 4 == 0) grow_marks(static_cast<int64_t>(marks.size()) + 1);
    resume(next.i, next.progress);
  };
  for (int i = 0; i < num_dst; ++i) {
    const Destination& d = ds[i];
    if (d.count == 0) continue;
    PickContext ctx = context(r, d, attempts ? marks.data() : nullptr);
    if (!attempts || !gnnrepro::first_draws_from_table(d.degree_code, r.replace, ctx, d.last)) {
      std::copy(cpu.begin() + offsets[i], cpu.begin() + offsets[i + 1], ring.begin() + offsets[i]);
      std::copy(cpu_ids.begin() + offsets[i], cpu_ids.begin() + offsets[i + 1],
                ring_ids.begin() + offsets[i]);
      continue;
    }
    while (waiting.size() >= capacity) resume_one();
    resume(static_cast<size_t>(i), DrawProgress{});
  }
  while (!waiting.empty()) resume_one();
  for (int i = 0; i < num_dst; ++i) {
    const Destination& d = ds[i];
    for (int64_t k = offsets[i]; k < offsets[i + 1]; ++k) {
      if (cpu[k] != device[k]) fail("the CPU op's and the CUDA kernel's ways differ", c, i);
      if (cpu[k] != ring[k] || cpu_ids[k] != ring_ids[k]) fail("deferring changed a pick", c, i);
      const int64_t offset = cpu[k] - d.start;
      if (offset < d.begin || offset >= std::max(d.end, d.begin + 1)) {
        fail("a pick outside the candidates", c, i);
      }
      if (r.well_formed && cpu_ids[k] != gnnrepro::kIdFromIndices && cpu_ids[k] != r.ix[cpu[k]]) {
        fail("a table id that is not its position's neighbour", c, i);
      }
      if (!r.replace && std::count(cpu.begin() + offsets[i], cpu.begin() + k, cpu[k]) > 0) {
        fail("a position picked twice", c, i);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int cases = argc > 1 ? std::atoi(argv[1]) : 300;
  const uint64_t seed = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1;
  int64_t deferrals = 0, picks = 0;
  for (int c = 0; c < cases; ++c) {
    std::mt19937_64 g(seed * 1000003 + static_cast<uint64_t>(c));
    if (g() % 2) {
      check_case<int32_t>(c, g, deferrals, picks);
    } else {
      check_case<int64_t>(c, g, deferrals, picks);
    }
  }
  std::printf("cases %d picks %lld deferrals %lld\n", cases, static_cast<long long>(picks),
              static_cast<long long>(deferrals));
  return 0;
}
