"""sample_fused_typed on "cpu" and "cuda": the CUDA op's typed blocks bit-identical to the CPU
op's (graph in GPU memory or pinned and read over UVA; several types and relations, one type
with several relations, replacement, edge ids), the same errors, and the node map left clean."""
from __future__ import annotations

import pytest
import torch

from gnnrepro._ops import ops
from gnnrepro.typed_graph import TypedGraph

from .conftest import needs_cuda

NUM = {"paper": 500, "author": 300, "inst": 30, "venue": 3}
RELS = [("author", "writes", "paper"), ("paper", "cites", "paper"),
        ("author", "affiliated_with", "inst"), ("paper", "rev_writes", "author"),
        ("venue", "hosts", "paper")]
CASES = [  # (fanouts per layer: an int for all relations, or one per relation; replace)
    ([4, 3], False), ([[3, 5, 2, 2, 1], [15, 10, 0, 5, 1]], False), ([3, 2], True),
    ([-1, [2, 40, 1, 33, 0]], False), ([[0, 0, 0, 0, 0]], False),
]


def _graph(index_dtype: torch.dtype, one_type: bool = False) -> TypedGraph:
    gen = torch.Generator().manual_seed(1)
    num = {"n": 800} if one_type else NUM
    rels = [("n", f"r{i}", "n") for i in range(3)] if one_type else RELS
    edges = {}
    for i, (s, name, d) in enumerate(rels):
        e = 0 if name == "hosts" else 1500 + 500 * i
        dst = (torch.rand(e, generator=gen) ** 3 * num[d]).long()  # skewed in-degrees
        edges[(s, name, d)] = (torch.randint(0, num[s], (e,), generator=gen), dst)
    return TypedGraph.from_edges(num, edges, index_dtype)


def _args(graph: TypedGraph, device: str, where: str):
    rels = graph.canonical_relations
    types = {t: i for i, t in enumerate(graph.node_types)}

    def place(t: torch.Tensor) -> torch.Tensor:
        return t.pin_memory() if where == "pinned" else t.to(device)

    return ([place(graph.relations[r].indptr) for r in rels],
            [place(graph.relations[r].indices) for r in rels],
            [types[r[0]] for r in rels], [types[r[2]] for r in rels],
            list(graph.num_nodes.values()))


def _run(graph: TypedGraph, device: str, fanouts, replace: bool, where: str = "device",
         seed: int = 3, batch_id: int = 7) -> list[torch.Tensor]:
    indptrs, indices, src_t, dst_t, num = _args(graph, device, where)
    op_device = "cuda" if where == "pinned" else device
    seeds = []
    for i, n in enumerate(num):
        ids = torch.randperm(n, generator=torch.Generator().manual_seed(i))[: min(n, 64)]
        seeds.append(ids.to(op_device) if i != 2 else torch.empty(0, dtype=torch.long,
                                                                  device=op_device))
    R = len(indptrs)
    flat_fanouts = [f for layer in fanouts for f in ([layer] * R if isinstance(layer, int)
                                                        else layer)]
    node_map = torch.full((sum(num),), -1, dtype=torch.int32, device=op_device)
    out = ops.sample_fused_typed(indptrs, indices, src_t, dst_t, num, seeds, flat_fanouts,
                                 replace, seed, batch_id, True, [], [], [], [], [], -1, 0, [],
                                 node_map)
    assert bool((node_map == -1).all()), "the op left its node map dirty"
    return [t.cpu() for t in out]


@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32])
@pytest.mark.parametrize("fanouts,replace", CASES)
def test_typed_blocks_are_the_cpu_ops(device: str, index_dtype: torch.dtype, fanouts,
                                      replace: bool) -> None:
    graph = _graph(index_dtype)
    want = _run(graph, "cpu", fanouts, replace)
    got = _run(graph, device, fanouts, replace)
    assert len(got) == len(want)
    for a, b in zip(want, got):
        assert torch.equal(a, b)


@pytest.mark.parametrize("fanouts", [[5, 4], [[2, 30, 1], [-1, 3, 0]]])
def test_one_type_several_relations(device: str, fanouts) -> None:
    graph = _graph(torch.int64, one_type=True)
    for a, b in zip(_run(graph, "cpu", fanouts, False), _run(graph, device, fanouts, False)):
        assert torch.equal(a, b)


@needs_cuda
def test_pinned_typed_graph_over_uva() -> None:
    graph = _graph(torch.int64)
    fanouts = [[3, 5, 2, 2, 1], [15, 10, 0, 5, 1]]
    for a, b in zip(_run(graph, "cpu", fanouts, False),
                    _run(graph, "cuda", fanouts, False, where="pinned")):
        assert torch.equal(a, b)


def test_typed_errors_match(device: str) -> None:
    """Bad indices in relation 3: the same message (relation, smallest position) on both
    kernels."""
    graph = _graph(torch.int64)
    rel = graph.relations[RELS[3]]
    bad = torch.full_like(rel.indices, 10**6)  # every sampled edge is bad: the first is named
    graph.relations[RELS[3]] = type(rel)(rel.indptr, bad, validate=False,
                                         num_src_nodes=rel.num_src_nodes)
    messages = []
    for dev in ("cpu", device):
        with pytest.raises(RuntimeError) as err:
            _run(graph, dev, [-1, -1], False)
        messages.append(str(err.value).splitlines()[0])
    assert "indices of relation 3 holds node id 1000000" in messages[0]
    assert messages[0] == messages[1]
