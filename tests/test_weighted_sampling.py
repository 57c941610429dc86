"""Weighted and masked neighbour sampling in the fused op (gnnrepro.sampling.weights): picks
against successive sampling's exact inclusion probabilities, zero weights, masks, edge ids,
typed relations, threads, bad input and malformed tables handed to the op directly."""
from __future__ import annotations

import itertools

import pytest
import torch

from gnnrepro import _ops
from gnnrepro.baselines.dgl_import import dgl_available
from gnnrepro.graph import CSCGraph
from gnnrepro.sampling import FusedSampler
from gnnrepro.typed_graph import TypedGraph

COPIES = 20000  # destinations sharing one weight pattern: the samples per batch


def inclusion_probabilities(w: torch.Tensor, k: int) -> torch.Tensor:
    """P(offset j among k picks) of successive sampling (each pick proportional to the weights
    not yet picked), enumerated over every ordered sequence of k positive offsets."""
    p = torch.zeros(len(w), dtype=torch.float64)
    positive = [j for j in range(len(w)) if w[j] > 0]
    for seq in itertools.permutations(positive, k):
        prob = 1.0
        for i, j in enumerate(seq):
            rest = sum(float(w[o]) for o in positive if o not in seq[:i])
            prob *= float(w[j]) / rest
        for j in seq:
            p[j] += prob
    return p


def copies_graph(w: torch.Tensor, dtype: torch.dtype = torch.int64) -> tuple[CSCGraph, torch.Tensor]:
    """COPIES destinations with len(w) in-neighbours each (scattered ids) and their weights."""
    d = len(w)
    indptr = torch.arange(0, (COPIES + 1) * d, d)
    indices = (torch.arange(COPIES * d) * 7919 % COPIES).to(dtype)
    return CSCGraph(indptr, indices), w.repeat(COPIES)


def offset_frequencies(sampler: FusedSampler, d: int, batches: int) -> torch.Tensor:
    counts = torch.zeros(d, dtype=torch.float64)
    for batch in range(batches):
        block = sampler.sample(torch.arange(COPIES), batch).blocks[0]
        counts += torch.bincount(block.edge_ids % d, minlength=d).double()
    return counts / (COPIES * batches)


PATTERNS = [torch.tensor([1.0, 2, 3, 0, 4]), torch.tensor([100.0, 1, 1, 0.01, 5, 0, 2]),
            torch.tensor([1e-30, 1, 1e30, 1, 0, 7])]


@pytest.mark.parametrize("w", PATTERNS)
@pytest.mark.parametrize("fanout", [1, 2, 3])
@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("degree", [0, 70])
def test_inclusion_is_successive_sampling(w, fanout, dtype, degree):
    """As the pattern (a list short enough for the sum tree) and padded with zero weights to
    `degree` (a list past kTreeLeaves: table draws, redraws and exact picks)."""
    w = torch.cat([w, torch.zeros(max(degree - len(w), 0))])
    g, weights = copies_graph(w, dtype)
    sampler = FusedSampler(g, [fanout], weights=weights, edge_ids=True, seed=3)
    block = sampler.sample(torch.arange(COPIES)).blocks[0]
    positive = int((w > 0).sum())
    assert bool((block.in_degrees() == min(fanout, positive)).all())
    # every edge's source is the neighbour at its position
    assert torch.equal(block.src_nodes[block.indices], g.indices[block.edge_ids].long())
    picks = block.edge_ids.view(COPIES, -1)
    assert bool((picks.sort(dim=1).values.diff(dim=1) > 0).all()), "a destination picked twice"
    freq, exact = offset_frequencies(sampler, len(w), 3), inclusion_probabilities(w, fanout)
    sigma = (exact * (1 - exact) / (3 * COPIES)).sqrt()
    assert bool(((freq - exact).abs() <= 6 * sigma + 1e-9).all()), (freq, exact)
    assert float(freq[w == 0].sum()) == 0.0


def test_with_replacement_draws_proportionally():
    w = torch.tensor([1.0, 0, 3, 6])
    g, weights = copies_graph(w)
    sampler = FusedSampler(g, [4], weights=weights, replace=True, edge_ids=True)
    freq = offset_frequencies(sampler, len(w), 2) / 4
    exact = w.double() / w.sum()
    sigma = (exact * (1 - exact) / (8 * COPIES)).sqrt()
    assert bool(((freq - exact).abs() <= 6 * sigma + 1e-9).all()), (freq, exact)


