"""Weighted sampling on "cpu" and "cuda": the CUDA kernels' alias tables and blocks
bit-identical to the CPU op's (graph in GPU memory or pinned and read over UVA), with weights
whose running sums nearly tie, zero weights, heavy tails, replacement and typed relations."""
from __future__ import annotations

import pytest
import torch

from gnnrepro._ops import ops
from gnnrepro.graph import CSCGraph
from gnnrepro.sampling import FusedSampler
from gnnrepro.typed_graph import TypedGraph

from .conftest import needs_cuda


def _graph(index_dtype: torch.dtype) -> tuple[CSCGraph, torch.Tensor]:
    """Skewed in-degrees (a hub of 3,000) and weights that stress the rounding: near ties
    (1 and the next floats above it), tiny beside huge, zeros, a heavy tail."""
    gen = torch.Generator().manual_seed(2)
    n, e = 600, 12000
    dst = (torch.rand(e, generator=gen) ** 3 * n).long()
    dst[:3000] = 0
    src = torch.randint(0, n, (e,), generator=gen)
    g = CSCGraph.from_edges(src, dst, n)
    g = CSCGraph(g.indptr, g.indices.to(index_dtype))
    kind = torch.randint(0, 5, (e,), generator=gen)
    w = torch.rand(e, generator=gen) ** -2  # heavy tail
    w = torch.where(kind == 0, 1.0 + torch.randint(0, 4, (e,), generator=gen) * 2.0**-23, w)
    w = torch.where(kind == 1, torch.tensor(1e-30), w)
    w = torch.where(kind == 2, torch.tensor(3e37), w)
    w = torch.where(kind == 3, torch.tensor(0.0), w)
    return g, w


@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32])
def test_tables_are_the_cpu_ops(device: str, index_dtype: torch.dtype) -> None:
    g, w = _graph(index_dtype)
    table, nonzero = ops.weight_table(g.indptr.to(device), g.indices.to(device), w.to(device))
    cpu_table, cpu_nonzero = ops.weight_table(g.indptr, g.indices, w)
    assert torch.equal(table.cpu(), cpu_table) and torch.equal(nonzero.cpu(), cpu_nonzero)


@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32])
@pytest.mark.parametrize("fanouts,replace", [([5, 3], False), ([25, 10], False),
                                             ([-1, 4], False), ([6, 2], True)])
def test_weighted_blocks_are_the_cpu_ops(device: str, index_dtype: torch.dtype, fanouts,
                                         replace: bool) -> None:
    g, w = _graph(index_dtype)
    seeds = torch.arange(0, 600, 4)
    want = FusedSampler(g, fanouts, replace=replace, weights=w, edge_ids=True, seed=5)
    got = FusedSampler(g.to(device), fanouts, replace=replace, weights=w.to(device),
                       edge_ids=True, seed=5)
    for batch in range(3):
        a, b = want.sample(seeds, batch), got.sample(seeds.to(device), batch)
        for x, y in zip(a.blocks, b.blocks):
            assert torch.equal(x.indptr, y.indptr.cpu()) and torch.equal(x.indices, y.indices.cpu())
            assert torch.equal(x.edge_ids, y.edge_ids.cpu())
            assert torch.equal(x.src_nodes, y.src_nodes.cpu())
            assert bool((w[x.edge_ids] > 0).all())


@needs_cuda
def test_weighted_over_uva() -> None:
    g, w = _graph(torch.int32)
    seeds = torch.arange(0, 600, 3)
    want = FusedSampler(g, [10, 5], weights=w, seed=1).sample(seeds, 2)
    pinned = CSCGraph(g.indptr.clone(), g.indices.clone()).pin_memory_()
    got = FusedSampler(pinned, [10, 5], weights=w, seed=1, device="cuda").sample(seeds.cuda(), 2)
    for x, y in zip(want.blocks, got.blocks):
        assert torch.equal(x.indices, y.indices.cpu()) and torch.equal(x.src_nodes,
                                                                       y.src_nodes.cpu())


def test_typed_weighted_relation(device: str) -> None:
    gen = torch.Generator().manual_seed(3)
    num = {"paper": 400, "author": 250}
    edges = {("author", "writes", "paper"): (torch.randint(0, 250, (3000,), generator=gen),
                                             torch.randint(0, 400, (3000,), generator=gen)),
             ("paper", "cites", "paper"): (torch.randint(0, 400, (4000,), generator=gen),
                                           torch.randint(0, 400, (4000,), generator=gen))}
    g = TypedGraph.from_edges(num, edges)
    w = torch.rand(3000, generator=gen) ** -1.5 * (torch.rand(3000, generator=gen) < 0.6)
    seeds = {"paper": torch.arange(0, 400, 3)}
    want = FusedSampler(g, [5, 5], weights={"writes": w}, edge_ids=True).sample(seeds, 4)
    got = FusedSampler(g.to(device), [5, 5], weights={"writes": w.to(device)},
                       edge_ids=True).sample({"paper": seeds["paper"].to(device)}, 4)
    for x, y in zip(want.blocks, got.blocks):
        for rel in x.blocks:
            assert torch.equal(x.blocks[rel].edge_ids, y.blocks[rel].edge_ids.cpu())
            assert torch.equal(x.blocks[rel].indices, y.blocks[rel].indices.cpu())
