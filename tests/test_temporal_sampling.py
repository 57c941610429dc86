"""Temporal neighbour sampling in the fused op (FusedSampler(times=...)): each seed sampled on
its own at its time at every hop, against a plain-Python reference, plus the rules a user
relies on (no edge later than its seed, disjoint subgraphs, windows, 'last', typed graphs,
bad input)."""
from __future__ import annotations

import pytest
import torch

from gnnrepro import _ops
from gnnrepro.datasets.dataset import Dataset
from gnnrepro.graph import CSCGraph
from gnnrepro.pipeline.loader import Loader
from gnnrepro.sampling import FusedSampler
from gnnrepro.training.evaluate import choose_eval_method
from gnnrepro.typed_graph import TypedGraph


def random_timed_graph(n: int = 200, e: int = 3000, seed: int = 0,
                       index_dtype: torch.dtype = torch.int64) -> tuple[CSCGraph, torch.Tensor]:
    """A random multigraph (edge ids kept) and one time in [0, 100) per edge id."""
    gen = torch.Generator().manual_seed(seed)
    src, dst = torch.randint(0, n, (e,), generator=gen), torch.randint(0, n, (e,), generator=gen)
    g = CSCGraph.from_edges(src, dst, n, index_dtype=index_dtype, keep_edge_ids=True)
    return g, torch.randint(0, 100, (e,), generator=gen)


def reference_blocks(graph: CSCGraph, csc_times: torch.Tensor, seeds: list[int],
                     seed_times: list[int], layers: int, window: int = -1,
                     excluded: frozenset[int] = frozenset()) -> list[tuple]:
    """Fanout -1 temporal sampling, disjoint per seed, written plainly: per layer (input
    first) indptr, indices, src_nodes, seed_index and edge positions, sources numbered by
    first occurrence (destinations, then picks in CSC order); `excluded` positions never."""
    ip, ix, t = graph.indptr.tolist(), graph.indices.tolist(), csc_times.tolist()
    dst = list(enumerate(seeds))  # (seed index, node)
    out = []
    for _ in range(layers):
        ids = {key: k for k, key in enumerate(dst)}
        src, indptr, indices, positions = list(dst), [0], [], []
        for b, v in dst:
            for p in range(ip[v], ip[v + 1]):
                if p in excluded:
                    continue
                if t[p] <= seed_times[b] and (window < 0 or t[p] >= seed_times[b] - window):
                    key = (b, ix[p])
                    if key not in ids:
                        ids[key] = len(src)
                        src.append(key)
                    indices.append(ids[key])
                    positions.append(p)
            indptr.append(len(indices))
        out.append((indptr, indices, [v for _, v in src], [b for b, _ in src], positions))
        dst = src
    return out[::-1]


@pytest.mark.parametrize("window", [-1, 0, 30])
@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32])
def test_all_neighbours_equal_the_reference(window, index_dtype):
    g, times = random_timed_graph(index_dtype=index_dtype)
    sampler = FusedSampler(g, [-1, -1, -1], times=times, edge_ids=True,
                           time_window=None if window < 0 else window)
    sg = sampler.temporal.graph  # sorted by time within each list; edge ids the caller's
    csc_times = times[sg.edge_ids]
    seeds = [5, 5, 17, 0, 199, 5]  # repeats: one node at several times
    seed_times = [50, 10, 99, 0, 70, 50]
    mb = sampler.sample(torch.tensor(seeds), seed_time=torch.tensor(seed_times))
    ref = reference_blocks(sg, csc_times, seeds, seed_times, 3, window)
    for block, (indptr, indices, src, seed_index, positions) in zip(mb.blocks, ref):
        assert block.indptr.tolist() == indptr
        assert block.indices.tolist() == indices
        assert block.src_nodes.tolist() == src
        assert block.seed_index.tolist() == seed_index
        assert block.edge_ids.tolist() == sg.edge_ids[positions].tolist()


