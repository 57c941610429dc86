"""Edges excluded from a batch's sampling (FusedSampler.sample(..., exclude=edge ids), DGL's
exclude_edges): never sampled, the others sampled uniformly, by the caller's edge ids, on
typed graphs per relation; bad input named."""
from __future__ import annotations

import pytest
import torch

from gnnrepro import _ops
from gnnrepro.graph import CSCGraph
from gnnrepro.sampling import FusedSampler
from gnnrepro.typed_graph import TypedGraph


def random_graph(n: int = 300, e: int = 4000, seed: int = 0,
                 index_dtype: torch.dtype = torch.int64) -> CSCGraph:
    """A random multigraph with loops whose edge ids are its input order (not CSC order)."""
    gen = torch.Generator().manual_seed(seed)
    src, dst = torch.randint(0, n, (e,), generator=gen), torch.randint(0, n, (e,), generator=gen)
    return CSCGraph.from_edges(src, dst, n, index_dtype=index_dtype, keep_edge_ids=True)


def in_edges(g: CSCGraph, v: int) -> set[int]:
    lo, hi = int(g.indptr[v]), int(g.indptr[v + 1])
    return set(g.edge_ids[lo:hi].tolist())


@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32])
@pytest.mark.parametrize("count", [900, 7])  # the op's buckets: a position each, or 256
def test_all_neighbours_but_the_excluded(index_dtype, count):
    g = random_graph(index_dtype=index_dtype)
    gen = torch.Generator().manual_seed(1)
    exclude = torch.randperm(g.num_edges, generator=gen)[:count]
    seeds = torch.arange(0, 300, 7)
    sampler = FusedSampler(g, [-1, -1], edge_ids=True)
    mb = sampler.sample(seeds, exclude=exclude)
    dropped = set(exclude.tolist())
    for block in mb.blocks:
        dst = block.dst_nodes
        for i in range(block.num_dst):
            lo, hi = int(block.indptr[i]), int(block.indptr[i + 1])
            got = block.edge_ids[lo:hi].tolist()
            assert sorted(got) == sorted(in_edges(g, int(dst[i])) - dropped)
    plain = sampler.sample(seeds)  # nothing excluded: the full neighbourhoods
    assert sum(b.num_edges for b in plain.blocks) > sum(b.num_edges for b in mb.blocks)


@pytest.mark.parametrize("replace", [False, True])
def test_the_others_are_sampled_uniformly(replace):
    """One destination with 10 in-edges, 3 of them excluded, fanout 3: each of the other seven
    is in a batch with probability 3/7 (without replacement) or drawn 3/7 times a batch (with)."""
    g = CSCGraph.from_edges(torch.arange(1, 11), torch.zeros(10, dtype=torch.long), 11,
                            keep_edge_ids=True)
    sampler = FusedSampler(g, [3], replace=replace, edge_ids=True)
    exclude = torch.tensor([0, 4, 9])
    counts = torch.zeros(10)
    trials = 4000
    for b in range(trials):
        eids = sampler.sample(torch.tensor([0]), batch_id=b, exclude=exclude).blocks[0].edge_ids
        counts += torch.bincount(eids, minlength=10)
    assert counts[exclude].sum() == 0
    kept = torch.tensor([i for i in range(10) if i not in (0, 4, 9)])
    assert float((counts[kept] / trials - 3 / 7).abs().max()) < 0.04


