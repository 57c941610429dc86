"""PyG's NeighborLoader on a HeteroData (gnnrepro.drop_in.NeighborLoader dispatching to
gnnrepro.drop_in_hetero), as MLPerf's R-GAT reference and RelBench call it: batches hold real
edges, the rows and labels of their nodes, per-relation fanouts, and PyG's temporal semantics
with node times (RelBench's), edge times and repeated input nodes."""
from __future__ import annotations

import pytest
import torch

from gnnrepro.drop_in import NeighborLoader

PAPERS, AUTHORS, FIELDS = 120, 80, 10


def hetero_data(seed: int = 0):
    data_mod = pytest.importorskip("torch_geometric.data")
    gen = torch.Generator().manual_seed(seed)
    data = data_mod.HeteroData()
    data["paper"].x = torch.randn(PAPERS, 6, generator=gen)
    data["paper"].y = torch.randint(0, 4, (PAPERS,), generator=gen)
    data["author"].x = torch.randn(AUTHORS, 3, generator=gen)
    data["field"].num_nodes = FIELDS  # no features: PyG's models embed it
    data["paper", "cites", "paper"].edge_index = torch.randint(0, PAPERS, (2, 900), generator=gen)
    writes = torch.stack([torch.randint(0, AUTHORS, (600,), generator=gen),
                          torch.randint(0, PAPERS, (600,), generator=gen)])
    data["author", "writes", "paper"].edge_index = writes
    data["paper", "rev_writes", "author"].edge_index = writes.flip(0)
    data["field", "topic_of", "paper"].edge_index = torch.stack(
        [torch.randint(0, FIELDS, (300,), generator=gen), torch.randint(0, PAPERS, (300,),
                                                                        generator=gen)])
    return data


def check_real_edges(data, b) -> None:
    """Every edge of batch `b` is an edge of `data` (by e_id), between the nodes n_id names."""
    for rel in data.edge_types:
        edges = b[rel].edge_index
        src, dst = b[rel[0]].n_id[edges[0]], b[rel[2]].n_id[edges[1]]
        assert torch.equal(torch.stack([src, dst]), data[rel].edge_index[:, b[rel].e_id])


def test_batches_hold_real_edges_rows_and_labels():
    data = hetero_data()
    seeds = torch.arange(0, PAPERS, 2)
    with NeighborLoader(data, [3, 2], input_nodes=("paper", seeds), batch_size=25,
                        threads=1) as loader:
        batches = list(loader)
    assert len(batches) == 3
    assert torch.equal(torch.cat([b["paper"].n_id[:b["paper"].batch_size] for b in batches]),
                       seeds)
    for b in batches:
        check_real_edges(data, b)
        for t in ("paper", "author"):
            assert torch.equal(b[t].x, data[t].x[b[t].n_id])
        size = b["paper"].batch_size
        assert torch.equal(b["paper"].y, data["paper"].y[b["paper"].n_id[:size]])
        # num_neighbors counts from the seeds: 3 at their hop, per relation into a paper
        hop0 = b["paper", "cites", "paper"].edge_index[1] < size
        assert int(torch.bincount(b["paper", "cites", "paper"].edge_index[1][hop0]).max()) == 3
        assert b["paper", "cites", "paper"].num_sampled_edges[0] == int(hop0.sum())


def test_per_relation_fanouts_and_a_mask():
    data = hetero_data(seed=1)
    mask = torch.zeros(PAPERS, dtype=torch.bool)
    mask[:40] = True
    fanouts = {rel: [0 if rel[1] == "topic_of" else 2, -1 if rel[1] == "cites" else 0]
               for rel in data.edge_types}  # a layer of -1 and 0 only: the config records -1
    with NeighborLoader(data, fanouts, input_nodes=("paper", mask), batch_size=40,
                        threads=1) as loader:
        b = next(iter(loader))
    assert torch.equal(b["paper"].n_id[:40], torch.arange(40))
    topic = b["field", "topic_of", "paper"]
    assert topic.num_sampled_edges[0] == 0  # no topic edge at the seeds' hop
    check_real_edges(data, b)


def timed_hetero(seed: int = 2):
    data = hetero_data(seed)
    gen = torch.Generator().manual_seed(seed + 10)
    data["paper"].time = torch.randint(0, 100, (PAPERS,), generator=gen)
    data["author"].time = torch.randint(0, 100, (AUTHORS,), generator=gen)
    return data  # fields untimed: every topic edge a candidate at any time


def test_node_times_keep_every_timed_node_no_later_than_its_seed():
    """RelBench's call: time_attr names node times; seeds default to their own times, a timed
    neighbour is never later than its seed, untimed types come at any time, and each seed's
    nodes are its own (PyG's `batch` per type)."""
    data = timed_hetero()
    seeds = torch.arange(PAPERS)
    with NeighborLoader(data, [4, 4], input_nodes=("paper", seeds), time_attr="time",
                        batch_size=30, shuffle=True, threads=1) as loader:
        for b in loader:
            size = b["paper"].batch_size
            seed_time = data["paper"].time[b["paper"].n_id[:size]]
            assert torch.equal(b["paper"].batch[:size], torch.arange(size))
            for t in ("paper", "author"):
                assert bool((data[t].time[b[t].n_id] <= seed_time[b[t].batch]).all())
            for rel in data.edge_types:  # an edge's ends belong to one seed
                edges = b[rel].edge_index
                assert torch.equal(b[rel[0]].batch[edges[0]], b[rel[2]].batch[edges[1]])
            check_real_edges(data, b)


