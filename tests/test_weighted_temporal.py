"""Weighted temporal and weighted disjoint sampling (FusedSampler(weights=..., times=...), as
GraphBolt's temporal sampling with probabilities): a destination picks among its candidates at
its seed's time by weight, by successive sampling; against the exact inclusion probabilities,
the plain-Python reference, exclusion, threads, typed graphs and bad input."""
from __future__ import annotations

import pytest
import torch

from gnnrepro.graph import CSCGraph
from gnnrepro.sampling import FusedSampler
from gnnrepro.typed_graph import TypedGraph
from test_temporal_sampling import check_against_reference, random_timed_graph
from test_weighted_sampling import inclusion_probabilities

COPIES = 4000  # destinations sharing one weight and time pattern: the samples per batch
W = torch.tensor([1.0, 2, 0, 3, 5, 1, 4, 2, 0.5, 6])  # times 0..9 at offsets 0..9


def copies_sampler(fanout: int, replace: bool = False,
                   window: int | None = None) -> tuple[FusedSampler, torch.Tensor]:
    """COPIES destinations whose edges (offsets 0..9 of each list) are at times 9..0 (the
    sampler sorts a copy) with weights W by time, and the times by edge id."""
    d = len(W)
    g = CSCGraph(torch.arange(0, (COPIES + 1) * d, d), torch.arange(COPIES * d) % COPIES)
    times = (d - 1 - torch.arange(d)).repeat(COPIES)
    weights = W.flip(0).repeat(COPIES)  # the edge at time t weighs W[t]
    return FusedSampler(g, [fanout], weights=weights, times=times, edge_ids=True, seed=11,
                        replace=replace, time_window=window), times


def time_frequencies(sampler: FusedSampler, times: torch.Tensor, seed_time: int,
                     batches: int) -> torch.Tensor:
    """How often, per destination and batch, an edge at each time 0..9 is picked."""
    counts = torch.zeros(len(W), dtype=torch.float64)
    for b in range(batches):
        block = sampler.sample(torch.arange(COPIES), b,
                               seed_time=torch.full((COPIES,), seed_time)).blocks[0]
        counts += torch.bincount(times[block.edge_ids], minlength=len(W)).double()
    return counts / (COPIES * batches)


@pytest.mark.parametrize("seed_time", [2, 3, 6, 9])  # candidates short of half the list: exact
@pytest.mark.parametrize("fanout", [1, 2, 3])
def test_inclusion_is_successive_sampling_over_the_candidates(seed_time, fanout):
    sampler, times = copies_sampler(fanout)
    candidates = W.clone()
    candidates[seed_time + 1:] = 0
    positive = int((candidates > 0).sum())
    block = sampler.sample(torch.arange(COPIES), seed_time=torch.full((COPIES,),
                                                                      seed_time)).blocks[0]
    assert bool((block.in_degrees() == min(fanout, positive)).all())
    assert bool((times[block.edge_ids] <= seed_time).all())
    picks = block.edge_ids.view(COPIES, -1)
    assert bool((picks.sort(dim=1).values.diff(dim=1) > 0).all()), "a destination picked twice"
    freq = time_frequencies(sampler, times, seed_time, 3)
    exact = inclusion_probabilities(candidates, min(fanout, positive))
    sigma = (exact * (1 - exact) / (3 * COPIES)).sqrt()
    assert bool(((freq - exact).abs() <= 6 * sigma + 1e-9).all()), (freq, exact)
    assert float(freq[candidates == 0].sum()) == 0.0


def test_with_replacement_and_a_window_draws_proportionally():
    sampler, times = copies_sampler(3, replace=True, window=4)  # candidates: times 3..7
    freq = time_frequencies(sampler, times, 7, 2)
    expected = torch.zeros(len(W), dtype=torch.float64)
    expected[3:8] = W[3:8].double() / float(W[3:8].sum()) * 3
    sigma = (expected / 3 * (1 - expected / 3) * 3 / (2 * COPIES)).sqrt()
    assert bool(((freq - expected).abs() <= 6 * sigma + 1e-9).all()), (freq, expected)


@pytest.mark.parametrize("window", [-1, 30])
def test_all_positive_candidates_equal_the_reference(window):
    """Fanout -1 takes every candidate of positive weight: the temporal reference's blocks
    with the zero-weight edges left out (as excluded ones), and excluded edges beside them."""
    g, times = random_timed_graph(seed=7)
    weights = (torch.arange(g.num_edges) % 4 != 0).float() * torch.rand(
        g.num_edges, generator=torch.Generator().manual_seed(1))
    sampler = FusedSampler(g, [-1, -1, -1], times=times, weights=weights, edge_ids=True,
                           time_window=None if window < 0 else window)
    sg = sampler.temporal.graph
    exclude = torch.arange(1, g.num_edges, 7)
    check_against_reference(sampler, times, window, exclude,
                            (weights[sg.edge_ids] == 0) | torch.isin(sg.edge_ids, exclude))