@pytest.mark.parametrize("seeds, seed_times", [
    ([5, 17, 42, 77], [99, 99, 99, 99]),  # even: each seed's keys in a region of the map
    ([5] + list(range(100, 160)), [99] + [-1] * 60),  # one seed with keys: the map is global
])
def test_even_and_skewed_seeds_equal_the_reference(seeds, seed_times):
    """Seeds that reach most of the graph, alone or beside many too early for any edge: the
    relabel map hashes per seed or globally, and the blocks are the reference's either way."""
    g, times = random_timed_graph(seed=3)
    sampler = FusedSampler(g, [-1, -1, -1], times=times, edge_ids=True)
    sg = sampler.temporal.graph
    mb = sampler.sample(torch.tensor(seeds), seed_time=torch.tensor(seed_times))
    ref = reference_blocks(sg, times[sg.edge_ids], seeds, seed_times, 3)
    for block, (indptr, indices, src, seed_index, positions) in zip(mb.blocks, ref):
        assert block.indices.tolist() == indices and block.src_nodes.tolist() == src
        assert block.indptr.tolist() == indptr and block.seed_index.tolist() == seed_index
        assert block.edge_ids.tolist() == sg.edge_ids[positions].tolist()


def test_two_seeds_sharing_a_neighbour_at_different_times():
    """Node 2 reaches seed 0 at time 6 and seed 1 at time 3: seed 0 at time 5 does not see it,
    seed 1 at time 8 does, and where both see it, it is one source per seed."""
    src, dst = torch.tensor([2, 2, 3, 3]), torch.tensor([0, 1, 0, 1])
    g = CSCGraph.from_edges(src, dst, 4, keep_edge_ids=True)
    times = torch.tensor([6, 3, 1, 1])
    sampler = FusedSampler(g, [-1], times=times, edge_ids=True)
    block = sampler.sample(torch.tensor([0, 1]), seed_time=torch.tensor([5, 8])).blocks[0]
    pairs = {(int(block.seed_index[block.indices[e]]), int(block.src_nodes[block.indices[e]]))
             for e in range(block.num_edges)}
    assert pairs == {(0, 3), (1, 2), (1, 3)}
    later = sampler.sample(torch.tensor([0, 1]), seed_time=torch.tensor([9, 9])).blocks[0]
    assert later.src_nodes.tolist() == [0, 1, 3, 2, 3, 2]  # once per seed, in time order
    assert later.seed_index.tolist() == [0, 1, 0, 0, 1, 1]


@pytest.mark.parametrize("replace", [False, True])
def test_sampled_edges_are_real_no_later_than_their_seed_and_stay_in_it(replace):
    g, times = random_timed_graph(seed=1)
    gen = torch.Generator().manual_seed(2)
    seeds = torch.randint(0, g.num_nodes, (64,), generator=gen)
    seed_time = torch.randint(0, 100, (64,), generator=gen)
    sampler = FusedSampler(g, [3, 4, 5], replace=replace, times=times, edge_ids=True, seed=7)
    src_of, dst_of = _coo(g)
    mb = sampler.sample(seeds, batch_id=3, seed_time=seed_time)
    for block in mb.blocks:
        dst_local = block.edge_dst()
        seed_of_dst = block.seed_index[dst_local]
        assert torch.equal(block.seed_index[block.indices], seed_of_dst)  # disjoint subgraphs
        assert bool((times[block.edge_ids] <= seed_time[seed_of_dst]).all())
        assert torch.equal(src_of[block.edge_ids], block.src_nodes[block.indices])
        assert torch.equal(dst_of[block.edge_ids], block.src_nodes[dst_local])
        if not replace:  # no edge twice under one destination
            pairs = dst_local * g.num_edges + block.edge_ids
            assert torch.unique(pairs).numel() == pairs.numel()


def _coo(g: CSCGraph) -> tuple[torch.Tensor, torch.Tensor]:
    """Source and destination of every edge id of a graph that keeps its edge ids."""
    src, dst = torch.empty(g.num_edges, dtype=torch.long), torch.empty(g.num_edges,
                                                                       dtype=torch.long)
    degrees = g.indptr[1:] - g.indptr[:-1]
    src[g.edge_ids] = g.indices.long()
    dst[g.edge_ids] = torch.repeat_interleave(torch.arange(g.num_nodes), degrees)
    return src, dst


