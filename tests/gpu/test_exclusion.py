"""Edge exclusion (FusedSampler.sample(..., exclude=edge ids), the op's excluded_edges) on "cpu"
and "cuda": the CUDA op's blocks bit-identical to the CPU op's (graph in GPU memory or pinned
and read over UVA; homogeneous and typed, int32 and int64 indices, Floyd with and without its
hash set, whole lists, replacement), no excluded edge sampled, and the same named errors with
the node map left clean."""
from __future__ import annotations


import pytest
import torch

from gnnrepro._ops import ops
from gnnrepro.graph import CSCGraph
from gnnrepro.sampling import FusedSampler
from gnnrepro.typed_graph import TypedGraph

from .conftest import host_syncs, needs_cuda

N, E = 600, 12000


def _graph(index_dtype: torch.dtype = torch.int64) -> CSCGraph:
    """Skewed in-degrees (node 0 a hub of 3,000, so fanout 40 runs Floyd with its hash set);
    edge ids in input order, not CSC order, so that ids and positions differ."""
    gen = torch.Generator().manual_seed(4)
    dst = (torch.rand(E, generator=gen) ** 3 * N).long()
    dst[:3000] = 0
    src = torch.randint(0, N, (E,), generator=gen)
    return CSCGraph.from_edges(src, dst, N, index_dtype=index_dtype, keep_edge_ids=True)


def _excluded_ids(g: CSCGraph) -> torch.Tensor:
    """A third of the edges at random, every in-edge of node 1 and all but two of node 2's
    (a destination left with none, one left with fewer than the fanout), with repeats."""
    gen = torch.Generator().manual_seed(5)
    some = torch.randperm(E, generator=gen)[: E // 3]
    lists = [g.edge_ids[int(g.indptr[v]):int(g.indptr[v + 1])] for v in (1, 2)]
    return torch.cat([some, lists[0], lists[1][2:], some[:50]])


def _assert_same_blocks(want, got, excluded: torch.Tensor) -> None:
    assert len(want.blocks) == len(got.blocks)
    for x, y in zip(want.blocks, got.blocks):
        assert torch.equal(x.indptr, y.indptr.cpu()) and torch.equal(x.indices, y.indices.cpu())
        assert torch.equal(x.edge_ids, y.edge_ids.cpu())
        assert torch.equal(x.src_nodes, y.src_nodes.cpu())
        assert not bool(torch.isin(x.edge_ids, excluded).any()), "an excluded edge was sampled"


@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32])
@pytest.mark.parametrize("fanouts,replace", [([5, 3], False), ([40, 10], False),
                                             ([-1, 4], False), ([6, 2], True)])
@pytest.mark.parametrize("weighted", [False, True])
def test_excluded_blocks_are_the_cpu_ops(device: str, index_dtype: torch.dtype, fanouts,
                                         replace: bool, weighted: bool) -> None:
    """Uniform, and weighted (a third of the weights zero: excluded edges count as zero
    weights, common/weighted_picks.h)."""
    g = _graph(index_dtype)
    exclude = _excluded_ids(g)
    seeds = torch.cat([torch.tensor([0, 1, 2]), torch.arange(3, N, 5)])
    gen = torch.Generator().manual_seed(8)
    w = (torch.rand(E, generator=gen) * (torch.rand(E, generator=gen) < 0.67)
         if weighted else None)
    want = FusedSampler(g, fanouts, replace=replace, edge_ids=True, seed=7, weights=w)
    got = FusedSampler(g.to(device), fanouts, replace=replace, edge_ids=True, seed=7,
                       weights=None if w is None else w.to(device))
    for batch in range(3):
        a = want.sample(seeds, batch, exclude=exclude)
        b = got.sample(seeds.to(device), batch, exclude=exclude.to(device))
        _assert_same_blocks(a, b, exclude)
        if w is not None:
            assert all(bool((w[x.edge_ids] > 0).all()) for x in a.blocks)
    first = a.blocks[-1]  # the seeds' block: node 1 keeps nothing, node 2 at most two
    assert int(first.indptr[2] - first.indptr[1]) == 0
    assert int(first.indptr[3] - first.indptr[2]) <= 2


