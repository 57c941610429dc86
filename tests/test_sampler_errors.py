"""Bad input raises a clear ValueError/TypeError naming the argument, and never crashes.

The last tests call the C++ op directly with inputs the Python wrapper would refuse: the op must
raise, and leave its node map all -1 so the sampler keeps working afterwards.
"""
from __future__ import annotations

import pytest
import torch

from helpers import random_graph
from gnnrepro import CSCGraph
from gnnrepro._ops import ops
from gnnrepro.sampling import FusedSampler, ReferenceSampler

SAMPLERS = [FusedSampler, ReferenceSampler]


@pytest.fixture
def small_graph() -> CSCGraph:
    return random_graph(100, 800, power_law=False, seed=0)


@pytest.mark.parametrize("sampler_cls", SAMPLERS)
@pytest.mark.parametrize("seeds,error,match", [
    (torch.tensor([0, 100]), ValueError, "seeds must lie in"),
    (torch.tensor([-1, 3]), ValueError, "seeds must lie in"),
    (torch.tensor([1.0, 2.0]), TypeError, "seeds must be an integer tensor"),
    (torch.tensor([[1, 2]]), ValueError, "seeds must be 1-D"),
    (torch.tensor([4, 5, 4]), ValueError, "seeds must be unique"),
    ([1, 2], TypeError, "seeds must be a torch.Tensor"),
    (torch.tensor([1, 2], device="meta"), ValueError, "seeds are on meta"),
])
def test_bad_seeds(small_graph, sampler_cls, seeds, error, match):
    with pytest.raises(error, match=match):
        sampler_cls(small_graph, [3, 3]).sample(seeds)


@pytest.mark.parametrize("sampler_cls", SAMPLERS)
@pytest.mark.parametrize("fanouts,error,match", [
    ([], ValueError, "fanouts must not be empty"),
    ([3, 0], ValueError, r"fanouts\[1\] = 0"),
    ([-2], ValueError, r"fanouts\[0\] = -2"),
    ([2.5], TypeError, r"fanouts\[0\] must be an int"),
    ("15,10", TypeError, "fanouts must be a sequence"),
    (5, TypeError, "fanouts must be a sequence"),
])
def test_bad_fanouts(small_graph, sampler_cls, fanouts, error, match):
    with pytest.raises(error, match=match):
        sampler_cls(small_graph, fanouts)


@pytest.mark.parametrize("sampler_cls", SAMPLERS)
def test_bad_graph_replace_seed_and_batch_id(small_graph, sampler_cls):
    with pytest.raises(TypeError, match="graph must be a gnnrepro.CSCGraph"):
        sampler_cls((small_graph.indptr, small_graph.indices), [3])
    with pytest.raises(TypeError, match="replace must be a bool"):
        sampler_cls(small_graph, [3], replace=1)
    with pytest.raises(TypeError, match="seed must be an int"):
        sampler_cls(small_graph, [3], seed=1.5)
    with pytest.raises(TypeError, match="batch_id must be an int"):
        sampler_cls(small_graph, [3]).sample(torch.tensor([1]), batch_id="7")


@pytest.mark.parametrize("indptr,indices,error,match", [
    (torch.tensor([1, 2, 3]), torch.tensor([0, 1, 0]), ValueError, "indptr must start at 0"),
    (torch.tensor([0, 2, 1, 3]), torch.tensor([0, 1, 0]), ValueError, "non-decreasing"),
    (torch.tensor([0, 1, 2]), torch.tensor([0, 1, 0]), ValueError, "must end at len"),
    (torch.tensor([0, 1, 2]), torch.tensor([0, 2]), ValueError, r"indices must lie in \[0"),
    (torch.tensor([0, 1, 2]), torch.tensor([0, -1]), ValueError, r"indices must lie in \[0"),
    (torch.tensor([0, 1, 2], dtype=torch.int32), torch.tensor([0, 1]), TypeError, "indptr must be int64"),
    (torch.tensor([0, 1, 2]), torch.tensor([0.0, 1.0]), TypeError, "indices must be int32 or int64"),
    (torch.tensor([[0, 1, 2]]), torch.tensor([0, 1]), ValueError, "must be 1-D"),
    ([0, 1, 2], torch.tensor([0, 1]), TypeError, "indptr must be a torch.Tensor"),
])
def test_bad_graph_arrays(indptr, indices, error, match):
    with pytest.raises(error, match=match):
        CSCGraph(indptr, indices)


