"""Temporal (and disjoint) sampling on "cpu" and "cuda": the CUDA op's blocks bit-identical to
the CPU op's: uniform and "last" picks, windows, repeated seeds, excluded edges, weights and
masks among the candidates, typed graphs with timed and untimed relations, a graph in GPU
memory or pinned and read over UVA; and the same errors."""
from __future__ import annotations

import pytest
import torch

from gnnrepro._ops import ops
from gnnrepro.graph import CSCGraph
from gnnrepro.sampling import FusedSampler
from gnnrepro.typed_graph import TypedGraph

from .conftest import host_syncs, needs_cuda


def _graph() -> tuple[CSCGraph, torch.Tensor]:
    """Skewed in-degrees (a hub of 2,000 edges), edge ids kept, times with many ties."""
    gen = torch.Generator().manual_seed(4)
    n, e = 500, 10000
    dst = (torch.rand(e, generator=gen) ** 3 * n).long()
    dst[:2000] = 0
    src = torch.randint(0, n, (e,), generator=gen)
    g = CSCGraph.from_edges(src, dst, n, keep_edge_ids=True)
    return g, torch.randint(0, 60, (e,), generator=gen)


def _equal_blocks(a, b) -> None:
    for x, y in zip(a.blocks, b.blocks):
        assert torch.equal(x.indptr, y.indptr.cpu()) and torch.equal(x.indices, y.indices.cpu())
        assert torch.equal(x.src_nodes, y.src_nodes.cpu())
        assert torch.equal(x.seed_index, y.seed_index.cpu())
        if x.edge_ids is not None:
            assert torch.equal(x.edge_ids, y.edge_ids.cpu())


def _seeds() -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(9)
    seeds = torch.cat([torch.zeros(8, dtype=torch.int64), torch.randint(0, 500, (120,),
                                                                        generator=gen)])
    return seeds, torch.randint(0, 70, (128,), generator=gen)


@pytest.mark.parametrize("strategy,window,fanouts", [("uniform", None, [5, 10]),
                                                     ("uniform", 15, [25, -1]),
                                                     ("last", None, [4, 6]),
                                                     ("last", 30, [40, 3])])
def test_temporal_blocks_are_the_cpu_ops(device: str, strategy: str, window, fanouts) -> None:
    g, times = _graph()
    seeds, seed_time = _seeds()
    args = dict(times=times, temporal_strategy=strategy, time_window=window, edge_ids=True,
                seed=3)
    want = FusedSampler(g, fanouts, **args)
    got = FusedSampler(g.to(device), fanouts, **{**args, "times": times.to(device)})
    for batch in range(3):
        _equal_blocks(want.sample(seeds, batch, seed_time=seed_time),
                      got.sample(seeds.to(device), batch, seed_time=seed_time.to(device)))


@pytest.mark.parametrize("replace", [False, True])
def test_disjoint_and_excluded_blocks_are_the_cpu_ops(device: str, replace: bool) -> None:
    g, times = _graph()
    seeds, seed_time = _seeds()
    exclude = torch.arange(0, g.num_edges, 7)
    want = FusedSampler(g, [6, 4], times=times, replace=replace, edge_ids=True)
    got = FusedSampler(g.to(device), [6, 4], times=times.to(device), replace=replace,
                       edge_ids=True)
    _equal_blocks(want.sample(seeds, 1, seed_time=seed_time, exclude=exclude),
                  got.sample(seeds.to(device), 1, seed_time=seed_time.to(device),
                             exclude=exclude.to(device)))
    want = FusedSampler(g, [6, 4], disjoint=True, replace=replace)
    got = FusedSampler(g.to(device), [6, 4], disjoint=True, replace=replace)
    _equal_blocks(want.sample(seeds, 2), got.sample(seeds.to(device), 2))


@pytest.mark.parametrize("strategy", ["uniform", "last"])
def test_weighted_temporal_blocks_are_the_cpu_ops(device: str, strategy: str) -> None:
    g, times = _graph()
    seeds, seed_time = _seeds()
    gen = torch.Generator().manual_seed(1)
    if strategy == "last":
        weights = torch.rand(g.num_edges, generator=gen) < 0.5  # a mask
    else:
        weights = torch.rand(g.num_edges, generator=gen) ** -2
        weights[torch.rand(g.num_edges, generator=gen) < 0.3] = 0.0
    args = dict(times=times, temporal_strategy=strategy, edge_ids=True, seed=7)
    want = FusedSampler(g, [8, 5], weights=weights, **args)
    got = FusedSampler(g.to(device), [8, 5], weights=weights.to(device),
                       **{**args, "times": times.to(device)})
    for batch in range(2):
        _equal_blocks(want.sample(seeds, batch, seed_time=seed_time),
                      got.sample(seeds.to(device), batch, seed_time=seed_time.to(device)))


