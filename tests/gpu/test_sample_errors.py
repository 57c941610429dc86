"""sample_fused's error contract (csrc/ops.cpp) on "cpu" and "cuda" alike: the same error for the
same bad input, also with several errors at once; node_map all -1 after every error; the map
keeps working."""
from __future__ import annotations

import pytest
import torch

from helpers import random_graph
from gnnrepro import CSCGraph
from gnnrepro._ops import ops

from .conftest import needs_cuda


@pytest.fixture(scope="module")
def small() -> CSCGraph:
    return random_graph(100, 800, power_law=False, seed=0)


def call(graph: CSCGraph, seeds, fanouts, node_map, device: str, where: str):
    if where == "pinned":
        indptr, indices = graph.indptr.pin_memory(), graph.indices.pin_memory()
    else:
        indptr, indices = graph.indptr.to(device), graph.indices.to(device)
    return ops.sample_fused(indptr, indices, seeds.to(device), list(fanouts), False, 0, 0,
                            node_map)


def bad_input(small: CSCGraph, case: str):
    """(graph, seeds, fanouts, node_map on the CPU) with the named defect."""
    indptr, indices = small.indptr.clone(), small.indices.clone()
    seeds, fanouts = torch.tensor([1, 2, 3]), [3, 3]
    node_map = torch.full((small.num_nodes,), -1, dtype=torch.int32)
    nb = int(indices[indptr[1]])  # a neighbour of seed 1 that is not a seed
    assert nb not in (1, 2, 3)
    if case == "seed out of range":
        seeds = torch.tensor([1, 2, 10**9])
    elif case == "negative seed":
        seeds = torch.tensor([-1, 2])
    elif case == "duplicate seeds":
        seeds = torch.tensor([1, 2, 1])
    elif case == "indices out of range":
        indices[indptr[2]:indptr[3]] = 10**6
        fanouts = [-1, -1]
    elif case == "indptr decreasing":
        indptr[3] = indptr[2] - 1
    elif case == "indptr past the end":
        indptr[4] = 10**12
    elif case == "dirty map at a seed":
        node_map[seeds[0]] = 0
    elif case.startswith("dirty map at a neighbour"):
        # Any value the op did not write: out of range, stale negative, or an in-range id.
        node_map[nb] = {"big": 10**6, "negative": -7, "in range": 1}[case.split(": ")[1]]
        fanouts = [-1]
    elif case == "negative fanout":
        fanouts = [3, -5]
    elif case == "short node map":
        node_map = torch.full((5,), -1, dtype=torch.int32)
    return CSCGraph(indptr, indices, validate=False), seeds, fanouts, node_map


ERRORS = [
    ("seed out of range", ValueError,
     r"seeds must lie in \[0, num_nodes=100\): seeds\[2\] = 1000000000"),
    ("negative seed", ValueError, r"seeds\[0\] = -1"),
    ("duplicate seeds", ValueError, "seeds must be unique node ids; node 1 appears twice"),
    ("indices out of range", RuntimeError, "indices holds node id 1000000 outside"),
    ("indptr decreasing", RuntimeError, "indptr is not a valid CSC offset array at node 2"),
    ("indptr past the end", RuntimeError, "indptr is not a valid CSC offset array at node 3"),
    ("dirty map at a seed", RuntimeError, "node_map must be all -1 on entry"),
    ("dirty map at a neighbour: big", RuntimeError, "node_map must be all -1 on entry"),
    ("dirty map at a neighbour: negative", RuntimeError, "node_map must be all -1 on entry"),
    ("dirty map at a neighbour: in range", RuntimeError, "node_map must be all -1 on entry"),
    ("negative fanout", RuntimeError, "every fanout must be -1"),
    ("short node map", RuntimeError, "node_map must be int32"),
]


@pytest.mark.parametrize("where", ["device", "pinned"])
@pytest.mark.parametrize("case,error,match", ERRORS)
def test_op_rejects_bad_input(small, device, where, case, error, match):
    if where == "pinned" and device == "cpu":
        pytest.skip("UVA: a CUDA op reading a pinned host graph")
    graph, seeds, fanouts, node_map = bad_input(small, case)
    node_map = node_map.to(device)
    with pytest.raises(error, match=match):
        call(graph, seeds, fanouts, node_map, device, where)
    if node_map.numel() == small.num_nodes:
        # An error resets the whole map, even one that came in dirty...
        assert bool((node_map == -1).all()), "the op left its node map dirty after an error"
        # ...and the map samples the healthy graph exactly like a fresh one.
        seeds_ok = torch.tensor([1, 2, 3])
        got = call(small, seeds_ok, [3, 3], node_map, device, "device")
        fresh = torch.full_like(node_map, -1)
        expected = call(small, seeds_ok, [3, 3], fresh, device, "device")
        assert all(torch.equal(a, b) for a, b in zip(got, expected))