def test_from_edges_checks():
    with pytest.raises(ValueError, match=r"src must lie in \[0, num_nodes=3\)"):
        CSCGraph.from_edges(torch.tensor([0, 5]), torch.tensor([0, 1]), 3)
    with pytest.raises(ValueError, match="differ in length"):
        CSCGraph.from_edges(torch.tensor([0]), torch.tensor([0, 1]), 3)
    with pytest.raises(ValueError, match="num_nodes must be"):
        CSCGraph.from_edges(torch.tensor([0]), torch.tensor([0]), -1)


def _op(graph: CSCGraph, seeds: torch.Tensor, node_map: torch.Tensor, fanouts=(3, 3)):
    return ops.sample_fused(graph.indptr, graph.indices, seeds, list(fanouts), False, 0, 0,
                            node_map)


def _fresh_map(graph: CSCGraph) -> torch.Tensor:
    return torch.full((graph.num_nodes,), -1, dtype=torch.int32)


@pytest.mark.parametrize("case", [
    "seed out of range", "duplicate seeds", "indices out of range", "indptr decreasing",
    "indptr past the end", "negative fanout", "empty fanouts", "short node map",
])
def test_op_rejects_bad_input_directly_and_keeps_working(small_graph, case):
    graph, seeds, node_map, fanouts = small_graph, torch.tensor([1, 2, 3]), None, (3, 3)
    if case == "seed out of range":
        seeds = torch.tensor([1, 2, 10**9])
    elif case == "duplicate seeds":
        seeds = torch.tensor([1, 2, 1])
    elif case == "indices out of range":
        bad = small_graph.indices.clone()
        bad[small_graph.indptr[2]:small_graph.indptr[3]] = 10**6
        graph = CSCGraph(small_graph.indptr, bad, validate=False)
    elif case == "indptr decreasing":
        bad = small_graph.indptr.clone()
        bad[3] = bad[2] - 1
        graph = CSCGraph(bad, small_graph.indices, validate=False)
    elif case == "indptr past the end":
        bad = small_graph.indptr.clone()
        bad[4] = 10**12
        graph = CSCGraph(bad, small_graph.indices, validate=False)
    elif case == "negative fanout":
        fanouts = (3, -5)
    elif case == "empty fanouts":
        fanouts = ()
    elif case == "short node map":
        node_map = torch.full((5,), -1, dtype=torch.int32)
    node_map = _fresh_map(graph) if node_map is None else node_map
    with pytest.raises(ValueError if "seed" in case else RuntimeError):
        _op(graph, seeds, node_map, fanouts)
    if node_map.numel() == graph.num_nodes:
        assert bool((node_map == -1).all()), "the op left its node map dirty after an error"
    # ...and the map an error left behind samples the healthy graph exactly like a fresh one.
    used_map = node_map if node_map.numel() == small_graph.num_nodes else _fresh_map(small_graph)
    got = _op(small_graph, torch.tensor([1, 2, 3]), used_map)
    expected = _op(small_graph, torch.tensor([1, 2, 3]), _fresh_map(small_graph))
    assert all(torch.equal(a, b) for a, b in zip(got, expected))
    assert bool((used_map == -1).all())


def test_op_rejects_wrong_dtypes_and_devices(small_graph):
    node_map = _fresh_map(small_graph)
    with pytest.raises(RuntimeError, match="seeds must be 1-D int64"):
        _op(small_graph, torch.tensor([1, 2], dtype=torch.int32), node_map)
    with pytest.raises(RuntimeError, match="node_map must be int32"):
        _op(small_graph, torch.tensor([1, 2]), node_map.long())
    with pytest.raises(RuntimeError):
        _op(small_graph, torch.tensor([1, 2], device="meta"), node_map)


def test_op_rejects_more_seeds_than_nodes(small_graph):
    """Checked before anything is sized from the seed count (more seeds than nodes cannot be
    unique)."""
    seeds = torch.zeros(small_graph.num_nodes + 1, dtype=torch.int64)
    with pytest.raises(ValueError, match="seeds has 101 entries but the graph has only 100 nodes"):
        _op(small_graph, seeds, _fresh_map(small_graph))


def test_graph_to_a_device() -> None:
    graph = CSCGraph(torch.tensor([0, 1, 2]), torch.tensor([1, 0]))
    assert graph.to("cpu") is graph and graph.to(torch.device("cpu")) is graph
    with pytest.raises(ValueError, match="unknown device string"):
        graph.to("gpu0")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            graph.to("cuda")