def _typed_graph() -> tuple[TypedGraph, torch.Tensor]:
    gen = torch.Generator().manual_seed(8)
    g = TypedGraph.from_edges(
        {"paper": 300, "author": 120},
        {("paper", "cites", "paper"): (torch.randint(0, 300, (3000,), generator=gen),
                                       torch.randint(0, 300, (3000,), generator=gen)),
         ("author", "writes", "paper"): (torch.randint(0, 120, (900,), generator=gen),
                                         torch.randint(0, 300, (900,), generator=gen)),
         ("paper", "rev_writes", "author"): (torch.randint(0, 300, (900,), generator=gen),
                                             torch.randint(0, 120, (900,), generator=gen))})
    return g, torch.randint(0, 40, (3000,), generator=gen)


def test_typed_temporal_blocks_are_the_cpu_ops(device: str) -> None:
    g, cite_times = _typed_graph()
    seeds = {"paper": torch.tensor([3, 3, 9, 250, 17]), "author": torch.tensor([5, 5, 100])}
    seed_time = {"paper": torch.tensor([10, 30, 5, 39, 0]), "author": torch.tensor([1, 2, 3])}
    want = FusedSampler(g, [4, 7], times={"cites": cite_times}, edge_ids=True)
    got = FusedSampler(g.to(device), [4, 7], times={"cites": cite_times.to(device)},
                       edge_ids=True)
    a = want.sample(seeds, 4, seed_time=seed_time)
    b = got.sample({t: s.to(device) for t, s in seeds.items()}, 4,
                   seed_time={t: s.to(device) for t, s in seed_time.items()})
    for x, y in zip(a.blocks, b.blocks):
        for t in x.src_nodes:
            assert torch.equal(x.src_nodes[t], y.src_nodes[t].cpu())
            assert torch.equal(x.seed_index[t], y.seed_index[t].cpu())
        for rel, xb in x.blocks.items():
            yb = y.blocks[rel]
            assert torch.equal(xb.indptr, yb.indptr.cpu())
            assert torch.equal(xb.indices, yb.indices.cpu())
            assert torch.equal(xb.edge_ids, yb.edge_ids.cpu())


@needs_cuda
def test_temporal_over_uva() -> None:
    g, times = _graph()
    seeds, seed_time = _seeds()
    want = FusedSampler(g, [5, 5], times=times, time_window=20).sample(seeds, 0,
                                                                        seed_time=seed_time)
    pinned = CSCGraph(g.indptr.clone(), g.indices.clone(), edge_ids=g.edge_ids.clone())
    pinned.pin_memory_()
    got = FusedSampler(pinned, [5, 5], times=times, time_window=20, device="cuda")
    _equal_blocks(want, got.sample(seeds.cuda(), 0, seed_time=seed_time.cuda()))


def test_bad_indices_are_named_and_leave_the_map_clean(device: str) -> None:
    g, times = _graph()
    indices = g.indices.clone()
    indices[5] = 10**6
    bad = CSCGraph(g.indptr, indices, validate=False)
    sampler = FusedSampler(bad.to(device), [-1], times=times.to(device))
    with pytest.raises(RuntimeError, match=r"indices holds node id 1000000 outside \[0, 500\)"):
        sampler.sample(torch.tensor([0, 0], device=device), 0,
                       seed_time=torch.tensor([100, 100], device=device))
    assert bool((sampler._node_map == -1).all())


@pytest.mark.parametrize("bad", [1024, -1, 2**40])
def test_a_bad_seed_is_named_by_the_op(device: str, bad: int) -> None:
    """Seeds straight to the op (FusedSampler checks them first): a seed outside [0, N) is
    raised as the CPU op raises it, and no kernel reads a seed time it does not have."""
    n = 1024  # a power of two: -1's low bits are a valid node, 1024 is one past the last
    g = CSCGraph.from_edges(torch.arange(n), torch.arange(n).roll(1), n)
    g = CSCGraph(g.indptr.to(device), g.indices.to(device))
    seeds = torch.tensor([3, bad], device=device)
    with pytest.raises(ValueError, match=rf"seeds must lie in \[0, num_nodes={n}\): "
                                         rf"seeds\[1\] = {bad}"):
        ops.sample_fused_typed([g.indptr], [g.indices], [0], [0], [n], [seeds], [2, 2], False,
                               0, 0, False, [], [], [], [torch.zeros(n, dtype=torch.long,
                                                                     device=device)],
                               [torch.zeros(2, dtype=torch.long, device=device)], -1, 0, [],
                               torch.full((n,), -1, dtype=torch.int32, device=device))


@needs_cuda
def test_host_syncs_are_four_a_layer_and_one(capfd) -> None:
    """docs/gpu.md's count: the first count's sync, then per layer the sync that raises its
    errors, the relabel's two (the new sources' count, their count per type) and the next
    count's."""
    g, times = _graph()
    seeds, seed_time = _seeds()
    g = g.to("cuda")
    args = ([g.indptr], [g.indices], [0], [0], [g.num_nodes], [seeds.cuda()], [3, 3], False, 0,
            0, False, [], [], [], [times.cuda()], [seed_time.cuda()], -1, 0, [],
            torch.full((g.num_nodes,), -1, dtype=torch.int32, device="cuda"))
    ops.sample_fused_typed(*args)  # the first call's one-off work (cub, the allocator)
    assert host_syncs(lambda: ops.sample_fused_typed(*args), capfd) == 4 * 2 + 1
