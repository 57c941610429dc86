"""The CUDA sample_fused: bit-identical to the CPU op, graph in GPU memory or pinned (UVA)."""
from __future__ import annotations

import pytest
import torch

from helpers import random_graph
from gnnrepro import CSCGraph
from gnnrepro._ops import ops
from gnnrepro.sampling import FusedSampler

CUDA = torch.device("cuda")

CASES = [  # (fanouts, replace): Floyd in one round and several (> 32 picks), replacement, -1
    ([4, 3], False), ([15, 10, 5], False), ([3, 2], True), ([-1, 2], False), ([-1], True),
    ([1000], False), ([40, 70], False), ([33, 9], True), ([17, 1], False), ([2, -1, 5], False),
]


def run_op(indptr, indices, seeds, fanouts, replace=False, seed=0, batch_id=0, node_map=None,
           workspace=None):
    device = seeds.device
    if node_map is None:
        node_map = torch.full((indptr.numel() - 1,), -1, dtype=torch.int32, device=device)
    if workspace is None:
        workspace = torch.empty(0, dtype=torch.int64, device=device)
    flat = ops.sample_fused(indptr, indices, seeds, list(fanouts), replace, seed, batch_id,
                            node_map, workspace)
    assert bool((node_map == -1).all()), "the op left its node map dirty"
    return flat


def assert_same(cuda_flat, cpu_flat):
    assert len(cuda_flat) == len(cpu_flat)
    for a, b in zip(cuda_flat, cpu_flat):
        assert a.device.type == "cuda" and a.dtype == torch.int64
        assert torch.equal(a.cpu(), b)


@pytest.fixture(scope="module", params=["int64-power-law", "int32-uniform"])
def graph(request) -> CSCGraph:
    int32 = request.param.startswith("int32")
    return random_graph(2000, 40_000, power_law=not int32, seed=7,
                        index_dtype=torch.int32 if int32 else torch.int64)


def placed(graph: CSCGraph, where: str):
    """(indptr, indices) in GPU memory or in pinned host memory."""
    if where == "gpu":
        return graph.indptr.to(CUDA), graph.indices.to(CUDA)
    return graph.indptr.pin_memory(), graph.indices.pin_memory()


@pytest.mark.parametrize("where", ["gpu", "pinned"])
@pytest.mark.parametrize("fanouts,replace", CASES)
def test_cuda_equals_cpu(graph, where, fanouts, replace):
    indptr, indices = placed(graph, where)
    isolated = torch.nonzero(graph.in_degrees() == 0).flatten()[:5]
    for seed, batch_id, num_seeds in [(0, 0, 300), (5, 3, 64), (-7, 2**40, 1)]:
        perm = torch.randperm(graph.num_nodes, generator=torch.Generator().manual_seed(seed + 9))
        seeds = torch.cat([isolated, perm[~torch.isin(perm, isolated)][:num_seeds]])
        expected = run_op(graph.indptr, graph.indices, seeds, fanouts, replace, seed, batch_id)
        got = run_op(indptr, indices, seeds.to(CUDA), fanouts, replace, seed, batch_id)
        assert_same(got, expected)


def test_empty_seeds_and_empty_graph():
    graph = random_graph(50, 200, power_law=False, seed=1)
    got = run_op(graph.indptr.to(CUDA), graph.indices.to(CUDA),
                 torch.empty(0, dtype=torch.int64, device=CUDA), [3, 3])
    assert [t.numel() for t in got] == [1, 0, 0, 1, 0, 0]
    # No edges at all: the pinned path with an empty (unpinnable) indices tensor.
    empty = CSCGraph(torch.zeros(11, dtype=torch.int64), torch.empty(0, dtype=torch.int64))
    seeds = torch.tensor([0, 4, 9])
    expected = run_op(empty.indptr, empty.indices, seeds, [5, -1])
    got = run_op(empty.indptr.pin_memory(), empty.indices, seeds.to(CUDA), [5, -1])
    assert_same(got, expected)


def test_scratch_reused_across_calls(graph):
    """One node map and workspace for many batches of different sizes, as FusedSampler does."""
    indptr, indices = placed(graph, "gpu")
    node_map = torch.full((graph.num_nodes,), -1, dtype=torch.int32, device=CUDA)
    workspace = torch.empty(0, dtype=torch.int64, device=CUDA)
    gen = torch.Generator().manual_seed(2)
    for batch_id, size in enumerate([10, 500, 3, 1200, 64]):
        seeds = torch.randperm(graph.num_nodes, generator=gen)[:size]
        expected = run_op(graph.indptr, graph.indices, seeds, [10, 5], False, 1, batch_id)
        got = run_op(indptr, indices, seeds.to(CUDA), [10, 5], False, 1, batch_id, node_map,
                     workspace)
        assert_same(got, expected)


def test_runs_on_the_current_stream(graph):
    indptr, indices = placed(graph, "gpu")
    seeds = torch.arange(0, 400, 3)
    expected = run_op(graph.indptr, graph.indices, seeds, [8, 8])
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        got = run_op(indptr, indices, seeds.to(CUDA), [8, 8])
    stream.synchronize()
    assert_same(got, expected)


