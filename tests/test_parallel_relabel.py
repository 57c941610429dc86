"""The CPU op's parallel relabel (csrc/sampling/relabel_mode.h, issue 49 item 6) gives the ordered
relabel's blocks bit for bit, on any thread count, homogeneous and typed, and reports a node map
that was not all -1 as the ordered one does."""
from __future__ import annotations

import pytest
import torch

from helpers import random_graph
from gnnrepro._ops import ops
from gnnrepro.sampling import FusedSampler
from gnnrepro.sampling.relabel_mode import parallel_relabel_threads, relabel_in_parallel_from
from gnnrepro.typed_graph import TypedGraph

ORDERED, PARALLEL = 1 << 30, 1  # settings that force each relabel
INT32_MIN = -(2 ** 31)


def _runs(sample, threads=(1, 2, 4)) -> dict:
    """sample() under each relabel at each thread count."""
    before = torch.get_num_threads()
    runs = {}
    try:
        for mode in (ORDERED, PARALLEL):
            with relabel_in_parallel_from(mode):
                for t in threads:
                    torch.set_num_threads(t)
                    runs[(mode, t)] = sample()
    finally:
        torch.set_num_threads(before)
    return runs


def _flat_equal(a: list, b: list) -> bool:
    return len(a) == len(b) and all(torch.equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("index_dtype,fanouts,replace", [
    (torch.int32, [10, 10, 5], False), (torch.int64, [70, -1], False),
    (torch.int64, [100, 3], True)])
def test_the_same_blocks_as_the_ordered_relabel(index_dtype, fanouts, replace) -> None:
    """Hubs in many chunks (power-law degrees), so that threads claim the same nodes at once."""
    g = random_graph(5000, 150_000, power_law=True, seed=7, index_dtype=index_dtype)
    seeds = torch.randperm(g.num_nodes, generator=torch.Generator().manual_seed(0))[:1500]
    node_map = torch.full((g.num_nodes,), -1, dtype=torch.int32)
    runs = _runs(lambda: [ops.sample_fused(g.indptr, g.indices, seeds, fanouts, replace, 11, b,
                                           node_map) for b in range(4)])
    first = runs[(ORDERED, 1)]
    for key, run in runs.items():
        assert all(_flat_equal(a, b) for a, b in zip(first, run)), key
    assert bool((node_map == -1).all())


def test_typed_weighted_and_excluded_relations_are_the_same() -> None:
    """Several relations into one source type, a weighted relation, excluded edges, edge ids."""
    num = {"paper": 3000, "author": 2000}
    gen = torch.Generator().manual_seed(3)

    def rnd(src: str, dst: str, e: int) -> tuple[torch.Tensor, torch.Tensor]:
        d = (torch.rand(e, generator=gen) ** 3 * num[dst]).long()
        return torch.randint(0, num[src], (e,), generator=gen), d
    writes, cites = rnd("author", "paper", 40_000), rnd("paper", "paper", 60_000)
    edges = {("author", "writes", "paper"): writes, ("paper", "cites", "paper"): cites,
             ("paper", "rev_writes", "author"): (writes[1], writes[0])}
    graph = TypedGraph.from_edges(num, edges, keep_edge_ids=True)
    weights = {"cites": torch.rand(60_000, generator=gen) * (torch.rand(60_000, generator=gen)
                                                             > 0.3)}
    sampler = FusedSampler(graph, [8, 6], seed=2, weights=weights, edge_ids=True)
    seeds = {"paper": torch.arange(0, 3000, 2), "author": torch.arange(0, 2000, 3)}
    exclude = {"cites": torch.arange(0, 60_000, 5)}
    runs = _runs(lambda: sampler.sample(seeds, batch_id=3, exclude=exclude))
    first = runs[(ORDERED, 1)]
    for key, run in runs.items():
        for a, b in zip(first.blocks, run.blocks):
            for rel in a.blocks:
                for f in ("indptr", "indices", "edge_ids"):
                    assert torch.equal(getattr(a.blocks[rel], f), getattr(b.blocks[rel], f)), key
            for t in a.src_nodes:
                assert torch.equal(a.src_nodes[t], b.src_nodes[t]), key


def _touched(g, seeds, fanouts) -> torch.Tensor:
    clean = ops.sample_fused(g.indptr, g.indices, seeds, fanouts, False, 1, 0,
                             torch.full((g.num_nodes,), -1, dtype=torch.int32))
    touched = torch.zeros(g.num_nodes, dtype=torch.bool)
    for src_nodes in clean[2::3]:
        touched[src_nodes] = True
    touched[seeds] = False  # a seed's stale entry is the seed check's, not the relabel's
    return clean, torch.nonzero(touched)[:, 0]


@pytest.mark.parametrize("stale", [-7, -2, INT32_MIN, 1_000_000])
def test_a_stale_entry_is_reported_and_the_map_restored(stale: int) -> None:
    """-7 and -2 are no position of the layer; INT32_MIN is the first position's, at or below
    every claim, so its node gets no first appearance; 1,000,000 is no id."""
    g = random_graph(400, 4000, power_law=True, seed=5)
    seeds = torch.randperm(400, generator=torch.Generator().manual_seed(2))[:60]
    _, touched = _touched(g, seeds, [5, 5])
    with relabel_in_parallel_from(PARALLEL):
        for node in touched[:20].tolist():
            node_map = torch.full((400,), -1, dtype=torch.int32)
            node_map[node] = stale
            with pytest.raises(RuntimeError, match="node_map must be all -1"):
                ops.sample_fused(g.indptr, g.indices, seeds, [5, 5], False, 1, 0, node_map)
            assert bool((node_map == -1).all())


def test_stale_positions_either_raise_or_leave_the_blocks_right() -> None:
    """A stale entry that is a position of the layer above its node's first appearance is
    overtaken by the claims and changes nothing; one below it is reported."""
    g = random_graph(400, 4000, power_law=True, seed=5)
    seeds = torch.randperm(400, generator=torch.Generator().manual_seed(2))[:60]
    clean, touched = _touched(g, seeds, [5, 5])
    gen = torch.Generator().manual_seed(4)
    outcomes = set()
    with relabel_in_parallel_from(PARALLEL):
        for _ in range(40):
            node_map = torch.full((400,), -1, dtype=torch.int32)
            node = touched[torch.randint(0, touched.numel(), (1,), generator=gen)]
            node_map[node] = INT32_MIN + torch.randint(0, 300, (1,), generator=gen,
                                                       dtype=torch.int32)
            try:
                flat = ops.sample_fused(g.indptr, g.indices, seeds, [5, 5], False, 1, 0,
                                        node_map)
            except RuntimeError as err:
                assert "node_map must be all -1" in str(err)
                outcomes.add("raised")
            else:
                assert _flat_equal(flat, clean)
                outcomes.add("right")
            assert bool((node_map == -1).all())
    assert outcomes == {"raised", "right"}


def test_the_setting_is_checked_and_restored() -> None:
    before = parallel_relabel_threads()
    with pytest.raises(ValueError, match="threads must be >= 1"):
        parallel_relabel_threads(0)
    with pytest.raises(TypeError, match="threads must be an int"):
        parallel_relabel_threads(2.0)  # type: ignore[arg-type]
    with relabel_in_parallel_from(3):
        assert parallel_relabel_threads() == 3
    assert parallel_relabel_threads() == before
