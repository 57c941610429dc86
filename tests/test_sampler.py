"""Invariants of the fused sampler and the reference sampler on random graphs."""
from __future__ import annotations

import pickle
from collections import Counter

import pytest
import torch

from helpers import edge_multiplicity, random_graph, require_dgl
from gnnrepro import CSCGraph
from gnnrepro.sampling import FusedSampler, MiniBatch, ReferenceSampler

SAMPLERS = [FusedSampler, ReferenceSampler]


def check_minibatch(graph: CSCGraph, mb: MiniBatch, seeds: torch.Tensor, fanouts: list[int],
                    replace: bool) -> None:
    """Every structural promise a sampler makes about its blocks."""
    multiplicity = edge_multiplicity(graph)
    degree = graph.in_degrees()
    assert len(mb.blocks) == len(fanouts)
    assert torch.equal(mb.blocks[-1].dst_nodes, seeds)
    assert torch.equal(mb.blocks[0].src_nodes, mb.input_nodes)
    for layer, (block, fanout) in enumerate(zip(mb.blocks, fanouts)):
        assert block.indptr.dtype == block.indices.dtype == block.src_nodes.dtype == torch.int64
        assert block.indptr.numel() == block.num_dst + 1 and int(block.indptr[0]) == 0
        assert int(block.indptr[-1]) == block.num_edges
        if layer + 1 < len(fanouts):  # this layer's destinations are the next layer's sources
            assert torch.equal(block.dst_nodes, mb.blocks[layer + 1].src_nodes)
        assert torch.unique(block.src_nodes).numel() == block.num_src, "sources must be unique"
        if block.num_edges:
            assert int(block.indices.min()) >= 0 and int(block.indices.max()) < block.num_src
        # Sources are listed in first-use order after the destinations.
        new_sources = block.indices[block.indices >= block.num_dst]
        first_use = new_sources[_first_index(new_sources)]
        assert torch.equal(first_use, torch.arange(block.num_dst, block.num_src))
        dst_deg = degree[block.dst_nodes]
        if fanout == -1:
            expected = dst_deg
        elif replace:
            expected = torch.where(dst_deg > 0, fanout, 0)
        else:
            expected = dst_deg.clamp(max=fanout)
        assert torch.equal(block.in_degrees(), expected)
        src_global = block.src_nodes[block.indices]
        dst_global = block.dst_nodes[block.edge_dst()]
        picked = Counter(zip(dst_global.tolist(), src_global.tolist()))
        for pair, count in picked.items():
            assert pair in multiplicity, f"sampled edge {pair[1]}->{pair[0]} is not in the graph"
            if not replace:
                assert count <= multiplicity[pair], f"edge {pair} picked more often than it exists"


def _first_index(values: torch.Tensor) -> list[int]:
    """Positions of the first occurrence of each distinct value, in order of appearance."""
    seen: set[int] = set()
    return [i for i, v in enumerate(values.tolist()) if not (v in seen or seen.add(v))]


@pytest.mark.parametrize("sampler_cls", SAMPLERS)
@pytest.mark.parametrize("fanouts,replace", [
    ([4, 3], False), ([15, 10, 5], False), ([3, 2], True), ([-1, 2], False), ([-1], True),
    ([1000], False),  # fanout >= every degree takes every neighbour
])
def test_block_invariants(graph, sampler_cls, fanouts, replace):
    seeds = torch.randperm(graph.num_nodes, generator=torch.Generator().manual_seed(3))[:64]
    mb = sampler_cls(graph, fanouts, replace=replace, seed=5).sample(seeds, batch_id=2)
    check_minibatch(graph, mb, seeds, fanouts, replace)


@pytest.mark.parametrize("sampler_cls", SAMPLERS)
def test_isolated_seeds_and_int32_seeds(sampler_cls):
    graph = random_graph(300, 1500, power_law=False, seed=2)
    isolated = torch.nonzero(graph.in_degrees() == 0).flatten()
    assert isolated.numel() > 0
    seeds = torch.cat([isolated[:5], torch.tensor([0, 1, 2])]).to(torch.int32)
    mb = sampler_cls(graph, [3, 3]).sample(seeds)
    check_minibatch(graph, mb, seeds.long(), [3, 3], False)
    assert mb.blocks[-1].in_degrees()[:5].sum() == 0


@pytest.mark.parametrize("sampler_cls", SAMPLERS)
def test_empty_seeds_give_empty_blocks(graph, sampler_cls):
    mb = sampler_cls(graph, [5, 5]).sample(torch.empty(0, dtype=torch.int64))
    assert [(b.num_src, b.num_dst, b.num_edges) for b in mb.blocks] == [(0, 0, 0), (0, 0, 0)]
    assert mb.input_nodes.numel() == 0


def test_full_neighbourhood_matches_reference_exactly(graph):
    """With fanout -1 nothing is random, so the fused relabel must equal torch.unique's."""
    seeds = torch.randperm(graph.num_nodes, generator=torch.Generator().manual_seed(4))[:50]
    fused = FusedSampler(graph, [-1, -1, -1]).sample(seeds)
    ref = ReferenceSampler(graph, [-1, -1, -1]).sample(seeds)
    for a, b in zip(fused.blocks, ref.blocks):
        assert torch.equal(a.indptr, b.indptr)
        assert torch.equal(a.indices, b.indices)
        assert torch.equal(a.src_nodes, b.src_nodes)