@pytest.mark.parametrize("replace", [False, True])
def test_picks_are_real_positive_timely_and_stay_in_their_seed(replace):
    g, times = random_timed_graph(seed=2)
    weights = torch.rand(g.num_edges, generator=torch.Generator().manual_seed(3))
    weights[::3] = 0
    gen = torch.Generator().manual_seed(4)
    seeds = torch.randint(0, g.num_nodes, (64,), generator=gen)
    seed_time = torch.randint(0, 100, (64,), generator=gen)
    exclude = torch.arange(0, g.num_edges, 5)
    sampler = FusedSampler(g, [3, 4, 5], replace=replace, times=times, weights=weights,
                           edge_ids=True, seed=7)
    src_of = torch.empty(g.num_edges, dtype=torch.long)
    src_of[g.edge_ids] = g.indices.long()
    mb = sampler.sample(seeds, batch_id=3, seed_time=seed_time, exclude=exclude)
    for block in mb.blocks:
        dst_local = block.edge_dst()
        seed_of_dst = block.seed_index[dst_local]
        assert torch.equal(block.seed_index[block.indices], seed_of_dst)  # disjoint subgraphs
        assert bool((times[block.edge_ids] <= seed_time[seed_of_dst]).all())
        assert bool((weights[block.edge_ids] > 0).all())
        assert not bool(torch.isin(block.edge_ids, exclude).any())
        assert torch.equal(src_of[block.edge_ids], block.src_nodes[block.indices])


def test_weighted_disjoint_sampling_keeps_seeds_apart():
    """disjoint=True with weights and no times: a repeated seed and two seeds sharing a
    neighbour each get their own sources, and zero weights are never picked."""
    src, dst = torch.tensor([2, 3, 2, 3]), torch.tensor([0, 0, 1, 1])
    g = CSCGraph.from_edges(src, dst, 4, keep_edge_ids=True)
    weights = torch.tensor([1.0, 0.0, 2.0, 0.0])  # node 3 never reached
    sampler = FusedSampler(g, [2], weights=weights, disjoint=True, edge_ids=True)
    block = sampler.sample(torch.tensor([0, 1, 0])).blocks[0]
    assert block.src_nodes.tolist() == [0, 1, 0, 2, 2, 2]
    assert block.seed_index.tolist() == [0, 1, 2, 0, 1, 2]
    assert block.edge_ids.tolist() == [0, 2, 0]


def test_a_typed_relation_weighted_and_timed_beside_a_timed_one():
    n = {"paper": 50, "author": 30}
    gen = torch.Generator().manual_seed(8)
    cites = (torch.randint(0, 50, (400,), generator=gen), torch.randint(0, 50, (400,),
                                                                        generator=gen))
    writes = (torch.randint(0, 30, (300,), generator=gen), torch.randint(0, 50, (300,),
                                                                         generator=gen))
    g = TypedGraph.from_edges(n, {("paper", "cites", "paper"): cites,
                                  ("author", "writes", "paper"): writes})
    cites_w = (torch.arange(400) % 2).float()  # odd edge ids only
    times = {"cites": torch.randint(0, 100, (400,), generator=gen),
             "writes": torch.randint(0, 100, (300,), generator=gen)}
    sampler = FusedSampler(g, [3, 3], weights={"cites": cites_w}, times=times, edge_ids=True,
                           target="paper")
    seeds, seed_time = torch.arange(20), torch.randint(0, 100, (20,), generator=gen)
    mb = sampler.sample(seeds, seed_time=seed_time)
    for block in mb.blocks:
        c = block.blocks[("paper", "cites", "paper")]
        assert bool((c.edge_ids % 2 == 1).all())
        seed_of_c = block.seed_index["paper"][c.edge_dst()]
        assert bool((times["cites"][c.edge_ids] <= seed_time[seed_of_c]).all())
        w = block.blocks[("author", "writes", "paper")]
        seed_of_w = block.seed_index["paper"][w.edge_dst()]
        assert bool((times["writes"][w.edge_ids] <= seed_time[seed_of_w]).all())
        assert torch.equal(w.seed_index[w.indices], seed_of_w)


def test_last_with_weights_is_refused_by_name():
    g, times = random_timed_graph()
    w = torch.ones(g.num_edges)
    with pytest.raises(ValueError, match="temporal_strategy='last'.*weights.*boolean mask"):
        FusedSampler(g, [2], times=times, weights=w, temporal_strategy="last")
    with pytest.raises(ValueError, match="weights must be finite"):
        FusedSampler(g, [2], times=times, weights=-w)


MASK = torch.tensor([True, False, True, True, False, True, True, False, True, True])  # by time


