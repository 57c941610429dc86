"""Adversarial direct calls of the fused op (memory safety) and the statistical cases a code
review found missing: joint uniformity of subsets, a node map sharing memory with an input.

Cases that once crashed the interpreter run in a subprocess, so a regression fails one test
instead of killing the whole pytest run.
"""
from __future__ import annotations

import itertools
import subprocess
import sys
import textwrap
from collections import Counter

import pytest
import torch

from helpers import random_graph
from gnnrepro import CSCGraph
from gnnrepro._ops import ops
from gnnrepro.sampling import FusedSampler, ReferenceSampler


def _run_isolated(script: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True,
                          text=True, timeout=120)


def _fresh_map(n: int) -> torch.Tensor:
    return torch.full((n,), -1, dtype=torch.int32)


def test_huge_fanout_with_replacement_raises_instead_of_crashing():
    """fanout 2**62 with replace=True over 4 seeds overflows the int64 prefix sum of the block's
    indptr to 0, passes the block-size check and writes 2**62 picks into an empty tensor."""
    proc = _run_isolated("""
        import torch
        from gnnrepro import CSCGraph
        from gnnrepro._ops import ops
        from gnnrepro.sampling import FusedSampler, ReferenceSampler
        g = CSCGraph.from_edges(torch.tensor([1, 2, 3, 0]), torch.tensor([0, 1, 2, 3]), 4)
        seeds = torch.tensor([0, 1, 2, 3])
        for cls in (FusedSampler, ReferenceSampler):
            try:
                cls(g, [2**62], replace=True).sample(seeds)
                print("no-error", cls.__name__, flush=True)
            except (ValueError, RuntimeError):
                print("ok", cls.__name__, flush=True)
        nm = torch.full((4,), -1, dtype=torch.int32)
        try:
            ops.sample_fused(g.indptr, g.indices, seeds, [2**62], True, 0, 0, nm)
            print("no-error op", flush=True)
        except RuntimeError:
            print("ok op" if bool((nm == -1).all()) else "dirty-map op", flush=True)
    """)
    assert proc.returncode == 0 and proc.stdout.split("\n")[:3] == [
        "ok FusedSampler", "ok ReferenceSampler", "ok op"], (
        f"rc={proc.returncode} stdout={proc.stdout!r} stderr={proc.stderr[-500:]!r}")


@pytest.mark.parametrize("stale", [1_000_000, 5, -7])
def test_out_of_range_node_map_entry_raises_and_the_map_is_restored(stale):
    """An entry outside [-1, next) must neither leak into the block nor stay behind."""
    g = CSCGraph.from_edges(torch.tensor([1, 2, 3]), torch.tensor([0, 0, 0]), 5)
    nm = _fresh_map(5)
    nm[2] = stale
    with pytest.raises(RuntimeError, match="node_map must be all -1"):
        ops.sample_fused(g.indptr, g.indices, torch.tensor([0]), [-1], False, 0, 0, nm)
    assert bool((nm == -1).all()), "node_map must be all -1 after an error"


@pytest.mark.parametrize("where", ["untouched", "touched"])
def test_garbage_node_map_entries(where: str):
    """Garbage where the op never reads the map changes nothing: the blocks equal a clean run's.
    Garbage where it reads makes the op raise (map restored to all -1) or return blocks whose
    local ids are in range: it never reads or writes outside its arrays."""
    g = random_graph(400, 4000, power_law=True, seed=5)
    seeds = torch.randperm(400, generator=torch.Generator().manual_seed(2))[:60]
    clean = ops.sample_fused(g.indptr, g.indices, seeds, [5, 5], False, 1, 0, _fresh_map(400))
    touched = torch.zeros(400, dtype=torch.bool)
    for src_nodes in clean[2::3]:
        touched[src_nodes] = True
    candidates = torch.nonzero(touched if where == "touched" else ~touched)[:, 0]
    assert candidates.numel() >= 10
    gen = torch.Generator().manual_seed(3)
    outcomes = set()
    for _ in range(10):
        garbage = _fresh_map(400)
        pick = candidates[torch.randperm(candidates.numel(), generator=gen)[:10]]
        values = torch.randint(-3, 500, (pick.numel(),), dtype=torch.int32, generator=gen)
        garbage[pick] = torch.where(values == -1, 7, values)
        try:
            flat = ops.sample_fused(g.indptr, g.indices, seeds, [5, 5], False, 1, 0, garbage)
        except RuntimeError:
            assert where == "touched", "garbage the op never reads made it fail"
            assert bool((garbage == -1).all()), "node_map must be all -1 after an error"
            outcomes.add("raised")
            continue
        outcomes.add("returned")
        if where == "untouched":
            assert all(torch.equal(a, b) for a, b in zip(flat, clean))
        for indices, src_nodes in zip(flat[1::3], flat[2::3]):
            assert indices.numel() == 0 or (int(indices.min()) >= 0
                                            and int(indices.max()) < src_nodes.numel())
    # Garbage where the op reads always raises (ops.cpp: an entry the op did not write is
    # detected whatever its value); garbage elsewhere never does.
    assert outcomes == ({"returned"} if where == "untouched" else {"raised"})