def test_a_repeated_input_node_at_its_own_times():
    data = timed_hetero(seed=3)
    seeds = torch.tensor([5, 5, 9, 5])
    seed_time = torch.tensor([10, 90, 50, 40])
    with NeighborLoader(data, [-1], input_nodes=("paper", seeds), input_time=seed_time,
                        time_attr="time", batch_size=4, threads=1) as loader:
        b = next(iter(loader))
    assert torch.equal(b["paper"].n_id[:4], seeds)
    rel = ("author", "writes", "paper")
    edges = b[rel].edge_index
    for k in range(4):
        authors = b["author"].n_id[edges[0][edges[1] == k]]
        into = data[rel].edge_index[0][data[rel].edge_index[1] == seeds[k]]
        want = into[data["author"].time[into] <= seed_time[k]]
        assert sorted(authors.tolist()) == sorted(want.tolist())


def test_bad_arguments_are_named():
    data = hetero_data()
    with pytest.raises(ValueError, match="input_nodes is needed"):
        NeighborLoader(data, [2])
    with pytest.raises(ValueError, match="'venue' is not a node type"):
        NeighborLoader(data, [2], input_nodes=("venue", None))
    with pytest.raises(ValueError, match="every edge type needs as many hops"):
        NeighborLoader(data, {rel: [2] * (1 + (rel[1] == "cites")) for rel in data.edge_types},
                       input_nodes="paper")
    with pytest.raises(ValueError, match="no node or edge type of data has it"):
        NeighborLoader(data, [2], input_nodes="paper", time_attr="when")
    with pytest.raises(ValueError, match="input_time is needed"):
        NeighborLoader(timed_hetero(), [2], input_nodes="field", time_attr="time")


@pytest.mark.parametrize("mode", ["binary", "triplet"])
def test_link_neighbor_loader_on_a_hetero_data(mode):
    """PyG's LinkNeighborLoader with edge_label_index=(edge type, label edges): the label
    edges and negatives in the rows of their node types, real sampled edges, every type's
    rows (author's through the hand-over: another width than paper's)."""
    from gnnrepro.drop_in_link import LinkNeighborLoader
    data = hetero_data(seed=4)
    rel = ("author", "writes", "paper")
    label_index = data[rel].edge_index[:, :120]
    with LinkNeighborLoader(data, [3, 2], edge_label_index=(rel, label_index),
                            neg_sampling={"mode": mode, "amount": 2},
                            batch_size=50) as loader:
        batches = list(loader)
    assert torch.equal(torch.cat([b[rel].input_id for b in batches]), torch.arange(120))
    for b in batches:
        size = b[rel].input_id.numel()
        want = label_index[:, b[rel].input_id]
        if mode == "binary":
            index = b[rel].edge_label_index
            assert torch.equal(b[rel].edge_label, torch.cat([torch.ones(size),
                                                             torch.zeros(2 * size)]))
            assert index.shape == (2, 3 * size)
        else:
            index = torch.stack([b["author"].src_index, b["paper"].dst_pos_index])
            assert b["paper"].dst_neg_index.shape == (size, 2)
        assert torch.equal(torch.stack([b["author"].n_id[index[0, :size]],
                                        b["paper"].n_id[index[1, :size]]]), want)
        check_real_edges(data, b)
        for t in ("paper", "author"):
            assert torch.equal(b[t].x, data[t].x[b[t].n_id])


def test_temporal_link_neighbor_loader_on_node_times():
    """time_attr naming node times with edge_label_time: every sampled node of a timed type
    is no later than its label edge's time (here one time for all)."""
    from gnnrepro.drop_in_link import LinkNeighborLoader
    data = timed_hetero(seed=6)
    rel = ("paper", "cites", "paper")
    with LinkNeighborLoader(data, [4, 4], edge_label_index=(rel, None),
                            edge_label_time=torch.full((900,), 50), time_attr="time",
                            neg_sampling={"mode": "binary", "amount": 1},
                            batch_size=300) as loader:
        for b in loader:
            assert bool((b[rel].edge_label_time == 50).all())
            for t in ("paper", "author"):
                reached = b[t].n_id[b[t].num_sampled_nodes[0]:]
                assert bool((data[t].time[reached] <= 50).all())
            check_real_edges(data, b)
    with pytest.raises(TypeError, match="edge_label_index of a HeteroData"):
        LinkNeighborLoader(data, [2], edge_label_index=torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="edge_label_index: .* is not an edge type"):
        LinkNeighborLoader(data, [2], edge_label_index=(("paper", "cites", "author"), None))