@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32])
def test_typed_exclusion_is_the_cpu_ops(device: str, index_dtype: torch.dtype) -> None:
    """Two relations excluded (one of them into another node type), one not: relation 1's
    positions go through its own edge id map."""
    gen = torch.Generator().manual_seed(6)
    num = {"paper": 400, "author": 250}
    edges = {("author", "writes", "paper"): (torch.randint(0, 250, (3000,), generator=gen),
                                             torch.randint(0, 400, (3000,), generator=gen)),
             ("paper", "cites", "paper"): (torch.randint(0, 400, (4000,), generator=gen),
                                           (torch.rand(4000, generator=gen) ** 2 * 400).long()),
             ("paper", "rev_writes", "author"): (torch.randint(0, 400, (3000,), generator=gen),
                                                 torch.randint(0, 250, (3000,), generator=gen))}
    g = TypedGraph.from_edges(num, edges, index_dtype, keep_edge_ids=True)
    exclude = {"cites": torch.randperm(4000, generator=gen)[:1500],
               "rev_writes": torch.arange(0, 3000, 3)}
    seeds = {"paper": torch.arange(0, 400, 3), "author": torch.arange(0, 250, 4)}
    fanouts = [{"writes": 5, "cites": 40, "rev_writes": 3},
               {"writes": -1, "cites": 4, "rev_writes": 2}]
    want = FusedSampler(g, fanouts, edge_ids=True, seed=2)
    got = FusedSampler(g.to(device), fanouts, edge_ids=True, seed=2)
    for batch in range(2):
        a = want.sample(seeds, batch, exclude=exclude)
        b = got.sample({t: s.to(device) for t, s in seeds.items()}, batch,
                       exclude={r: ids.to(device) for r, ids in exclude.items()})
        for x, y in zip(a.blocks, b.blocks):
            for rel in x.blocks:
                bx, by = x.blocks[rel], y.blocks[rel]
                assert torch.equal(bx.indptr, by.indptr.cpu())
                assert torch.equal(bx.indices, by.indices.cpu())
                assert torch.equal(bx.edge_ids, by.edge_ids.cpu())
                if rel[1] in exclude:
                    assert not bool(torch.isin(bx.edge_ids, exclude[rel[1]]).any())
            for t in x.src_nodes:
                assert torch.equal(x.src_nodes[t], y.src_nodes[t].cpu())


@needs_cuda
@pytest.mark.parametrize("typed", [False, True])
def test_exclusion_over_uva(typed: bool) -> None:
    """A pinned CPU graph sampled on the GPU: exclude on the GPU like the seeds, the positions
    pinned for the op."""
    g = _graph(torch.int32)
    exclude = _excluded_ids(g)
    seeds = torch.arange(0, N, 3)
    if typed:
        g = TypedGraph({"n": N}, {("n", "r", "n"): g})
        seeds, exclude = {"n": seeds}, {"r": exclude}
    want = FusedSampler(g, [40, 5], edge_ids=True, seed=1).sample(seeds, 2, exclude=exclude)
    pinned = FusedSampler(g.pin_memory_(), [40, 5], edge_ids=True, seed=1, device="cuda")
    to_cuda = (lambda d: {k: v.cuda() for k, v in d.items()}) if typed else (lambda t: t.cuda())
    got = pinned.sample(to_cuda(seeds), 2, exclude=to_cuda(exclude))
    if typed:
        rel = ("n", "r", "n")
        for x, y in zip(want.blocks, got.blocks):
            assert torch.equal(x.blocks[rel].edge_ids, y.blocks[rel].edge_ids.cpu())
            assert torch.equal(x.src_nodes["n"], y.src_nodes["n"].cpu())
    else:
        _assert_same_blocks(want, got, exclude)


def _op_args(g: CSCGraph, device: str, excluded: list, seeds=(1, 2, 3),
             where: str = "device") -> list:
    """The typed op's arguments for `g` as one relation (fanouts [3, 3], edge ids), its graph
    and positions in GPU memory or pinned (`where`); the node map last."""
    op_device = "cuda" if where == "pinned" else device
    place = (lambda t: t.pin_memory()) if where == "pinned" else (lambda t: t.to(device))
    return [[place(g.indptr)], [place(g.indices)], [0], [0], [g.num_nodes],
            [torch.tensor(list(seeds), device=op_device)], [3, 3], False, 0, 0, True, [], [], [],
            [], [], -1, 0, [None if x is None else place(x) for x in excluded],
            torch.full((g.num_nodes,), -1, dtype=torch.int32, device=op_device)]


