"""sample_fused on "cpu" and "cuda" from one parametrization: the CUDA op bit-identical to the CPU
op (graph in GPU memory or pinned and read over UVA), the same errors and node_map contract, and
the CUDA-only behaviour (current stream, alternating streams, syncs per call, interior pointers,
hub timings)."""
from __future__ import annotations

import time

import pytest
import torch

from helpers import random_graph
from gnnrepro import CSCGraph
from gnnrepro._ops import ops
from gnnrepro.pinning import pin_in_place
from gnnrepro.sampling import FusedSampler

from .conftest import host_syncs, needs_cuda

CASES = [  # (fanouts, replace): Floyd in one round and several (> 32 picks), replacement, -1
    ([4, 3], False), ([15, 10, 5], False), ([3, 2], True), ([-1, 2], False), ([-1], True),
    ([1000], False), ([40, 70], False), ([33, 9], True), ([17, 1], False), ([2, -1, 5], False),
]


def fresh_map(num_nodes: int, device: str) -> torch.Tensor:
    return torch.full((num_nodes,), -1, dtype=torch.int32, device=device)


def run_op(indptr, indices, seeds, fanouts, replace=False, seed=0, batch_id=0, node_map=None):
    if node_map is None:
        node_map = fresh_map(indptr.numel() - 1, seeds.device.type)
    flat = ops.sample_fused(indptr, indices, seeds, list(fanouts), replace, seed, batch_id,
                            node_map)
    assert bool((node_map == -1).all()), "the op left its node map dirty"
    return flat


def placed(graph: CSCGraph, device: str, where: str = "device"):
    """(indptr, indices) on `device`, or for "pinned" in pinned host memory (UVA)."""
    if where == "pinned":
        return graph.indptr.pin_memory(), graph.indices.pin_memory()
    return graph.indptr.to(device), graph.indices.to(device)


