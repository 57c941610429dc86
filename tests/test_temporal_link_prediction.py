"""Link prediction on a temporal sampler (PyG's LinkNeighborLoader with `time_attr`): each
endpoint and negative a seed of its own at its edge's time, no sampled edge later than it, the
batch's own edges (and reverses) excluded where asked, on homogeneous and typed graphs."""
from __future__ import annotations

import pytest
import torch
from helpers import check_edge_batches

from gnnrepro.datasets.dataset import Dataset
from gnnrepro.graph import CSCGraph
from gnnrepro.linkpred import LinkSampler
from gnnrepro.pipeline.loader import Loader
from gnnrepro.pipeline.plan import BatchPlan
from gnnrepro.sampling import FusedSampler
from gnnrepro.typed_graph import TypedGraph


def timed_symmetric_graph(n: int = 150, e: int = 1200, seed: int = 0):
    """Edges i < e and their reverses i + e (the same time), as a graph keeping those ids; the
    edges' (src, dst) by id, the reverse map and the times."""
    gen = torch.Generator().manual_seed(seed)
    src, dst = torch.randint(0, n, (e,), generator=gen), torch.randint(0, n, (e,), generator=gen)
    all_src, all_dst = torch.cat([src, dst]), torch.cat([dst, src])
    g = CSCGraph.from_edges(all_src, all_dst, n, keep_edge_ids=True)
    times = torch.randint(0, 50, (e,), generator=gen).repeat(2)
    return g, (all_src, all_dst), (torch.arange(2 * e) + e) % (2 * e), times


def _blocks_hold_no_later_edge(batch, times: torch.Tensor, seed_time: torch.Tensor) -> None:
    for block in batch.blocks:
        dst_seed = block.seed_index[block.edge_dst()]
        assert torch.equal(block.seed_index[block.indices], dst_seed)  # disjoint per seed
        assert bool((times[block.edge_ids] <= seed_time[dst_seed]).all())


@pytest.mark.parametrize("exclude", [None, "self", "reverse_id"])
def test_each_endpoint_is_a_seed_at_its_edges_time(exclude):
    g, (src, dst), reverse, times = timed_symmetric_graph()
    link = LinkSampler(FusedSampler(g, [4, -1], times=times, edge_ids=True), (src, dst),
                       num_negatives=2, exclude=exclude,
                       reverse_eids=reverse if exclude == "reverse_id" else None)
    ids = torch.tensor([3, 700, 1500, 3 + 1200, 42])  # an edge and its reverse in one batch
    batch = link.sample(ids, batch_id=1)
    b = ids.numel()
    assert batch.seeds.numel() == 4 * b  # sources, then destinations and negatives: no dedup
    assert torch.equal(batch.seeds[batch.pos[0]], src[ids])
    assert torch.equal(batch.seeds[batch.pos[1]], dst[ids])
    assert batch.neg_dst.shape == (b, 2)
    seed_time = torch.cat([times[ids], times[ids], times[ids].repeat_interleave(2)])
    _blocks_hold_no_later_edge(batch, times, seed_time)
    sampled = torch.cat([block.edge_ids for block in batch.blocks])
    own = ids if exclude != "reverse_id" else torch.cat([ids, reverse[ids]])
    if exclude is None:  # at its time an edge is a candidate of its own destination: a leak
        assert bool(torch.isin(ids, batch.blocks[-1].edge_ids).all())
    else:
        assert not bool(torch.isin(own, sampled).any())


def test_edge_time_overrides_the_sampler_times_and_is_checked():
    g, (src, dst), _, times = timed_symmetric_graph(seed=2)
    sampler = FusedSampler(g, [-1], times=times, edge_ids=True)
    early = torch.zeros(src.numel(), dtype=torch.long)
    batch = LinkSampler(sampler, (src, dst), 1, edge_time=early).sample(torch.arange(20))
    assert bool((times[batch.blocks[0].edge_ids] <= 0).all())
    with pytest.raises(ValueError, match="edge_time must be 1-D with 2400 entries"):
        LinkSampler(sampler, (src, dst), 1, edge_time=early[:-1])
    with pytest.raises(TypeError, match="edge_time must be an integer tensor"):
        LinkSampler(sampler, (src, dst), 1, edge_time=early.float())
    with pytest.raises(ValueError, match="edge_time needs a temporal sampler"):
        LinkSampler(FusedSampler(g, [2]), (src, dst), 1, edge_time=early)
    with pytest.raises(ValueError, match="edge_time is needed"):  # label edges, not the graph's
        LinkSampler(sampler, (src[:10], dst[:10]), 1)


def test_a_timed_relation_between_two_types_with_its_reverse():
    gen = torch.Generator().manual_seed(4)
    a, p = torch.randint(0, 30, (400,), generator=gen), torch.randint(0, 60, (400,),
                                                                     generator=gen)
    cites = (torch.randint(0, 60, (500,), generator=gen), torch.randint(0, 60, (500,),
                                                                        generator=gen))
    g = TypedGraph.from_edges({"author": 30, "paper": 60},
                              {("author", "writes", "paper"): (a, p),
                               ("paper", "written_by", "author"): (p, a),
                               ("paper", "cites", "paper"): cites}, keep_edge_ids=True)
    write_time = torch.randint(0, 20, (400,), generator=gen)
    times = {"writes": write_time, "written_by": write_time,
             "cites": torch.randint(0, 20, (500,), generator=gen)}
    sampler = FusedSampler(g, [-1, -1], times=times, edge_ids=True)
    link = LinkSampler(sampler, (a, p), num_negatives=3, relation="writes",
                       exclude="reverse_id", reverse_eids={"written_by": torch.arange(400)})
    ids = torch.tensor([0, 5, 77, 300])
    batch = link.sample(ids, batch_id=2)
    assert torch.equal(batch.seeds["author"][batch.pos[0]], a[ids])
    assert torch.equal(batch.seeds["paper"][batch.pos[1]], p[ids])
    assert batch.seeds["paper"].numel() == 4 * ids.numel()
    # seed indices run over the seeds of every type, in the graph's type order
    seed_time = torch.cat([write_time[ids], write_time[ids], write_time[ids].repeat_interleave(3)])
    for block in batch.blocks:
        for rel, rb in block.blocks.items():
            dst_seed = block.seed_index[rel[2]][rb.edge_dst()]
            assert bool((times[rel[1]][rb.edge_ids] <= seed_time[dst_seed]).all())
            if rel[1] in ("writes", "written_by"):  # the batch's edges and their twins
                assert not bool(torch.isin(ids, rb.edge_ids).any())


def test_the_loader_feeds_temporal_edge_batches():
    g, (src, dst), reverse, times = timed_symmetric_graph(n=200, e=2000, seed=6)
    n = g.num_nodes
    features = torch.randn(n, 8, generator=torch.Generator().manual_seed(0))
    empty = torch.empty(0, dtype=torch.long)
    data = Dataset(g, features, torch.full((n,), -1), empty, empty, empty, num_classes=0,
                   name="timed-links")
    link = LinkSampler(FusedSampler(g, [5, 5], times=times), (src, dst), num_negatives=4,
                       exclude="reverse_id", reverse_eids=reverse)
    loader = Loader(data, link, "cpu", batch_size=256, workers=2, worker_kind="thread",
                    plan=BatchPlan(torch.arange(2000), 256, seed=0), labels=data.labels)
    check_edge_batches(loader, link, features, 2000)