def random_weighted_graph(seed: int = 0) -> tuple[CSCGraph, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    n = 400
    deg = torch.randint(0, 130, (n,), generator=gen)  # lists picked by sum tree and by table
    deg[:3] = torch.tensor([0, 5, 300])  # an isolated node, a small list, a hub
    indptr = torch.cat([torch.zeros(1, dtype=torch.long), deg.cumsum(0)])
    indices = torch.randint(0, n, (int(indptr[-1]),), generator=gen)
    w = torch.rand(indices.numel(), generator=gen) * (torch.rand(indices.numel(),
                                                                 generator=gen) < 0.5)
    w[indptr[1]:indptr[2]] = 0  # node 1: every weight zero
    return CSCGraph(indptr, indices), w


@pytest.mark.parametrize("fanouts", [[5, 3], [-1, 4], [2, -1]])
def test_counts_and_zero_weights(fanouts):
    g, w = random_weighted_graph()
    sampler = FusedSampler(g, fanouts, weights=w, edge_ids=True)
    mb = sampler.sample(torch.arange(0, 400, 3))
    positive = torch.zeros(g.num_nodes, dtype=torch.long).index_add_(
        0, torch.repeat_interleave(torch.arange(g.num_nodes), g.in_degrees()), (w > 0).long())
    for block, fanout in zip(mb.blocks, fanouts):
        assert bool((w[block.edge_ids] > 0).all()), "a zero weight was picked"
        expected = positive[block.dst_nodes]
        if fanout > 0:
            expected = expected.clamp(max=fanout)
        assert torch.equal(block.in_degrees(), expected)
        if fanout < 0:  # all positive weights, in their order in the list
            starts = g.indptr[block.dst_nodes]
            for i in range(block.num_dst):
                lo, hi = int(g.indptr[block.dst_nodes[i]]), int(g.indptr[block.dst_nodes[i] + 1])
                want = torch.arange(lo, hi)[w[lo:hi] > 0]
                got = block.edge_ids[block.indptr[i]:block.indptr[i + 1]]
                assert torch.equal(got, want), (i, starts[i])


def test_mask_is_weights_one_and_zero():
    g, w = random_weighted_graph(1)
    mask = w > 0
    a = FusedSampler(g, [6, 4], weights=mask, seed=5).sample(torch.arange(50))
    b = FusedSampler(g, [6, 4], weights=mask.float(), seed=5).sample(torch.arange(50))
    for x, y in zip(a.blocks, b.blocks):
        assert torch.equal(x.indices, y.indices) and torch.equal(x.src_nodes, y.src_nodes)


@pytest.mark.parametrize("replace", [False, True])
def test_same_blocks_on_any_threads(replace):
    g, w = random_weighted_graph(2)
    w = w + torch.rand(w.numel(), generator=torch.Generator().manual_seed(0)) ** 8  # heavy
    sampler = FusedSampler(g, [10, 10, 10], weights=w, replace=replace, edge_ids=True)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = sampler.sample(torch.arange(0, 400, 2), 7)
        torch.set_num_threads(2)
        two = sampler.sample(torch.arange(0, 400, 2), 7)
    finally:
        torch.set_num_threads(threads)
    for x, y in zip(one.blocks, two.blocks):
        assert torch.equal(x.edge_ids, y.edge_ids) and torch.equal(x.src_nodes, y.src_nodes)


def test_weights_are_given_by_edge_id():
    gen = torch.Generator().manual_seed(4)
    src, dst = torch.randint(0, 100, (3000,), generator=gen), torch.randint(0, 100, (3000,),
                                                                             generator=gen)
    g = CSCGraph.from_edges(src, dst, 100, keep_edge_ids=True)
    w = (torch.arange(3000) % 3 != 0).float()  # edge ids divisible by 3: never sampled
    block = FusedSampler(g, [8], weights=w, edge_ids=True).sample(torch.arange(100)).blocks[0]
    assert block.num_edges > 0 and bool((block.edge_ids % 3 != 0).all())
    assert torch.equal(src[block.edge_ids], block.src_nodes[block.indices])


def test_typed_relation_weighted_beside_uniform():
    gen = torch.Generator().manual_seed(5)
    num = {"paper": 300, "author": 200}
    edges = {("author", "writes", "paper"): (torch.randint(0, 200, (2000,), generator=gen),
                                             torch.randint(0, 300, (2000,), generator=gen)),
             ("paper", "cites", "paper"): (torch.randint(0, 300, (3000,), generator=gen),
                                           torch.randint(0, 300, (3000,), generator=gen))}
    g = TypedGraph.from_edges(num, edges)
    cites = g.relations[("paper", "cites", "paper")]
    w = (torch.arange(cites.num_edges) % 2).float()
    seeds = {"paper": torch.arange(0, 300, 2)}
    weighted = FusedSampler(g, [4, 4], weights={"cites": w}, edge_ids=True).sample(seeds, 1)
    uniform = FusedSampler(g, [4, 4], edge_ids=True).sample(seeds, 1)
    # the uniform relation draws as without weights (its keys are its own)
    top_w, top_u = weighted.blocks[-1], uniform.blocks[-1]
    rel = ("author", "writes", "paper")
    assert torch.equal(top_w.blocks[rel].edge_ids, top_u.blocks[rel].edge_ids)
    for block in weighted.blocks:  # the weighted one never picks a zero weight (by edge id)
        eids = block.blocks[("paper", "cites", "paper")].edge_ids
        assert bool((w[eids] > 0).all())
    assert top_w.blocks[("paper", "cites", "paper")].num_edges > 0


def test_bad_weights_name_the_argument():
    g, w = random_weighted_graph()
    for bad, error, match in [
            ([1.0] * g.num_edges, TypeError, "weights must be a torch.Tensor"),
            (torch.ones(g.num_edges, dtype=torch.long), TypeError, "floating-point"),
            (torch.ones(g.num_edges + 1), ValueError, "one entry per edge"),
            (torch.ones(2, g.num_edges), ValueError, "one entry per edge"),
            (torch.where(torch.arange(g.num_edges) == 9, -1.0, 1.0), ValueError,
             r"weights\[9\] = -1.0"),
            (torch.where(torch.arange(g.num_edges) == 4, float("nan"), 1.0), ValueError,
             r"finite and non-negative: weights\[4\]"),
            (torch.full((g.num_edges,), float("inf")), ValueError, "finite"),
            (torch.full((g.num_edges,), 1e300, dtype=torch.float64), ValueError, "float32")]:
        with pytest.raises(error, match=match):
            FusedSampler(g, [3], weights=bad)
    typed = TypedGraph.from_csc(g)
    rel = typed.canonical_relations[0]
    with pytest.raises(TypeError, match="dict"):
        FusedSampler(typed, [3], weights=w)
    with pytest.raises(ValueError):
        FusedSampler(typed, [3], weights={"no-such-relation": w})
    with pytest.raises(ValueError, match="twice"):
        FusedSampler(typed, [3], weights={rel: w, rel[1]: w})


def test_op_checks_the_weight_arrays():
    g, w = random_weighted_graph()
    table, nonzero = _ops.ops.weight_table(g.indptr, g.indices, w)
    node_map = torch.full((g.num_nodes,), -1, dtype=torch.int32)

    def call(weights, tables, counts):
        return _ops.ops.sample_fused_typed([g.indptr], [g.indices], [0], [0], [g.num_nodes],
                                           [torch.arange(10)], [3], False, 0, 0, False,
                                           weights, tables, counts, [], [], -1, 0, [], node_map)
    with pytest.raises(RuntimeError, match="alias_tables of relation 0"):
        call([w], [table[:-1]], [nonzero])
    with pytest.raises(RuntimeError, match="edge_weights of relation 0"):
        call([w.double()], [table], [nonzero])
    with pytest.raises(RuntimeError, match="all given, or all None"):
        call([w], [None], [nonzero])
    with pytest.raises(ValueError, match="non-negative"):
        _ops.ops.weight_table(g.indptr, g.indices, -w)
    bad_indptr = g.indptr.clone()
    bad_indptr[5] = bad_indptr[6] + 1
    with pytest.raises(ValueError, match="non-decreasing"):
        _ops.ops.weight_table(bad_indptr, g.indices, w)
    assert bool((node_map == -1).all())


@pytest.mark.parametrize("replace", [False, True])
def test_malformed_tables_never_leave_the_list(replace):
    """Whatever the table and counts hold, picks are distinct positions of each destination's
    own list (the op takes the table as weight_table built it for these indices, but never
    trusts it for bounds), and an id a table gives outside the graph is an error naming the
    table (the CPU op reads its ids from the table), not a read."""
    g, w = random_weighted_graph(3)
    gen = torch.Generator().manual_seed(9)
    table, _ = _ops.ops.weight_table(g.indptr, g.indices, w)
    table = table.view(-1, 3).clone()
    table[:, 0] = torch.randint(-2**62, 2**62, (g.num_edges,), generator=gen)  # threshold|alias
    nonzero = torch.randint(-5, 500, (g.num_nodes,), generator=gen)
    weights = torch.where(torch.rand(g.num_edges, generator=gen) < 0.3, float("nan"), -w)
    node_map = torch.full((g.num_nodes,), -1, dtype=torch.int32)
    seeds = torch.arange(0, 400, 3)

    def call(tab: torch.Tensor) -> list[torch.Tensor]:
        return _ops.ops.sample_fused_typed([g.indptr], [g.indices], [0], [0], [g.num_nodes],
                                           [seeds], [7], replace, 0, 0, True, [weights], [tab],
                                           [nonzero], [], [], -1, 0, [], node_map)
    flat = call(table.view(-1))
    indptr, eids = flat[0], flat[2]
    for i, v in enumerate(seeds.tolist()):
        picks = eids[indptr[i]:indptr[i + 1]]
        assert bool(((picks >= g.indptr[v]) & (picks < g.indptr[v + 1])).all())
        if not replace:
            assert picks.unique().numel() == picks.numel()
    table[:, 1:] = torch.randint(g.num_nodes, 2**40, (g.num_edges, 2), generator=gen)
    with pytest.raises(RuntimeError, match="alias_tables does not belong to its indices"):
        call(table.view(-1))
    assert bool((node_map == -1).all())


@pytest.mark.parametrize("degree", [4, 70])
@pytest.mark.parametrize("excluded", [[1], [2, 3]])
def test_overstated_counts_never_pick_an_excluded_edge(degree, excluded):
    """Positive counts past the positive weights (handed to the op directly) fill a destination's
    picks with candidates of weight zero, never with its excluded edges: by the sum tree (a
    list of 4) as by the table's exact picks (70)."""
    indptr = torch.tensor([0, degree, degree])
    indices = torch.arange(degree) % 2
    w = torch.zeros(degree)
    w[0] = 1.0
    table, _ = _ops.ops.weight_table(indptr, indices, w)
    node_map = torch.full((2,), -1, dtype=torch.int32)
    flat = _ops.ops.sample_fused_typed([indptr], [indices], [0], [0], [2], [torch.tensor([0])],
                                       [2], False, 0, 0, True, [w], [table],
                                       [torch.tensor([degree, 0])], [], [], -1, 0,
                                       [torch.tensor(excluded)], node_map)
    picks = flat[2]
    assert picks.numel() == 2 and picks.unique().numel() == 2 and 0 in picks.tolist()
    assert not bool(torch.isin(picks, torch.tensor(excluded)).any()), picks


@pytest.mark.parametrize("replace", [False, True])
def test_a_table_id_of_int64_min_is_the_tables_error(replace):
    """An id word equal to the op's own marker for ids read from `indices` is a bad id of the
    table like any other out of range, not taken for such a marker."""
    g, w = random_weighted_graph(3)
    table, nonzero = _ops.ops.weight_table(g.indptr, g.indices, w)
    table = table.view(-1, 3).clone()
    table[:, 1:] = -2**63
    node_map = torch.full((g.num_nodes,), -1, dtype=torch.int32)
    with pytest.raises(RuntimeError, match="alias_tables does not belong to its indices"):
        _ops.ops.sample_fused_typed([g.indptr], [g.indices], [0], [0], [g.num_nodes],
                                    [torch.arange(0, 400, 3)], [7], replace, 0, 0, True, [w],
                                    [table.view(-1)], [nonzero], [], [], -1, 0, [], node_map)
    assert bool((node_map == -1).all())


def test_opcheck_with_weights():
    g, w = random_weighted_graph()
    table, nonzero = _ops.ops.weight_table(g.indptr, g.indices, w)
    node_map = torch.full((g.num_nodes,), -1, dtype=torch.int32)
    torch.library.opcheck(_ops.ops.weight_table.default, (g.indptr, g.indices, w))
    torch.library.opcheck(
        _ops.ops.sample_fused_typed.default,
        ([g.indptr], [g.indices], [0], [0], [g.num_nodes], [torch.tensor([0, 2, 5])], [3, 2],
         False, 1, 2, True, [w], [table], [nonzero], [], [], -1, 0, [], node_map))


@pytest.mark.skipif(not dgl_available(), reason="DGL is not installed")
def test_agrees_with_dgl_sample_neighbors_prob():
    """DGL's sample_neighbors(prob=...) samples the same scheme: the same inclusion
    frequencies per offset, within sampling noise."""
    from gnnrepro.baselines.dgl_import import import_dgl
    dgl = import_dgl()
    w = torch.tensor([5.0, 1, 0, 2, 8, 0.5])
    g, weights = copies_graph(w)
    src = g.indices
    dst = torch.repeat_interleave(torch.arange(COPIES), len(w))
    dg = dgl.graph((src, dst + COPIES), num_nodes=2 * COPIES)  # sources apart from destinations
    dg.edata["w"] = weights
    ours = offset_frequencies(FusedSampler(g, [2], weights=weights, edge_ids=True), len(w), 2)
    counts = torch.zeros(len(w), dtype=torch.float64)
    for batch in range(2):
        torch.manual_seed(batch)
        sub = dgl.sampling.sample_neighbors(dg, torch.arange(COPIES) + COPIES, 2, prob="w")
        counts += torch.bincount(sub.edata[dgl.EID] % len(w), minlength=len(w)).double()
    theirs = counts / (2 * COPIES)
    exact = inclusion_probabilities(w, 2)
    sigma = (exact * (1 - exact) / (2 * COPIES)).sqrt()
    assert bool(((ours - theirs).abs() <= 8 * sigma + 1e-9).all()), (ours, theirs)


@pytest.mark.parametrize("worker_kind", ["thread", "process"])
def test_the_loader_batches_a_weighted_sampler(dataset, worker_kind):
    """A weighted FusedSampler goes through the Loader's workers (its tables travel to worker
    processes) and gives the batches it gives alone."""
    from gnnrepro.pipeline import Loader
    g = dataset.graph
    w = torch.rand(g.num_edges, generator=torch.Generator().manual_seed(1))
    w[torch.arange(g.num_edges) % 2 == 0] = 0
    sampler = FusedSampler(g, [5, 5], weights=w, edge_ids=True, seed=2)
    loader = Loader(dataset, sampler, "cpu", 64, workers=2, worker_kind=worker_kind, seed=3,
                    shuffle=False)
    for batch_id, batch in enumerate(loader):
        alone = sampler.sample(batch.blocks[-1].dst_nodes, batch_id)
        for got, want in zip(batch.blocks, alone.blocks):
            assert torch.equal(got.edge_ids, want.edge_ids)
            assert bool((w[got.edge_ids] > 0).all())
        if batch_id == 2:
            break


# Exclusion (link prediction's exclude) on a weighted relation: excluded edges are weights zero
# for the call (common/weighted_picks.h).

def excluded_offsets(offsets: list[int], d: int) -> torch.Tensor:
    """The edge ids of offsets `offsets` of every copies_graph destination (d edges each)."""
    return (torch.arange(COPIES)[:, None] * d + torch.tensor(offsets)).reshape(-1)


@pytest.mark.parametrize("w,excluded", [(PATTERNS[0], [2]), (PATTERNS[1], [0, 4]),
                                        (PATTERNS[2], [2])])
@pytest.mark.parametrize("fanout", [1, 2, 3])
def test_excluded_edges_are_weights_zero(w, excluded, fanout):
    g, weights = copies_graph(w)
    exclude = excluded_offsets(excluded, len(w))
    zeroed = w.clone()
    zeroed[excluded] = 0
    sampler = FusedSampler(g, [fanout], weights=weights, edge_ids=True, seed=3)
    counts = torch.zeros(len(w), dtype=torch.float64)
    for batch in range(3):
        block = sampler.sample(torch.arange(COPIES), batch, exclude=exclude).blocks[0]
        assert bool((block.in_degrees() == min(fanout, int((zeroed > 0).sum()))).all())
        picks = block.edge_ids.view(COPIES, -1)
        assert bool((picks.sort(dim=1).values.diff(dim=1) > 0).all()), "picked twice"
        counts += torch.bincount(block.edge_ids % len(w), minlength=len(w)).double()
    freq, exact = counts / (3 * COPIES), inclusion_probabilities(zeroed, fanout)
    sigma = (exact * (1 - exact) / (3 * COPIES)).sqrt()
    assert bool(((freq - exact).abs() <= 6 * sigma + 1e-9).all()), (freq, exact)
    assert float(freq[excluded].sum()) == 0.0


def test_excluded_edges_with_replacement_are_never_drawn():
    w = torch.tensor([1.0, 0, 3, 6, 2])
    g, weights = copies_graph(w)
    sampler = FusedSampler(g, [4], weights=weights, replace=True, edge_ids=True)
    exclude = torch.cat([excluded_offsets([3], len(w))[: COPIES // 2],  # half keep offset 3
                         excluded_offsets([2, 3, 4], len(w))[3 * (COPIES - 5):]])  # 5 keep 0
    block = sampler.sample(torch.arange(COPIES), exclude=exclude).blocks[0]
    assert not bool(torch.isin(block.edge_ids, exclude).any())
    assert bool((block.in_degrees() == 4).all())
    first = block.edge_ids[: 4 * (COPIES // 2)] % len(w)  # offset 3 excluded: w 1, 3, 2
    freq = torch.bincount(first, minlength=len(w)).double() / first.numel()
    exact = torch.tensor([1.0, 0, 3, 0, 2], dtype=torch.float64) / 6
    sigma = (exact * (1 - exact) / first.numel()).sqrt()
    assert bool(((freq - exact).abs() <= 6 * sigma + 1e-9).all()), (freq, exact)
    last = block.edge_ids[4 * (COPIES - 5):] % len(w)  # only offset 0 left (offset 1 weighs 0)
    assert bool((last == 0).all())


@pytest.mark.parametrize("fanouts,replace", [([5, 3], False), ([-1, 4], False),
                                             ([4, 3], True)])
def test_exclusion_counts_and_threads(fanouts, replace):
    g, w = random_weighted_graph(2)
    gen = torch.Generator().manual_seed(9)
    exclude = torch.randperm(g.num_edges, generator=gen)[: g.num_edges // 3]
    exclude = torch.cat([exclude, torch.arange(int(g.indptr[2]), int(g.indptr[3]))])  # the hub
    kept = w.clone()
    kept[exclude] = 0
    positive = torch.zeros(g.num_nodes, dtype=torch.long).index_add_(
        0, torch.repeat_interleave(torch.arange(g.num_nodes), g.in_degrees()), (kept > 0).long())
    seeds = torch.arange(0, 400, 3)
    blocks = {}
    for threads in (1, 2):
        before = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            sampler = FusedSampler(g, fanouts, weights=w, replace=replace, edge_ids=True, seed=4)
            blocks[threads] = sampler.sample(seeds, 1, exclude=exclude).blocks
        finally:
            torch.set_num_threads(before)
    for a, b in zip(blocks[1], blocks[2]):
        assert torch.equal(a.edge_ids, b.edge_ids) and torch.equal(a.src_nodes, b.src_nodes)
    for block, fanout in zip(blocks[1], fanouts):
        assert not bool(torch.isin(block.edge_ids, exclude).any()), "an excluded edge"
        assert bool((w[block.edge_ids] > 0).all()), "a zero weight was picked"
        want = positive[block.dst_nodes]
        if replace:
            want = torch.where(want > 0, fanout, 0)
        elif fanout > 0:
            want = want.clamp(max=fanout)
        assert torch.equal(block.in_degrees(), want)


def test_destinations_without_excluded_edges_pick_as_without_exclusion():
    g, w = random_weighted_graph(3)
    seeds = torch.arange(0, 400, 2)
    sampler = FusedSampler(g, [6], weights=w, edge_ids=True, seed=2)
    plain = sampler.sample(seeds).blocks[0]
    some = seeds[::4]  # exclude every in-edge of a quarter of the seeds' lists' first edges
    exclude = g.indptr[some][g.in_degrees()[some] > 0]
    excluding = sampler.sample(seeds, exclude=exclude).blocks[0]
    touched = torch.isin(seeds, some)
    for i in torch.nonzero(~touched).flatten().tolist():
        a = plain.edge_ids[plain.indptr[i]:plain.indptr[i + 1]]
        b = excluding.edge_ids[excluding.indptr[i]:excluding.indptr[i + 1]]
        assert torch.equal(a, b), i