def check_blocks(graph: CSCGraph, seeds: torch.Tensor, flat, fanouts, replace: bool) -> None:
    """What any correct result satisfies, checked in plain torch: pick counts, destinations
    first, every edge a graph edge, new sources in order of first appearance."""
    flat = [t.cpu() for t in flat]
    deg = graph.in_degrees()
    dst = seeds.cpu()
    for layer in range(len(fanouts) - 1, -1, -1):
        indptr, indices, src_nodes = flat[3 * layer: 3 * layer + 3]
        f = fanouts[layer]
        d = deg[dst]
        want = d if f == -1 else (torch.where(d > 0, f, 0) if replace else d.clamp(max=f))
        assert torch.equal(indptr.diff(), want)
        assert torch.equal(src_nodes[: dst.numel()], dst)
        picked = src_nodes[indices]
        owner = torch.repeat_interleave(dst, indptr.diff())
        lo, hi = graph.indptr[owner], graph.indptr[owner + 1]
        # u is a neighbour of v: some position in v's list holds u (checked per edge).
        for e in range(0, picked.numel(), max(1, picked.numel() // 500)):
            neigh = graph.indices[lo[e]:hi[e]].long()
            assert bool((neigh == picked[e]).any())
        new = picked[~torch.isin(picked, dst)]
        if new.numel():
            uniq, inverse = torch.unique(new, return_inverse=True)
            first = torch.full((uniq.numel(),), new.numel()).scatter_reduce(
                0, inverse, torch.arange(new.numel()), "amin")
            assert torch.equal(src_nodes[dst.numel():], uniq[first.argsort()])
        else:
            assert src_nodes.numel() == dst.numel()
        dst = src_nodes


@pytest.fixture(scope="module", params=["int64-power-law", "int32-uniform"])
def graph(request) -> CSCGraph:
    int32 = request.param.startswith("int32")
    return random_graph(2000, 40_000, power_law=not int32, seed=7,
                        index_dtype=torch.int32 if int32 else torch.int64)


@pytest.mark.parametrize("where", ["device", "pinned"])
@pytest.mark.parametrize("fanouts,replace", CASES)
def test_blocks_are_right_and_equal_the_cpu_op(graph, device, where, fanouts, replace):
    if where == "pinned" and device == "cpu":
        pytest.skip("UVA: a CUDA op reading a pinned host graph")
    indptr, indices = placed(graph, device, where)
    isolated = torch.nonzero(graph.in_degrees() == 0).flatten()[:5]
    for seed, batch_id, num_seeds in [(0, 0, 300), (5, 3, 64), (-7, 2**40, 1)]:
        perm = torch.randperm(graph.num_nodes, generator=torch.Generator().manual_seed(seed + 9))
        seeds = torch.cat([isolated, perm[~torch.isin(perm, isolated)][:num_seeds]])
        expected = run_op(graph.indptr, graph.indices, seeds, fanouts, replace, seed, batch_id)
        got = run_op(indptr, indices, seeds.to(device), fanouts, replace, seed, batch_id)
        assert all(a.device.type == device and a.dtype == torch.int64 for a in got)
        assert all(torch.equal(a.cpu(), b) for a, b in zip(got, expected))
        check_blocks(graph, seeds, got, fanouts, replace)


def test_empty_seeds_and_empty_graph(device):
    graph = random_graph(50, 200, power_law=False, seed=1)
    indptr, indices = placed(graph, device)
    got = run_op(indptr, indices, torch.empty(0, dtype=torch.int64, device=device), [3, 3])
    assert [t.numel() for t in got] == [1, 0, 0, 1, 0, 0]
    empty = CSCGraph(torch.zeros(11, dtype=torch.int64), torch.empty(0, dtype=torch.int64))
    seeds = torch.tensor([0, 4, 9])
    expected = run_op(empty.indptr, empty.indices, seeds, [5, -1])
    got = run_op(*placed(empty, device), seeds.to(device), [5, -1])
    assert all(torch.equal(a.cpu(), b) for a, b in zip(got, expected))


def test_one_node_map_across_calls(graph, device):
    """One map for many batches of different sizes (as FusedSampler keeps it) gives what a fresh
    map gives."""
    indptr, indices = placed(graph, device)
    node_map = fresh_map(graph.num_nodes, device)
    gen = torch.Generator().manual_seed(2)
    for batch_id, size in enumerate([10, 500, 3, 1200, 64]):
        seeds = torch.randperm(graph.num_nodes, generator=gen)[:size].to(device)
        reused = run_op(indptr, indices, seeds, [10, 5], False, 1, batch_id, node_map)
        fresh = run_op(indptr, indices, seeds, [10, 5], False, 1, batch_id)
        assert all(torch.equal(a, b) for a, b in zip(reused, fresh))


@pytest.mark.parametrize("fanouts", [[-1], [20]])
def test_batch_that_wraps_every_grid_stride_loop(device, fanouts):
    """600k destinations and 18M edges: more than the 2^16 blocks x 256 threads of a launch
    (16.7M threads; 524k tiles of 32 lanes), so every grid-stride loop goes round again."""
    num_nodes, degree = 600_000, 30
    gen = torch.Generator().manual_seed(11)
    graph = CSCGraph(torch.arange(num_nodes + 1) * degree,
                     torch.randint(0, num_nodes, (num_nodes * degree,), generator=gen,
                                   dtype=torch.int32), validate=False)
    seeds = torch.randperm(num_nodes, generator=gen)
    got = run_op(*placed(graph, device), seeds.to(device), fanouts, False, 3, 1)
    if device == "cpu":
        indptr, indices, src_nodes = got
        want = degree if fanouts[0] == -1 else min(degree, fanouts[0])
        assert torch.equal(indptr.diff(), torch.full((num_nodes,), want))
        assert int(indices.max()) < src_nodes.numel() and torch.equal(src_nodes, seeds)
    else:
        expected = run_op(graph.indptr, graph.indices, seeds, fanouts, False, 3, 1)
        assert all(torch.equal(a.cpu(), b) for a, b in zip(got, expected))


def power_law_hubs() -> CSCGraph:
    """20k nodes, 1M edges, in-degrees from a steep power law: a few hubs with tens of thousands
    of neighbours beside many nodes of degree 1."""
    return random_graph(20_000, 1_000_000, power_law=True, seed=13)


@pytest.mark.parametrize("fanouts", [[1000], [-1]])
def test_hub_fanouts_timed(device, fanouts):
    """Fanouts 1000 and -1 from the hubs: equal to the CPU op; the time is printed (-s)."""
    graph = power_law_hubs()
    hubs = graph.in_degrees().argsort(descending=True)[:256]
    indptr, indices = placed(graph, device)
    expected = run_op(graph.indptr, graph.indices, hubs, fanouts, False, 1, 0)
    run_op(indptr, indices, hubs.to(device), fanouts, False, 1, 0)  # warm-up
    if device == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    got = run_op(indptr, indices, hubs.to(device), fanouts, False, 1, 0)
    if device == "cuda":
        torch.cuda.synchronize()
    print(f"\nhub fanouts {fanouts} on {device}: {(time.perf_counter() - start) * 1e3:.2f} ms "
          f"({expected[1].numel()} edges)")
    assert all(torch.equal(a.cpu(), b) for a, b in zip(got, expected))


# ---- CUDA only: streams, syncs, UVA -----------------------------------------------------------

@needs_cuda
def test_runs_on_the_current_stream(graph):
    """A write to the seeds queued behind a long sleep on stream s: an op on s sees it, an op on
    any other stream would read the old seeds."""
    indptr, indices = placed(graph, "cuda")
    old, new = torch.arange(0, 400, 3), torch.arange(1, 401, 3)
    expected = run_op(graph.indptr, graph.indices, new, [8, 8])
    seeds = old.cuda()
    new_cuda = new.cuda()
    torch.cuda.synchronize()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        torch.cuda._sleep(100_000_000)  # ~50 ms of GPU time
        seeds.copy_(new_cuda)
        got = run_op(indptr, indices, seeds, [8, 8])
    stream.synchronize()
    assert all(torch.equal(a.cpu(), b) for a, b in zip(got, expected))


@needs_cuda
def test_two_streams_alternating_on_one_sampler(graph):
    """node_map is shared by the calls; none may see another's entries (no work on it is left
    queued when a call returns)."""
    cpu = FusedSampler(graph, [10, 5], seed=2)
    sampler = FusedSampler(CSCGraph(*placed(graph, "cuda")), [10, 5], seed=2)
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    gen = torch.Generator().manual_seed(4)
    for batch_id in range(12):
        seeds = torch.randperm(graph.num_nodes, generator=gen)[:300]
        with torch.cuda.stream(streams[batch_id % 2]):
            torch.cuda._sleep(10_000_000)
            got = sampler.sample(seeds.cuda(), batch_id)
        expected = cpu.sample(seeds, batch_id)
        streams[batch_id % 2].synchronize()
        for a, b in zip(got.blocks, expected.blocks):
            assert torch.equal(a.indices.cpu(), b.indices)
            assert torch.equal(a.src_nodes.cpu(), b.src_nodes)


@needs_cuda
@pytest.mark.parametrize("fanouts", [[5], [10, 5], [15, 10, 5]])
def test_host_syncs_per_call(graph, fanouts, capfd):
    """len(fanouts) + 1 syncs per call, all through c10::cuda (seen by the sync debug mode)."""
    indptr, indices = placed(graph, "cuda")
    seeds = torch.arange(0, 500, 2, device="cuda")
    node_map = fresh_map(graph.num_nodes, "cuda")
    assert host_syncs(lambda: ops.sample_fused(indptr, indices, seeds, fanouts, False, 0, 0,
                                               node_map), capfd) == len(fanouts) + 1


@needs_cuda
def test_interior_pointers_into_pinned_memory(graph):
    """The graph's arrays as views into the middle of larger buffers page-locked in place: UVA
    sampling reads them at their offsets."""
    big_indptr = torch.zeros(graph.indptr.numel() + 100, dtype=torch.int64)
    big_indices = torch.zeros(graph.indices.numel() + 37, dtype=graph.indices.dtype)
    assert pin_in_place(big_indptr) and pin_in_place(big_indices)
    indptr = big_indptr[57: 57 + graph.indptr.numel()]
    indices = big_indices[21: 21 + graph.indices.numel()]
    indptr.copy_(graph.indptr)
    indices.copy_(graph.indices)
    seeds = torch.arange(0, 1500, 5)
    expected = run_op(graph.indptr, graph.indices, seeds, [12, 40])
    got = run_op(indptr, indices, seeds.cuda(), [12, 40])
    assert all(torch.equal(a.cpu(), b) for a, b in zip(got, expected))
    sampler = FusedSampler(CSCGraph(indptr, indices), [12, 40], device="cuda")
    assert torch.equal(sampler.sample(seeds.cuda()).input_nodes.cpu(), expected[2])


@needs_cuda
@pytest.mark.parametrize("where", ["device", "pinned"])
def test_fused_sampler_on_the_gpu(graph, where, registered):
    cpu_sampler = FusedSampler(graph, [10, 5, 3], seed=4)
    if where == "device":
        sampler = FusedSampler(CSCGraph(*placed(graph, "cuda")), [10, 5, 3], seed=4)
    else:  # the graph's own arrays, page-locked in place like CSCGraph.pin_memory_()
        pinned = CSCGraph(graph.indptr.clone(), graph.indices.clone())
        registered(pinned.indptr, pinned.indices)
        sampler = FusedSampler(pinned, [10, 5, 3], seed=4, device="cuda")
    assert sampler.device.type == "cuda"
    gen = torch.Generator().manual_seed(5)
    for batch_id in range(4):
        seeds = torch.randperm(graph.num_nodes, generator=gen)[:256]
        expected = cpu_sampler.sample(seeds, batch_id=batch_id)
        got = sampler.sample(seeds.cuda(), batch_id=batch_id)
        assert torch.equal(got.input_nodes.cpu(), expected.input_nodes)
        for a, b in zip(got.blocks, expected.blocks):
            assert a.num_dst == b.num_dst
            assert torch.equal(a.indptr.cpu(), b.indptr)
            assert torch.equal(a.indices.cpu(), b.indices)


@needs_cuda
def test_fused_sampler_device_errors(graph):
    with pytest.raises(ValueError, match="pinned"):
        FusedSampler(graph, [3], device="cuda")  # pageable CPU graph
    cuda_graph = CSCGraph(*placed(graph, "cuda"))
    with pytest.raises(ValueError, match="cannot be sampled on cpu"):
        FusedSampler(cuda_graph, [3], device="cpu")
    with pytest.raises(ValueError, match="seeds are on cpu"):
        FusedSampler(cuda_graph, [3]).sample(torch.tensor([1, 2]))


@needs_cuda
def test_op_rejects_wrong_devices():
    small = random_graph(100, 800, power_law=False, seed=0)
    seeds = torch.tensor([1, 2], device="cuda")
    node_map = fresh_map(small.num_nodes, "cuda")
    gpu = placed(small, "cuda")
    with pytest.raises(RuntimeError, match="pinned"):  # pageable host graph, CUDA seeds
        ops.sample_fused(small.indptr, small.indices, seeds, [3], False, 0, 0, node_map)
    with pytest.raises(RuntimeError, match="seeds must be a CUDA tensor"):
        ops.sample_fused(*gpu, seeds.cpu(), [3], False, 0, 0, node_map)
    with pytest.raises(RuntimeError, match="node_map is on cpu"):
        ops.sample_fused(*gpu, seeds, [3], False, 0, 0, node_map.cpu())
    with pytest.raises(RuntimeError, match="indptr is on"):
        ops.sample_fused(gpu[0], small.indices.pin_memory(), seeds, [3], False, 0, 0, node_map)