def test_uniform_picks_are_uniform_over_the_candidates_only():
    """One destination with 20 edges at times 0..19, seed time 9, fanout 3: each of the ten
    candidates is picked with probability 3/10, later edges never. 40 batches of 100 copies of
    the seed: each copy's subgraph is its own (disjoint), so its picks are its own draws."""
    g = CSCGraph.from_edges(torch.arange(1, 21), torch.zeros(20, dtype=torch.long), 21,
                            keep_edge_ids=True)
    times = torch.arange(20).flip(0)  # not in time order: the sampler sorts a copy
    sampler = FusedSampler(g, [3], times=times, edge_ids=True)
    counts = torch.zeros(20)
    batches, copies = 40, 100
    trials = batches * copies
    for b in range(batches):
        eids = sampler.sample(torch.zeros(copies, dtype=torch.long), batch_id=b,
                              seed_time=torch.full((copies,), 9)).blocks[0].edge_ids
        counts += torch.bincount(eids, minlength=20)
    assert counts[times > 9].sum() == 0
    freq = counts[times <= 9] / trials
    assert float((freq - 0.3).abs().max()) < 0.035  # ~5 standard deviations
    assert g.indices.tolist() == list(range(1, 21)), "the caller's graph was reordered"


def test_last_takes_the_most_recent_and_window_bounds_the_past():
    g = CSCGraph.from_edges(torch.arange(1, 11), torch.zeros(10, dtype=torch.long), 11,
                            keep_edge_ids=True)
    times = torch.tensor([4, 8, 1, 9, 3, 7, 2, 6, 0, 5])
    last = FusedSampler(g, [3], times=times, temporal_strategy="last", edge_ids=True)
    eids = last.sample(torch.tensor([0]), seed_time=torch.tensor([7])).blocks[0].edge_ids
    assert times[eids].tolist() == [5, 6, 7]  # in time order
    windowed = FusedSampler(g, [-1], times=times, time_window=2, edge_ids=True)
    eids = windowed.sample(torch.tensor([0]), seed_time=torch.tensor([7])).blocks[0].edge_ids
    assert sorted(times[eids].tolist()) == [5, 6, 7]


@pytest.mark.parametrize("window", [-1, 30])
def test_excluded_edges_are_no_candidates_at_any_hop(window):
    """A batch's excluded edges (link prediction's own edges, FusedSampler.sample's `exclude`)
    leave every seed's subgraph at every hop; the other candidates stay as the reference's."""
    g, times = random_timed_graph(seed=5)
    sampler = FusedSampler(g, [-1, -1, -1], times=times, edge_ids=True,
                           time_window=None if window < 0 else window)
    exclude = torch.arange(0, g.num_edges, 3)  # caller's edge ids
    check_against_reference(sampler, times, window, exclude,
                            torch.isin(sampler.temporal.graph.edge_ids, exclude))


def check_against_reference(sampler: FusedSampler, times: torch.Tensor, window: int,
                            exclude: torch.Tensor, dropped: torch.Tensor) -> None:
    """`sampler`'s fanout -1 blocks (3 layers) of five seeds, one repeated, excluding
    `exclude`, equal the plain reference's with the positions where `dropped` holds (of the
    sampler's time-sorted graph) left out."""
    sg = sampler.temporal.graph
    positions = frozenset(torch.nonzero(dropped).flatten().tolist())
    seeds, seed_times = [5, 5, 17, 0, 199], [50, 10, 99, 0, 70]
    mb = sampler.sample(torch.tensor(seeds), seed_time=torch.tensor(seed_times),
                        exclude=exclude)
    ref = reference_blocks(sg, times[sg.edge_ids], seeds, seed_times, 3, window, positions)
    for block, (indptr, indices, src, seed_index, at) in zip(mb.blocks, ref):
        assert block.indptr.tolist() == indptr and block.indices.tolist() == indices
        assert block.src_nodes.tolist() == src and block.seed_index.tolist() == seed_index
        assert block.edge_ids.tolist() == sg.edge_ids[at].tolist()
        assert not bool(torch.isin(block.edge_ids, exclude).any())