BAD = [  # (excluded_edges, the message's start: the first relation's smallest bad entry)
    ([torch.tensor([7, 2, 9, 1])], "excluded_edges of relation 0 must be sorted, distinct CSC "
                                   f"positions in [0, {E}): entry 1 is 2"),
    ([torch.tensor([3, 3])], "excluded_edges of relation 0 must be sorted, distinct CSC "
                             f"positions in [0, {E}): entry 1 is 3"),
    ([torch.tensor([-1, 4])], "excluded_edges of relation 0 must be sorted, distinct CSC "
                              f"positions in [0, {E}): entry 0 is -1"),
    ([torch.tensor([5, E])], "excluded_edges of relation 0 must be sorted, distinct CSC "
                             f"positions in [0, {E}): entry 1 is {E}"),
]


@pytest.mark.parametrize("where", ["device", "pinned"])
@pytest.mark.parametrize("excluded,message", BAD)
def test_bad_excluded_edges_are_named(device: str, where: str, excluded, message: str) -> None:
    """The same ValueError on both ops (on the GPU found by a kernel, or on the host for pinned
    positions), also beside a bad seed, which it comes before; the map clean after."""
    if where == "pinned" and device == "cpu":
        pytest.skip("UVA: a CUDA op reading a pinned host graph")
    g = _graph()
    for seeds in [(1, 2, 3), (1, 10**9, 3)]:
        args = _op_args(g, device, excluded, seeds, where)
        with pytest.raises(ValueError) as err:
            ops.sample_fused_typed(*args)
        assert str(err.value).splitlines()[0].startswith(message)
        assert bool((args[-1] == -1).all()), "the op left its node map dirty"


def test_bad_excluded_arguments_are_named(device: str) -> None:
    g = _graph()
    with pytest.raises(RuntimeError, match="excluded_edges of relation 0 must be contiguous "
                                           "1-D int64"):
        ops.sample_fused_typed(*_op_args(g, device, [torch.tensor([1.0, 2.0])]))
    with pytest.raises(RuntimeError, match="excluded_edges of relation 0 must be contiguous"):
        ops.sample_fused_typed(*_op_args(g, device, [torch.arange(0, 20, 2, device=device)[::2]]))
    with pytest.raises(RuntimeError, match="must be empty or hold one entry per relation"):
        ops.sample_fused_typed(*_op_args(g, device, [None, None]))
    sampler = FusedSampler(g.to(device), [3])
    seeds = torch.tensor([1], device=device)
    with pytest.raises(ValueError, match=rf"exclude must be edge ids in \[0, {E}\)"):
        sampler.sample(seeds, exclude=torch.tensor([E], device=device))
    if device != "cpu":
        with pytest.raises(ValueError, match="exclude are on cpu but must be on cuda"):
            sampler.sample(seeds, exclude=torch.tensor([1]))


@needs_cuda
def test_cuda_op_device_errors() -> None:
    """Positions must live where the relation's indices do (a pageable host array is no UVA
    array)."""
    g = _graph()
    with pytest.raises(RuntimeError, match="relation 0's excluded_edges must be on its "
                                           "indices' device"):
        ops.sample_fused_typed([g.indptr.cuda()], [g.indices.cuda()], [0], [0], [N],
                               [torch.tensor([1], device="cuda")], [3], False, 0, 0, False, [],
                               [], [], [], [], -1, 0, [torch.tensor([1])],
                               torch.full((N,), -1, dtype=torch.int32, device="cuda"))
    with pytest.raises(RuntimeError, match="excluded_edges is a pageable CPU tensor"):
        ops.sample_fused_typed([g.indptr.pin_memory()], [g.indices.pin_memory()], [0], [0], [N],
                               [torch.tensor([1], device="cuda")], [3], False, 0, 0, False, [],
                               [], [], [], [], -1, 0, [torch.tensor([1])],
                               torch.full((N,), -1, dtype=torch.int32, device="cuda"))


@needs_cuda
def test_exclusion_adds_no_host_sync(capfd) -> None:
    """The kernel checks positions in GPU memory without a sync: len(fanouts) + 1 per call, as
    without exclusion (tests/gpu/test_sample_fused.py)."""
    args = _op_args(_graph(), "cuda", [torch.arange(0, E, 3)])
    assert host_syncs(lambda: ops.sample_fused_typed(*args), capfd) == 3  # fanouts [3, 3]
