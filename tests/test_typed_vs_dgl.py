"""Our typed sampler against DGL 2.1's heterogeneous samplers on the same heterograph: the same
pick counts per destination and relation, and, over many batches, the same per-neighbour
inclusion frequencies (both uniform without replacement)."""
from __future__ import annotations

import pytest
import torch

from gnnrepro.baselines.dgl_import import dgl_available
from gnnrepro.sampling import FusedSampler
from gnnrepro.typed_graph import TypedGraph

pytestmark = pytest.mark.skipif(not dgl_available(), reason="DGL is not installed")

NUM = {"paper": 60, "author": 40}
HUB = 0  # paper 0 is written by 12 authors and cites 9 papers


def _graph() -> TypedGraph:
    gen = torch.Generator().manual_seed(2)
    writes = (torch.cat([torch.arange(12), torch.randint(0, 40, (150,), generator=gen)]),
              torch.cat([torch.zeros(12, dtype=torch.long),
                         torch.randint(1, 60, (150,), generator=gen)]))
    cites = (torch.cat([torch.arange(1, 10), torch.randint(0, 60, (200,), generator=gen)]),
             torch.cat([torch.zeros(9, dtype=torch.long),
                        torch.randint(1, 60, (200,), generator=gen)]))
    return TypedGraph.from_edges(NUM, {("author", "writes", "paper"): writes,
                                       ("paper", "cites", "paper"): cites,
                                       ("paper", "rev_writes", "author"): writes[::-1]})


def test_same_counts_and_inclusion_frequencies_as_dgl() -> None:
    from gnnrepro.baselines.dgl_typed_samplers import DGLTypedFusedSampler, DGLTypedUnfusedSampler
    graph = _graph()
    fanouts = [{"writes": 4, "cites": 3, "rev_writes": 2}]
    ours = FusedSampler(graph, fanouts, seed=0)
    theirs = [DGLTypedFusedSampler(graph, fanouts, seed=0),
              DGLTypedUnfusedSampler(graph, fanouts, seed=0)]
    seeds = {"paper": torch.arange(60)}
    block = ours.sample(seeds, 0).blocks[0]
    for dgl_sampler in theirs:
        _, _, dgl_blocks = dgl_sampler.sample_native(seeds, 0)
        for rel in graph.canonical_relations:
            if rel[2] != "paper":
                continue
            want = dgl_blocks[0].in_degrees(etype=rel).long()
            assert torch.equal(block.blocks[rel].in_degrees(), want), (dgl_sampler.name, rel)
    trials = 1200
    hits = {name: torch.zeros(2, 61) for name in ("ours", "dgl")}
    for b in range(trials):
        tb = ours.sample({"paper": torch.tensor([HUB])}, b).blocks[0]
        for k, rel in enumerate([("author", "writes", "paper"), ("paper", "cites", "paper")]):
            blk = tb.blocks[rel]
            hits["ours"][k][blk.src_nodes[blk.indices]] += 1
        _, _, blocks = theirs[0].sample_native({"paper": torch.tensor([HUB])}, b)
        for k, rel in enumerate([("author", "writes", "paper"), ("paper", "cites", "paper")]):
            src, _ = blocks[0].edges(etype=rel)
            ids = blocks[0].srcnodes[rel[0]].data["_ID"][src.long()].long()
            hits["dgl"][k][ids] += 1
    # writes: 4 of 12 authors (1/3 each); cites: 3 of 9 papers (1/3 each). sd ~0.014.
    for name, h in hits.items():
        assert torch.all((h[0][:12] / trials - 1 / 3).abs() < 0.07), name
        assert torch.all((h[1][1:10] / trials - 1 / 3).abs() < 0.07), name
    # And the two agree with each other within the same noise.
    assert torch.all((hits["ours"] - hits["dgl"]).abs() / trials < 0.1)