def test_excluded_edges_under_uniform_and_last_picks():
    """One destination with edges at times 0..19, seed time 9, edges at times 7 and 2
    excluded: uniform picks (fanout 3) take each of the 8 others with probability 3/8; 'last'
    takes the most recent that are left, in time order."""
    g = CSCGraph.from_edges(torch.arange(1, 21), torch.zeros(20, dtype=torch.long), 21,
                            keep_edge_ids=True)
    times = torch.arange(20).flip(0)  # edge id e at time 19 - e
    exclude = torch.tensor([19 - 7, 19 - 2])
    uniform = FusedSampler(g, [3], times=times, edge_ids=True)
    counts = torch.zeros(20)
    batches, copies = 40, 100  # copies of the seed in a batch: disjoint subgraphs, own draws
    trials = batches * copies
    for b in range(batches):
        eids = uniform.sample(torch.zeros(copies, dtype=torch.long), batch_id=b,
                              seed_time=torch.full((copies,), 9), exclude=exclude
                              ).blocks[0].edge_ids
        counts += torch.bincount(eids, minlength=20)
    kept = (times <= 9) & ~torch.isin(torch.arange(20), exclude)
    assert counts[~kept].sum() == 0
    assert float((counts[kept] / trials - 3 / 8).abs().max()) < 0.04  # ~5 standard deviations
    for fanout, want in ((3, [6, 8, 9]), (7, [1, 3, 4, 5, 6, 8, 9]),
                         (9, [0, 1, 3, 4, 5, 6, 8, 9])):
        last = FusedSampler(g, [fanout], times=times, temporal_strategy="last", edge_ids=True)
        eids = last.sample(torch.tensor([0]), seed_time=torch.tensor([9]),
                           exclude=exclude).blocks[0].edge_ids
        assert times[eids].tolist() == want
    everything = torch.arange(20)  # every candidate excluded: no pick, no error
    block = last.sample(torch.tensor([0]), seed_time=torch.tensor([9]),
                        exclude=everything).blocks[0]
    assert block.num_edges == 0 and block.src_nodes.tolist() == [0]


def test_node_time_gives_the_seeds_times_and_the_loader_uses_it():
    g, times = random_timed_graph(seed=3)
    node_time = torch.randint(0, 100, (g.num_nodes,), generator=torch.Generator().manual_seed(4))
    sampler = FusedSampler(g, [4, 4], times=times, node_time=node_time, edge_ids=True)
    seeds = torch.arange(0, 60, 2)
    by_default = sampler.sample(seeds, batch_id=5)
    explicit = sampler.sample(seeds, batch_id=5, seed_time=node_time[seeds])
    for a, b in zip(by_default.blocks, explicit.blocks):
        assert torch.equal(a.indices, b.indices) and torch.equal(a.edge_ids, b.edge_ids)
    n = g.num_nodes
    dataset = Dataset(g, torch.randn(n, 4), torch.zeros(n, dtype=torch.long), seeds, seeds[:1],
                      seeds[:1], num_classes=2, name="timed")
    loader = Loader(dataset, sampler, "cpu", batch_size=10, shuffle=False)
    for batch, start in zip(loader, range(0, 30, 10)):
        ref = sampler.sample(seeds[start:start + 10], batch_id=batch.batch_id)
        for a, b in zip(batch.blocks, ref.blocks):
            assert torch.equal(a.src_nodes, b.src_nodes) and torch.equal(a.seed_index,
                                                                         b.seed_index)


@pytest.mark.parametrize("weighted", [False, True])
def test_blocks_do_not_depend_on_threads(weighted):
    g, times = random_timed_graph(n=3000, e=60000, seed=5)
    seeds = torch.randint(0, 3000, (2048,), generator=torch.Generator().manual_seed(6))
    weights = (torch.rand(g.num_edges, generator=torch.Generator().manual_seed(6)) ** 4
               if weighted else None)  # weighted temporal: tests/test_weighted_temporal.py
    sampler = FusedSampler(g, [5, 10, 15], times=times, node_time=torch.full((3000,), 60),
                           weights=weights)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = sampler.sample(seeds, batch_id=1)
        torch.set_num_threads(2)
        two = sampler.sample(seeds, batch_id=1)
    finally:
        torch.set_num_threads(before)
    for a, b in zip(one.blocks, two.blocks):
        assert torch.equal(a.indptr, b.indptr) and torch.equal(a.indices, b.indices)
        assert torch.equal(a.src_nodes, b.src_nodes)


