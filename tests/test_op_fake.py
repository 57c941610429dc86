"""The ops under fake tensors and torch.library.opcheck (schema, fake kernel, autograd
registration, AOT dispatch) on the CPU: what torch.compile needs from them."""
from __future__ import annotations

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import ShapeEnv

from helpers import random_graph
from gnnrepro._ops import ops


@pytest.fixture(scope="module")
def graph():
    return random_graph(300, 3000, power_law=True, seed=3)


@pytest.mark.parametrize("fanouts,replace", [([5, 3], False), ([-1], False), ([4, 2, 2], True)])
def test_sample_fused_opcheck(graph, fanouts, replace):
    seeds = torch.randperm(graph.num_nodes, generator=torch.Generator().manual_seed(1))[:40]
    node_map = torch.full((graph.num_nodes,), -1, dtype=torch.int32)
    torch.library.opcheck(ops.sample_fused.default,
                          (graph.indptr, graph.indices, seeds, fanouts, replace, 7, 2, node_map))
    assert bool((node_map == -1).all())


def test_gather_rows_opcheck():
    src = torch.rand(50, 6)
    index = torch.tensor([3, 0, 49, 3])
    torch.library.opcheck(ops.gather_rows.default, (src, index, torch.empty(8, 6)))


def test_fake_shapes(graph):
    """Under FakeTensorMode the op runs no kernel: sizes that depend on the data are new
    symbols, the rest follow the inputs (num_dst + 1 indptr entries, int64 everywhere)."""
    shape_env = ShapeEnv(allow_dynamic_output_shape_ops=True)
    with FakeTensorMode(shape_env=shape_env) as mode:
        indptr = mode.from_tensor(graph.indptr)
        indices = mode.from_tensor(graph.indices)
        seeds = mode.from_tensor(torch.arange(10))
        node_map = mode.from_tensor(torch.full((graph.num_nodes,), -1, dtype=torch.int32))
        flat = ops.sample_fused(indptr, indices, seeds, [4, 3], False, 0, 0, node_map)
        out = mode.from_tensor(torch.empty(9, 3))
        assert ops.gather_rows(mode.from_tensor(torch.rand(20, 3)),
                               mode.from_tensor(torch.arange(5)), out) is None
    assert len(flat) == 6 and all(t.dtype == torch.int64 for t in flat)
    assert flat[3].shape == (11,)  # the seeds' layer (last block): 10 destinations
    assert not isinstance(flat[4].shape[0], int)  # its edge count is data-dependent


@pytest.mark.parametrize("return_eids", [False, True])
def test_sample_fused_typed_opcheck(graph, return_eids):
    """Two node types (the graph's nodes split 200 / 100) and three relations between them."""
    ip, ix = graph.indptr, graph.indices
    sub = ip[:101].clone()  # relation 1: the first 100 nodes' lists, ids clamped into type 1
    rel1 = ix[: int(sub[-1])].clamp(max=99)
    node_map = torch.full((300,), -1, dtype=torch.int32)
    seeds = [torch.tensor([0, 5, 9]), torch.tensor([1, 2])]
    torch.library.opcheck(
        ops.sample_fused_typed.default,
        ([ip[:201], sub, sub], [ix[: int(ip[200])].clamp(max=199), rel1, rel1], [0, 1, 1],
         [0, 1, 1], [200, 100], seeds, [3, 2, 0, -1, 4, 1], False, 7, 2, return_eids, [], [], [], [], [], -1, 0, [],
         node_map))
    assert bool((node_map == -1).all())