@pytest.mark.parametrize("index_dtype,fanouts,replace", [
    (torch.int32, [10, 10, 5], False), (torch.int32, [10, 10, 5], True),
    (torch.int64, [70, -1], False),  # hubs above 64 neighbours, and fanout -1
    (torch.int64, [100, 3], True),
])
def test_bit_identical_across_thread_counts(index_dtype, fanouts, replace):
    graph = random_graph(5000, 150_000, power_law=True, seed=7, index_dtype=index_dtype)
    seeds = torch.randperm(graph.num_nodes, generator=torch.Generator().manual_seed(0))[:1500]
    sampler = FusedSampler(graph, fanouts, replace=replace, seed=11)
    before = torch.get_num_threads()
    try:
        results = []
        for threads in (1, 2, 4):
            torch.set_num_threads(threads)
            results.append(sampler.sample(seeds, batch_id=9))
    finally:
        torch.set_num_threads(before)
    for other in results[1:]:
        for a, b in zip(results[0].blocks, other.blocks):
            assert torch.equal(a.indptr, b.indptr) and torch.equal(a.indices, b.indices)
            assert torch.equal(a.src_nodes, b.src_nodes)


@pytest.mark.parametrize("sampler_cls", SAMPLERS)
def test_reproducible_by_seed_and_batch_id(graph, sampler_cls):
    seeds = torch.arange(0, 200, 3)
    first = sampler_cls(graph, [5, 5], seed=1).sample(seeds, batch_id=4)
    again = sampler_cls(graph, [5, 5], seed=1).sample(seeds, batch_id=4)
    other_batch = sampler_cls(graph, [5, 5], seed=1).sample(seeds, batch_id=5)
    other_seed = sampler_cls(graph, [5, 5], seed=2).sample(seeds, batch_id=4)
    assert torch.equal(first.input_nodes, again.input_nodes)
    assert torch.equal(first.blocks[0].indices, again.blocks[0].indices)
    assert not torch.equal(first.blocks[-1].indices, other_batch.blocks[-1].indices)
    assert not torch.equal(first.blocks[-1].indices, other_seed.blocks[-1].indices)


def test_pickled_sampler_samples_the_same():
    """Workers receive samplers by pickling; the copy must sample identically."""
    graph = random_graph(500, 5000, power_law=True, seed=3)
    sampler = FusedSampler(graph, [4, 4], seed=3)
    seeds = torch.arange(0, 100)
    before = sampler.sample(seeds, batch_id=1)
    copy = pickle.loads(pickle.dumps(sampler))
    after = copy.sample(seeds, batch_id=1)
    assert torch.equal(before.blocks[0].indices, after.blocks[0].indices)
    assert torch.equal(before.input_nodes, after.input_nodes)


@pytest.mark.parametrize("sampler_cls", SAMPLERS)
@pytest.mark.parametrize("replace,fanout", [(False, 5), (False, 70), (True, 5)])
def test_uniform_over_neighbours(sampler_cls, replace, fanout):
    """Chi-square test on a node with 100 distinct in-neighbours (fixed seeds: not flaky)."""
    scipy_stats = pytest.importorskip("scipy.stats")
    degree = 100
    src = torch.arange(1, degree + 1)
    graph = CSCGraph.from_edges(src, torch.zeros(degree, dtype=torch.int64), degree + 1)
    sampler = sampler_cls(graph, [fanout], replace=replace, seed=123)
    counts = torch.zeros(degree + 1, dtype=torch.int64)
    trials = 400 if fanout > 10 else 2000
    seeds = torch.tensor([0])
    for batch in range(trials):
        mb = sampler.sample(seeds, batch_id=batch)
        counts += torch.bincount(mb.blocks[0].src_nodes[mb.blocks[0].indices],
                                 minlength=degree + 1)
    observed = counts[1:].double().numpy()
    assert observed.sum() == trials * fanout
    p_value = scipy_stats.chisquare(observed).pvalue
    assert p_value > 1e-3, f"neighbour counts are not uniform (p = {p_value:.2e})"


def test_per_destination_counts_equal_dgl():
    require_dgl()
    from gnnrepro.baselines import dgl_samplers
    graph = random_graph(800, 12000, power_law=True, seed=9)
    seeds = torch.randperm(graph.num_nodes, generator=torch.Generator().manual_seed(1))[:100]
    ours = FusedSampler(graph, [6, 4]).sample(seeds)
    for cls in (dgl_samplers.DGLFusedSampler, dgl_samplers.DGLUnfusedSampler):
        theirs = cls(graph, [6, 4]).sample(seeds)
        # Same seeds -> same last-layer destinations -> the same per-destination counts.
        assert torch.equal(ours.blocks[-1].in_degrees(), theirs.blocks[-1].in_degrees())
        # Counts of every layer follow the same rule min(degree, fanout) on each side.
        for block, fanout in zip(theirs.blocks, [6, 4]):
            assert torch.equal(block.in_degrees(),
                               graph.in_degrees()[block.dst_nodes].clamp(max=fanout))


def test_minibatch_to_moves_input_nodes_once(graph) -> None:
    """input_nodes is the first block's src_nodes; moving the batch keeps them one tensor."""
    mb = FusedSampler(graph, [3, 2], seed=0).sample(torch.arange(8), 0)
    assert mb.input_nodes is mb.blocks[0].src_nodes
    moved = mb.to("meta")
    assert moved.input_nodes.device.type == "meta"
    assert moved.input_nodes is moved.blocks[0].src_nodes