@pytest.mark.parametrize("defects,match", [
    # seed range first, with the smallest bad position; then a seed's dirty entry; duplicates
    (["seed out of range", "duplicate", "dirty seed"], r"seeds\[1\] = 500"),
    (["duplicate", "dirty seed", "bad indptr"], "node_map must be all -1 on entry \\(a seed"),
    (["duplicate", "bad indptr"], "node 0 appears twice"),
    # a layer's bad index before its dirty neighbour entry, before the next layer's indptr
    (["bad index", "dirty neighbour", "bad indptr"], "indices holds node id"),
    (["dirty neighbour", "bad indptr"], "a sampled neighbour's entry"),
])
def test_several_errors_report_the_first_in_order(device, defects, match):
    """A chain 0 <- 1 <- ... (node v's one in-neighbour is v + 1): seeds [0, 7, 7 ...]."""
    n = 20
    indptr = torch.arange(n + 1)
    indices = torch.arange(1, n + 1) % n
    seeds = [0, 7]
    node_map = torch.full((n,), -1, dtype=torch.int32)
    if "seed out of range" in defects:
        seeds = [0, 500, -3, 900]
    if "duplicate" in defects:
        seeds = seeds + [7, 0]
    if "dirty seed" in defects:
        node_map[7] = 3
    if "bad index" in defects:
        indices[0] = 10**5  # node 0's neighbour, layer 1 (the seeds' layer)
    if "dirty neighbour" in defects:
        node_map[8] = 2  # node 7's neighbour
    if "bad indptr" in defects:
        indptr[2] = 0  # node 1 (node 0's neighbour, a destination of layer 0): range [1, 0)
    graph = CSCGraph(indptr, indices, validate=False)
    node_map = node_map.to(device)
    with pytest.raises((ValueError, RuntimeError), match=match):
        call(graph, torch.tensor(seeds), [1, 1], node_map, device, "device")
    assert bool((node_map == -1).all())


@pytest.mark.parametrize("where", ["untouched", "touched"])
def test_garbage_entries_raise_exactly_where_the_op_reads(device, where):
    """Garbage the op never reads changes nothing; garbage where it reads always raises."""
    g = random_graph(400, 4000, power_law=True, seed=5)
    seeds = torch.randperm(400, generator=torch.Generator().manual_seed(2))[:60]
    clean = call(g, seeds, [5, 5], torch.full((400,), -1, dtype=torch.int32, device=device),
                 device, "device")
    touched = torch.zeros(400, dtype=torch.bool)
    for src_nodes in clean[2::3]:
        touched[src_nodes.cpu()] = True
    candidates = torch.nonzero(touched if where == "touched" else ~touched)[:, 0]
    gen = torch.Generator().manual_seed(3)
    for _ in range(10):
        garbage = torch.full((400,), -1, dtype=torch.int32)
        pick = candidates[torch.randperm(candidates.numel(), generator=gen)[:10]]
        values = torch.randint(-3, 500, (pick.numel(),), dtype=torch.int32, generator=gen)
        garbage[pick] = torch.where(values == -1, 7, values)
        garbage = garbage.to(device)
        if where == "touched":
            with pytest.raises(RuntimeError, match="node_map must be all -1 on entry"):
                call(g, seeds, [5, 5], garbage, device, "device")
            assert bool((garbage == -1).all())
        else:
            flat = call(g, seeds, [5, 5], garbage, device, "device")
            assert all(torch.equal(a, b) for a, b in zip(flat, clean))


@needs_cuda
def test_cpu_and_cuda_raise_the_same_message(small):
    """Not only the same kind: the same text, detail included, for every case above."""
    for case, _, _ in ERRORS:
        messages = []
        for device in ("cpu", "cuda"):
            graph, seeds, fanouts, node_map = bad_input(small, case)
            with pytest.raises((ValueError, RuntimeError)) as info:
                call(graph, seeds, fanouts, node_map.to(device), device, "device")
            messages.append(str(info.value).split("\n")[0])
        assert messages[0] == messages[1], case