def _same_dst_graph(num_dst: int, degree: int) -> CSCGraph:
    """num_dst destinations 0..num_dst-1, each with in-neighbours num_dst + (0..degree-1)."""
    dst = torch.arange(num_dst).repeat_interleave(degree)
    src = num_dst + torch.arange(degree).repeat(num_dst)
    return CSCGraph.from_edges(src, dst, num_dst + degree)


@pytest.mark.parametrize("degree,k", [(6, 3), (66, 65)])  # Floyd: linear-scan and bitmap paths
def test_floyd_subsets_are_jointly_uniform(degree, k):
    """The existing chi-square tests only check marginals; a sampler with uniform marginals but
    correlated picks (e.g. a random window) passes them. Here every k-subset must be equally
    likely (for k = degree - 1 the subset is identified by the one neighbour left out)."""
    scipy_stats = pytest.importorskip("scipy.stats")
    num_dst = 20000
    g = _same_dst_graph(num_dst, degree)
    ip, ix, sn = ops.sample_fused(g.indptr, g.indices, torch.arange(num_dst), [k], False, 7, 0,
                                  _fresh_map(g.num_nodes))
    picks = (sn[ix] - num_dst).view(num_dst, k).sort(dim=1).values
    assert bool((picks[:, 1:] > picks[:, :-1]).all()), "picks of one destination must be distinct"
    if k == degree - 1:
        left_out = degree * (degree - 1) // 2 - picks.sum(1)
        observed = torch.bincount(left_out, minlength=degree).tolist()
    else:
        counts = Counter(map(tuple, picks.tolist()))
        observed = [counts.get(s, 0) for s in itertools.combinations(range(degree), k)]
    p_value = scipy_stats.chisquare(observed).pvalue
    assert p_value > 1e-3, f"k-subsets are not uniform (p = {p_value:.2e})"


def test_fanout_at_least_max_degree_matches_reference_exactly(graph):
    """No randomness when every destination keeps all neighbours via a finite fanout (the
    count == degree branch, not fanout -1): fused and reference blocks must be identical."""
    max_degree = int(graph.in_degrees().max())
    seeds = torch.randperm(graph.num_nodes, generator=torch.Generator().manual_seed(4))[:50]
    fused = FusedSampler(graph, [max_degree, max_degree + 5]).sample(seeds)
    ref = ReferenceSampler(graph, [max_degree, max_degree + 5]).sample(seeds)
    for a, b in zip(fused.blocks, ref.blocks):
        assert torch.equal(a.indptr, b.indptr) and torch.equal(a.indices, b.indices)
        assert torch.equal(a.src_nodes, b.src_nodes)


def test_node_map_sharing_memory_with_an_input_is_rejected():
    """node_map is written in place: int32 indices passed as the map would be overwritten."""
    indices = torch.zeros(8, dtype=torch.int32)
    indptr = torch.arange(9)
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        ops.sample_fused(indptr, indices, torch.tensor([0, 1]), [2], False, 0, 0, indices)


def test_error_deep_in_the_widest_layer_is_the_same_on_any_thread_count_and_cleans_the_map():
    """A bad neighbour id met by any thread of the op's team, many chunks into the outer layer,
    is reported at the same (smallest) position on 1..8 threads, and the map is left all -1
    and serves the next call."""
    graph = random_graph(5000, 150_000, power_law=True, seed=3, index_dtype=torch.int64)
    bad = graph.indices.clone()
    bad[100_000::997] = graph.num_nodes + 5
    seeds = torch.randperm(graph.num_nodes, generator=torch.Generator().manual_seed(1))[:1500]
    node_map = _fresh_map(graph.num_nodes)
    before = torch.get_num_threads()
    messages = []
    try:
        for threads in (1, 2, 8):
            torch.set_num_threads(threads)
            with pytest.raises(RuntimeError, match="indices holds node id 5005") as err:
                ops.sample_fused(graph.indptr, bad, seeds, [10, 10, 5], False, 2, 4, node_map)
            messages.append(str(err.value).splitlines()[0])
            assert bool((node_map == -1).all())
    finally:
        torch.set_num_threads(before)
    assert len(set(messages)) == 1
    flat = ops.sample_fused(graph.indptr, graph.indices, seeds, [10, 10, 5], False, 2, 4,
                            node_map)
    expected = FusedSampler(graph, [10, 10, 5], seed=2).sample(seeds, batch_id=4)
    for i, block in enumerate(expected.blocks):
        assert torch.equal(flat[3 * i + 1], block.indices)
        assert torch.equal(flat[3 * i + 2], block.src_nodes)