@pytest.mark.parametrize("kind", ["uniform", "weighted", "temporal", "last"])
def test_excluded_edges_elsewhere_change_nothing(kind):
    """One layer: excluding edges into nodes that are no seeds leaves the blocks as they were,
    however many (the CPU op buckets the excluded positions by their count: one position a
    bucket for thousands, hundreds for a few), while the seeds' own excluded edges stay out."""
    g = random_graph(n=300, e=4000, seed=3)
    gen = torch.Generator().manual_seed(4)
    options = {"weighted": {"weights": torch.rand(g.num_edges, generator=gen)},
               "temporal": {"times": torch.randint(0, 9, (g.num_edges,), generator=gen)},
               "last": {"times": torch.randint(0, 9, (g.num_edges,), generator=gen),
                        "temporal_strategy": "last"}}.get(kind, {})
    sampler = FusedSampler(g, [4], edge_ids=True, **options)
    seeds = torch.arange(0, 300, 3)
    csc = sampler.temporal.graph if sampler.temporal is not None else g
    into_seed = torch.isin(torch.repeat_interleave(torch.arange(300), csc.in_degrees()), seeds)
    own = csc.edge_ids[into_seed][::40]  # a few in-edges of the seeds
    others = csc.edge_ids[~into_seed]
    times = {"seed_time": torch.full((seeds.numel(),), 5)} if "times" in options else {}
    blocks = []
    for extra in (0, 3, 40, 2500):
        exclude = torch.cat([own, others[torch.randperm(others.numel(), generator=gen)[:extra]]])
        block = sampler.sample(seeds, batch_id=2, exclude=exclude, **times).blocks[0]
        assert not bool(torch.isin(block.edge_ids, own).any())
        blocks.append(block)
    for block in blocks[1:]:
        assert torch.equal(block.indptr, blocks[0].indptr)
        assert torch.equal(block.edge_ids, blocks[0].edge_ids)


def test_typed_relations_exclude_their_own_ids_and_threads_do_not_matter():
    gen = torch.Generator().manual_seed(2)
    cites = (torch.randint(0, 80, (900,), generator=gen), torch.randint(0, 80, (900,),
                                                                        generator=gen))
    writes = (torch.randint(0, 30, (300,), generator=gen), torch.randint(0, 80, (300,),
                                                                         generator=gen))
    g = TypedGraph.from_edges({"paper": 80, "author": 30},
                              {("paper", "cites", "paper"): cites,
                               ("author", "writes", "paper"): writes}, keep_edge_ids=True)
    sampler = FusedSampler(g, [4, 4], edge_ids=True)
    exclude = {"cites": torch.arange(0, 900, 2)}
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = sampler.sample({"paper": torch.arange(40)}, batch_id=3, exclude=exclude)
        torch.set_num_threads(2)
        two = sampler.sample({"paper": torch.arange(40)}, batch_id=3, exclude=exclude)
    finally:
        torch.set_num_threads(before)
    for a, b in zip(one.blocks, two.blocks):
        cited = a.blocks[("paper", "cites", "paper")].edge_ids
        assert bool((cited % 2 == 1).all())  # the even ids were excluded
        assert torch.equal(cited, b.blocks[("paper", "cites", "paper")].edge_ids)
        assert a.blocks[("author", "writes", "paper")].num_edges > 0


def test_bad_exclusions_are_named():
    g = random_graph()
    sampler = FusedSampler(g, [2])
    with pytest.raises(ValueError, match=r"exclude must be edge ids in \[0, 4000\)"):
        sampler.sample(torch.tensor([1]), exclude=torch.tensor([4000]))
    with pytest.raises(TypeError, match="exclude"):
        sampler.sample(torch.tensor([1]), exclude=torch.tensor([1.0]))
    with pytest.raises(TypeError, match="must be a tensor of edge ids"):
        sampler.sample(torch.tensor([1]), exclude={"cites": torch.tensor([1])})
    node_map = torch.full((g.num_nodes,), -1, dtype=torch.int32)

    def call(excluded):
        return _ops.ops.sample_fused_typed([g.indptr], [g.indices], [0], [0], [g.num_nodes],
                                           [torch.tensor([1, 2])], [3], False, 0, 0, False, [],
                                           [], [], [], [], -1, 0, excluded, node_map)
    with pytest.raises(ValueError, match="sorted, distinct CSC positions .* entry 1 is 3"):
        call([torch.tensor([5, 3])])
    with pytest.raises(ValueError, match="entry 0 is -1"):
        call([torch.tensor([-1])])
    with pytest.raises(RuntimeError, match="one entry per relation"):
        call([None, None])
    assert bool((node_map == -1).all())