def test_a_typed_graph_with_a_timed_and_an_untimed_relation():
    gen = torch.Generator().manual_seed(8)
    cites = (torch.randint(0, 50, (400,), generator=gen), torch.randint(0, 50, (400,),
                                                                        generator=gen))
    writes = (torch.randint(0, 20, (100,), generator=gen), torch.randint(0, 50, (100,),
                                                                         generator=gen))
    g = TypedGraph.from_edges({"paper": 50, "author": 20},
                              {("paper", "cites", "paper"): cites,
                               ("author", "writes", "paper"): writes})
    cite_times = torch.randint(0, 10, (400,), generator=gen)
    sampler = FusedSampler(g, [-1, -1], times={"cites": cite_times}, edge_ids=True,
                           node_time={"paper": torch.randint(0, 10, (50,), generator=gen)})
    seeds = torch.tensor([3, 3, 9])
    mb = sampler.sample({"paper": seeds}, seed_time={"paper": torch.tensor([2, 9, 5])})
    seed_time = torch.tensor([2, 9, 5])
    for block in mb.blocks:
        c = block.blocks[("paper", "cites", "paper")]
        assert bool((cite_times[c.edge_ids] <= seed_time[c.seed_index[c.edge_dst()]]).all())
        w = block.blocks[("author", "writes", "paper")]
        dst_seed = block.seed_index["paper"][w.edge_dst()]
        assert torch.equal(w.seed_index[w.indices], dst_seed)
        assert torch.equal(w.seed_index, block.seed_index["author"])
    # the untimed relation takes every edge into each paper, whatever the time
    top = mb.blocks[-1].blocks[("author", "writes", "paper")]
    writes_into = [(writes[1] == v).sum().item() for v in seeds.tolist()]
    assert top.in_degrees().tolist() == writes_into


def test_bad_input_is_named():
    g, times = random_timed_graph()
    with pytest.raises(TypeError, match="times must be an integer tensor"):
        FusedSampler(g, [2], times=times.float())
    with pytest.raises(ValueError, match="times must be 1-D with 3000 entries"):
        FusedSampler(g, [2], times=times[:-1])
    with pytest.raises(ValueError, match="time_window must be >= 0"):
        FusedSampler(g, [2], times=times, time_window=-3)
    with pytest.raises(ValueError, match="temporal_strategy must be one of"):
        FusedSampler(g, [2], times=times, temporal_strategy="recent")
    with pytest.raises(ValueError, match="replace must be False"):
        FusedSampler(g, [2], times=times, temporal_strategy="last", replace=True)
    with pytest.raises(ValueError, match="temporal_strategy='last' picks the most recent"):
        FusedSampler(g, [2], times=times, weights=torch.ones(g.num_edges),
                     temporal_strategy="last")
    with pytest.raises(ValueError, match="need times"):
        FusedSampler(g, [2], node_time=torch.zeros(g.num_nodes, dtype=torch.long))
    sampler = FusedSampler(g, [2], times=times)
    with pytest.raises(ValueError, match="seed_time is needed"):
        sampler.sample(torch.tensor([1, 2]))
    with pytest.raises(ValueError, match="seed_time must be 1-D with 2 entries"):
        sampler.sample(torch.tensor([1, 2]), seed_time=torch.tensor([1]))
    with pytest.raises(ValueError, match=r"seeds must lie in \[0, 200\)"):
        sampler.sample(torch.tensor([1, 200]), seed_time=torch.tensor([1, 1]))
    with pytest.raises(ValueError, match="seed_time needs a temporal sampler"):
        FusedSampler(g, [2]).sample(torch.tensor([1]), seed_time=torch.tensor([1]))