@pytest.mark.parametrize("where", ["gpu", "pinned"])
def test_fused_sampler_on_cuda_graph(graph, where, registered):
    cpu_sampler = FusedSampler(graph, [10, 5, 3], seed=4)
    if where == "gpu":
        cuda_graph = CSCGraph(graph.indptr.to(CUDA), graph.indices.to(CUDA))
        sampler = FusedSampler(cuda_graph, [10, 5, 3], seed=4)
    else:  # the graph's own arrays, page-locked in place like CSCGraph.pin_memory_()
        pinned = CSCGraph(graph.indptr.clone(), graph.indices.clone())
        registered(pinned.indptr, pinned.indices)
        sampler = FusedSampler(pinned, [10, 5, 3], seed=4, device="cuda")
    assert sampler.device.type == "cuda"
    gen = torch.Generator().manual_seed(5)
    for batch_id in range(4):
        seeds = torch.randperm(graph.num_nodes, generator=gen)[:256]
        expected = cpu_sampler.sample(seeds, batch_id=batch_id)
        got = sampler.sample(seeds.to(CUDA), batch_id=batch_id)
        assert got.input_nodes.device.type == "cuda"
        assert torch.equal(got.input_nodes.cpu(), expected.input_nodes)
        for a, b in zip(got.blocks, expected.blocks):
            assert a.num_dst == b.num_dst
            assert torch.equal(a.indptr.cpu(), b.indptr)
            assert torch.equal(a.indices.cpu(), b.indices)
            assert torch.equal(a.src_nodes.cpu(), b.src_nodes)


def test_fused_sampler_device_errors(graph):
    with pytest.raises(ValueError, match="pinned"):
        FusedSampler(graph, [3], device="cuda")  # pageable CPU graph
    cuda_graph = CSCGraph(graph.indptr.to(CUDA), graph.indices.to(CUDA))
    with pytest.raises(ValueError, match="cannot be sampled on cpu"):
        FusedSampler(cuda_graph, [3], device="cpu")
    with pytest.raises(ValueError, match="seeds are on cpu"):
        FusedSampler(cuda_graph, [3]).sample(torch.tensor([1, 2]))


# ---- bad input straight to the op: RuntimeError, a clean node map, and the op keeps working ----

@pytest.fixture(scope="module")
def small() -> CSCGraph:
    return random_graph(100, 800, power_law=False, seed=0)


@pytest.mark.parametrize("case,match", [
    ("seed out of range", r"seeds\[2\] = 1000000000 is outside"),
    ("negative seed", r"seeds\[0\] = -1 is outside"),
    ("duplicate seeds", "seeds must be unique; node 1 appears twice"),
    ("indices out of range", "indices holds node id 1000000 outside"),
    ("indptr decreasing", "indptr is not a valid CSC offset array"),
    ("indptr past the end", "indptr is not a valid CSC offset array"),
    ("dirty map at a seed", "node_map must be all -1"),
    ("dirty map at a neighbour", "node_map must be all -1"),
    ("negative fanout", "every fanout must be -1"),
    ("short node map", "node_map must be int32"),
])
def test_op_rejects_bad_input(small, case, match):
    indptr, indices = small.indptr.clone(), small.indices.clone()
    seeds, fanouts = torch.tensor([1, 2, 3]), [3, 3]
    node_map = torch.full((small.num_nodes,), -1, dtype=torch.int32)
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
    elif case == "dirty map at a neighbour":
        assert indptr[1] < indptr[2]
        node_map[indices[indptr[1]]] = 10**6  # a neighbour of seed 1, sampled with fanout -1
        fanouts = [-1]
    elif case == "negative fanout":
        fanouts = [3, -5]
    elif case == "short node map":
        node_map = torch.full((5,), -1, dtype=torch.int32)
    node_map = node_map.to(CUDA)
    for where in ("gpu", "pinned"):
        g_indptr, g_indices = placed(CSCGraph(indptr, indices, validate=False), where)
        map_copy = node_map.clone()
        with pytest.raises(RuntimeError, match=match):
            ops.sample_fused(g_indptr, g_indices, seeds.to(CUDA), fanouts, False, 0, 0, map_copy,
                             torch.empty(0, dtype=torch.int64, device=CUDA))
        if map_copy.numel() == small.num_nodes:
            # An error resets the whole map (like the CPU op), even one that came in dirty...
            assert bool((map_copy == -1).all()), "the op left its node map dirty after an error"
            # ...and the map samples the healthy graph exactly like a fresh one.
            seeds_ok = torch.tensor([1, 2, 3])
            got = run_op(small.indptr.to(CUDA), small.indices.to(CUDA), seeds_ok.to(CUDA), [3, 3],
                         node_map=map_copy)
            assert_same(got, run_op(small.indptr, small.indices, seeds_ok, [3, 3]))


def test_op_rejects_wrong_devices(small):
    seeds = torch.tensor([1, 2], device=CUDA)
    node_map = torch.full((small.num_nodes,), -1, dtype=torch.int32, device=CUDA)
    workspace = torch.empty(0, dtype=torch.int64, device=CUDA)
    gpu = (small.indptr.to(CUDA), small.indices.to(CUDA))
    with pytest.raises(RuntimeError, match="pinned"):  # pageable host graph, CUDA seeds
        ops.sample_fused(small.indptr, small.indices, seeds, [3], False, 0, 0, node_map, workspace)
    with pytest.raises(RuntimeError, match="seeds must be a CUDA tensor"):
        ops.sample_fused(*gpu, seeds.cpu(), [3], False, 0, 0, node_map, workspace)
    with pytest.raises(RuntimeError, match="node_map is on cpu"):
        ops.sample_fused(*gpu, seeds, [3], False, 0, 0, node_map.cpu(), workspace)
    with pytest.raises(RuntimeError, match="workspace must be"):
        ops.sample_fused(*gpu, seeds, [3], False, 0, 0, node_map, workspace.cpu())
    with pytest.raises(RuntimeError, match="indptr is on"):
        ops.sample_fused(gpu[0], small.indices.pin_memory(), seeds, [3], False, 0, 0, node_map,
                         workspace)