@pytest.mark.parametrize("seed_time", [0, 1, 4, 7, 9])
@pytest.mark.parametrize("fanout", [1, 2, 3, -1])
def test_last_with_a_mask_takes_the_most_recent_kept_edges(seed_time, fanout):
    """A boolean mask under "last": each destination takes its `fanout` most recent edges that
    the mask keeps, no later than its seed, in time order; a third of them also excluded."""
    d = len(MASK)
    g = CSCGraph(torch.arange(0, (COPIES + 1) * d, d), torch.arange(COPIES * d) % COPIES)
    times = (d - 1 - torch.arange(d)).repeat(COPIES)  # each list's edges at times 9..0
    mask = MASK.flip(0).repeat(COPIES)
    sampler = FusedSampler(g, [fanout], weights=mask, times=times, edge_ids=True,
                           temporal_strategy="last")
    excluded = torch.arange(0, COPIES * d, 3)
    for exclude in (None, excluded):
        block = sampler.sample(torch.arange(COPIES), 0, exclude=exclude,
                               seed_time=torch.full((COPIES,), seed_time)).blocks[0]
        for v in range(0, COPIES, 397):
            allowed = [t for t in range(seed_time + 1) if MASK[t] and (
                exclude is None or (v * d + d - 1 - t) % 3 != 0)]
            want = allowed if fanout < 0 else allowed[max(0, len(allowed) - fanout):]
            got = times[block.edge_ids[block.indptr[v]:block.indptr[v + 1]]].tolist()
            assert sorted(got) == want, (v, seed_time, fanout, exclude is not None)


def test_last_with_masks_on_a_typed_graph_and_float_weights_refused():
    num = {"paper": 50, "author": 30}
    gen = torch.Generator().manual_seed(2)
    edges = {("author", "writes", "paper"): (torch.randint(0, 30, (300,), generator=gen),
                                             torch.randint(0, 50, (300,), generator=gen)),
             ("paper", "cites", "paper"): (torch.randint(0, 50, (400,), generator=gen),
                                           torch.randint(0, 50, (400,), generator=gen))}
    g = TypedGraph.from_edges(num, edges, keep_edge_ids=True)  # edge ids: the lists' order
    times = {"writes": torch.randint(0, 100, (300,), generator=gen),
             "cites": torch.randint(0, 100, (400,), generator=gen)}
    keep = torch.rand(400, generator=gen) > 0.5
    sampler = FusedSampler(g, [4], weights={"cites": keep}, times=times, edge_ids=True,
                           temporal_strategy="last")
    seeds = {"paper": torch.arange(50)}
    block = sampler.sample(seeds, 0, seed_time={"paper": torch.full((50,), 60)}).blocks[0]
    cites = block.blocks[("paper", "cites", "paper")]
    assert bool(keep[cites.edge_ids].all()) and bool((times["cites"][cites.edge_ids] <= 60).all())
    for v in range(50):  # the 4 most recent kept citations of each paper, no later than 60
        paper = int(cites.dst_nodes[v])
        mine = (edges[("paper", "cites", "paper")][1] == paper) & keep & (times["cites"] <= 60)
        recent = times["cites"][mine].sort().values[-4:]
        got = times["cites"][cites.edge_ids[cites.indptr[v]:cites.indptr[v + 1]]].sort().values
        assert torch.equal(got, recent), v
    with pytest.raises(ValueError, match="boolean mask"):
        FusedSampler(g, [4], weights={"cites": keep.float()}, times=times,
                     temporal_strategy="last")


@pytest.mark.parametrize("worker_kind", ["thread", "process"])
def test_timed_items_through_the_loader_workers(worker_kind):
    """(node, time) items (TimedSeeds: a node may repeat at other times) through the Loader's
    workers give the batches the weighted temporal sampler gives alone, item by item."""
    from gnnrepro.datasets.dataset import Dataset
    from gnnrepro.pipeline import Loader
    from gnnrepro.pipeline.plan import BatchPlan
    from gnnrepro.sampling.timed_seeds import TimedSeeds
    g, times = random_timed_graph(seed=9)
    gen = torch.Generator().manual_seed(10)
    nodes = torch.randint(0, 40, (150,), generator=gen)  # repeats
    item_time = torch.randint(0, 100, (150,), generator=gen)
    n = g.num_nodes
    dataset = Dataset(g, torch.randn(n, 4), torch.zeros(n, dtype=torch.long), nodes,
                      nodes[:1], nodes[:1], num_classes=2, name="timed-items")
    sampler = FusedSampler(g, [3, 3], times=times, weights=torch.rand(g.num_edges,
                                                                        generator=gen),
                           edge_ids=True, seed=4)
    items = TimedSeeds(sampler, nodes, item_time)
    plan = BatchPlan(nodes.numel(), 32, seed=5)
    with Loader(dataset, items, "cpu", 32, workers=2, worker_kind=worker_kind,
                plan=plan) as loader:
        order = plan.epoch_ids(0)
        for b, batch in enumerate(loader):
            positions = plan.seeds(order, b)
            alone = sampler.sample(nodes[positions], batch.batch_id,
                                   seed_time=item_time[positions])
            for got, want in zip(batch.blocks, alone.blocks):
                assert torch.equal(got.edge_ids, want.edge_ids)
                assert torch.equal(got.seed_index, want.seed_index)
    with pytest.raises(ValueError, match="TimedSeeds samples with a temporal FusedSampler"):
        TimedSeeds(FusedSampler(g, [3]), nodes, item_time)
    with pytest.raises(ValueError, match="times must be 1-D with 150 entries"):
        TimedSeeds(sampler, nodes, item_time[:-1])