def test_the_op_checks_its_temporal_arguments():
    g, times = random_timed_graph()
    node_map = torch.full((g.num_nodes,), -1, dtype=torch.int32)
    seeds = torch.tensor([1, 1, 2])

    def call(edge_times, seed_times, window=-1, strategy=0, replace=False, weights=()):
        w, t, c = ([], [], []) if not weights else weights
        return _ops.ops.sample_fused_typed([g.indptr], [g.indices], [0], [0], [g.num_nodes],
                                           [seeds], [3], replace, 0, 0, False, w, t, c,
                                           edge_times, seed_times, window, strategy, [], node_map)
    with pytest.raises(RuntimeError, match="edge_times of relation 0 must be contiguous int64"):
        call([times[:-1]], [torch.zeros(3, dtype=torch.long)])
    with pytest.raises(RuntimeError, match=r"seed_times\[0\] must be contiguous int64"):
        call([times], [torch.zeros(2, dtype=torch.long)])
    with pytest.raises(RuntimeError, match="time_window must be -1"):
        call([times], [torch.zeros(3, dtype=torch.long)], window=-2)
    with pytest.raises(RuntimeError, match="temporal_strategy must be 0"):
        call([times], [torch.zeros(3, dtype=torch.long)], strategy=2)
    with pytest.raises(RuntimeError, match="replace must be false"):
        call([times], [torch.zeros(3, dtype=torch.long)], strategy=1, replace=True)
    with pytest.raises(RuntimeError, match="edge_times needs seed_times"):
        call([times], [])
    # "last" on a weighted relation: its weights are a mask; a positive count that overstates
    # them (not what weight_table wrote) gives picks inside the list, never a bad read
    w = (torch.arange(g.num_edges) % 2).float()
    table, nonzero = _ops.ops.weight_table(g.indptr, g.indices, w)
    for counts in (nonzero, nonzero + 5):
        flat = call([times], [torch.full((3,), 50, dtype=torch.long)], strategy=1,
                    weights=([w], [table], [counts]))
        assert bool((flat[1] >= 0).all()) and bool((node_map == -1).all())
    # unsorted times give some candidates, never a read outside the list
    shuffled = times[torch.randperm(g.num_edges, generator=torch.Generator().manual_seed(0))]
    flat = call([shuffled], [torch.full((3,), 50, dtype=torch.long)])
    assert flat[1].numel() <= 9
    assert bool((node_map == -1).all())


def test_evaluation_never_reads_every_edge_for_a_temporal_or_weighted_sampler():
    from gnnrepro.models.graphsage import GraphSAGE
    g, times = random_timed_graph()
    model = GraphSAGE(8, 8, 2, num_layers=2, dropout=0.0)
    temporal = FusedSampler(g, [2, 2], times=times)
    weighted = FusedSampler(g, [2, 2], weights=torch.rand(g.num_edges))
    for sampler in (temporal, weighted):
        assert choose_eval_method("auto", model, sampler, 10**6) == "sampled"
        with pytest.raises(ValueError, match="weighted or temporal"):
            choose_eval_method("layerwise", model, sampler, 10)
    assert choose_eval_method("auto", model, FusedSampler(g, [2, 2]), 10**6) == "layerwise"


def test_opcheck_with_times():
    """The op's schema, fake kernel (the extra per-type seed indices) and autograd checks hold
    for a temporal call."""
    g, times = random_timed_graph(n=50, e=400)
    timed = FusedSampler(g, [2], times=times).temporal
    node_map = torch.full((g.num_nodes,), -1, dtype=torch.int32)
    sg = timed.graph
    torch.library.opcheck(
        _ops.ops.sample_fused_typed.default,
        ([sg.indptr], [sg.indices], [0], [0], [g.num_nodes], [torch.tensor([0, 2, 2])], [3, 2],
         False, 1, 2, True, [], [], [], timed.edge_times, [torch.tensor([10, 50, 90])], 20, 0, [],
         node_map))


def test_ignoring_time_leaks_the_future_on_temporal_sim(tmp_path, one_thread):
    """On temporal-sim, where later edges are more homophilous, GraphSAGE trained and evaluated
    on untimed samples scores at least 5 points of validation accuracy above the same model on
    temporal samples (each node at its node_time); and no temporal sample holds an edge later
    than its seed."""
    from gnnrepro.datasets import load
    from gnnrepro.training.loop import train
    data = load("temporal-sim", root=tmp_path, scale=0.005)
    untimed = FusedSampler(data.graph, [10, 10])
    timed = FusedSampler(data.graph, [10, 10], times=data.edge_time, node_time=data.node_time,
                         edge_ids=True)
    mb = timed.sample(data.val_idx[:256])
    seed_time = data.node_time[data.val_idx[:256]]
    for block in mb.blocks:
        dst_seed = block.seed_index[block.edge_dst()]
        assert bool((data.edge_time[block.edge_ids] <= seed_time[dst_seed]).all())
    accuracy = {}
    for name, sampler in (("untimed", untimed), ("timed", timed)):
        loader = Loader(data, sampler, "cpu", batch_size=256, seed=0)
        result = train(data, loader, sampler, epochs=4, hidden=64, lr=0.01, seed=0,
                       eval_method="sampled")
        accuracy[name] = result.val_acc
    assert accuracy["untimed"] >= accuracy["timed"] + 0.05, accuracy
    assert accuracy["timed"] > 0.3, accuracy  # still learns (47 classes; features alone ~0.25)
