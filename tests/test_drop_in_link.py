"""The link-prediction drop-ins: DGL's as_edge_prediction_sampler + DataLoader and PyG's
LinkNeighborLoader, each yielding its peer's batch with its peer's semantics."""
from __future__ import annotations

import pytest
import torch

from gnnrepro.baselines.dgl_import import dgl_available
from gnnrepro.drop_in import DataLoader, LinkNeighborLoader, as_edge_prediction_sampler


def edges(n: int = 150, e: int = 1200, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, n, (e,), generator=gen), torch.randint(0, n, (e,), generator=gen)


@pytest.mark.skipif(not dgl_available(), reason="DGL is not installed")
def test_dgls_edge_prediction_batches():
    from gnnrepro.baselines.dgl_import import import_dgl
    dgl = import_dgl()
    src, dst = edges()
    e = src.numel()
    g = dgl.graph((torch.cat([src, dst]), torch.cat([dst, src])), num_nodes=150)
    g.ndata["feat"] = torch.randn(150, 6)
    reverse = (torch.arange(2 * e) + e) % (2 * e)
    sampler = as_edge_prediction_sampler(
        dgl.dataloading.NeighborSampler([4, 4]), exclude="reverse_id", reverse_eids=reverse,
        negative_sampler=dgl.dataloading.negative_sampler.Uniform(2))
    loader = DataLoader(g, torch.arange(e), sampler, batch_size=100, shuffle=True,
                        num_workers=4)  # DGL's argument: taken, our loader chooses its own
    seen = []
    all_src, all_dst = g.edges(order="eid")
    for input_nodes, pair, neg, blocks in loader:
        eids = pair.edata[dgl.EID]
        nid = pair.ndata[dgl.NID]
        u, v = pair.edges()
        assert torch.equal(nid[u], all_src[eids]) and torch.equal(nid[v], all_dst[eids])
        nu, _ = neg.edges()
        assert torch.equal(nu, u.repeat_interleave(2))
        assert torch.equal(blocks[-1].dstdata[dgl.NID], nid)
        assert torch.equal(blocks[0].srcdata["feat"], g.ndata["feat"][input_nodes])
        for block in blocks:  # DGL's EID: each sampled edge's id in g, none of the excluded
            bu, bv = block.edges()
            sampled = block.edata[dgl.EID]
            assert torch.equal(block.srcdata[dgl.NID][bu], all_src[sampled])
            assert torch.equal(block.dstdata[dgl.NID][bv], all_dst[sampled])
            assert not torch.isin(sampled, torch.cat([eids, reverse[eids]])).any()
        seen += eids.tolist()
    assert sorted(seen) == list(range(e))
    broken = reverse.clone()
    broken[[0, 5]] = broken[[5, 0]]  # edges 0 and 5 now name each other's reverse
    with pytest.raises(ValueError, match="reverse_eids must be an involution"):
        DataLoader(g, torch.arange(e), as_edge_prediction_sampler(
            [4], exclude="reverse_id", reverse_eids=broken, negative_sampler=1))
    with pytest.raises(ValueError, match="reverse_types is for heterographs"):
        as_edge_prediction_sampler([4], exclude="reverse_types")


@pytest.mark.parametrize("mode", ["binary", "triplet", None])
def test_pygs_link_neighbor_loader_batches(mode):
    data_mod = pytest.importorskip("torch_geometric.data")
    src, dst = edges(seed=1)
    x = torch.randn(150, 5)
    data = data_mod.Data(x=x, edge_index=torch.stack([src, dst]), num_nodes=150)
    label_index = torch.stack([src[:300], dst[:300]])
    labels = torch.rand(300)
    neg = None if mode is None else {"mode": mode, "amount": 2}
    loader = LinkNeighborLoader(data, [3, 3], edge_label_index=label_index, edge_label=labels,
                                neg_sampling=neg, batch_size=64, shuffle=True)
    seen = []
    for batch in loader:
        b = batch.input_id.numel()
        n_id = batch.n_id
        assert torch.equal(batch.x, x[n_id])
        if mode == "triplet":
            assert torch.equal(n_id[batch.src_index], label_index[0, batch.input_id])
            assert torch.equal(n_id[batch.dst_pos_index], label_index[1, batch.input_id])
            assert batch.dst_neg_index.shape == (b, 2)
        else:
            pos = batch.edge_label_index[:, :b]
            assert torch.equal(n_id[pos], label_index[:, batch.input_id])
            assert torch.equal(batch.edge_label[:b], labels[batch.input_id])
            expected = b * (3 if mode == "binary" else 1)
            assert batch.edge_label_index.shape == (2, expected)
            assert bool((batch.edge_label[b:] == 0).all())
        seen += batch.input_id.tolist()
    assert sorted(seen) == list(range(300))
    with pytest.raises(ValueError, match="neg_sampling mode"):
        LinkNeighborLoader(data, [3], neg_sampling={"mode": "hard"})


@pytest.mark.parametrize("mode", ["binary", "triplet"])
def test_pygs_temporal_link_neighbor_loader_batches(mode):
    """time_attr with edge_label_time (PyG's temporal LinkNeighborLoader): each endpoint and
    negative a seed of its own (`batch`), no sampled edge later than its seed's label time."""
    data_mod = pytest.importorskip("torch_geometric.data")
    src, dst = edges(seed=2)
    gen = torch.Generator().manual_seed(3)
    edge_time = torch.randint(0, 100, (src.numel(),), generator=gen)
    data = data_mod.Data(x=torch.randn(150, 5), edge_index=torch.stack([src, dst]),
                         num_nodes=150, edge_time=edge_time)
    label_index = torch.stack([src[:200], dst[:200]])
    label_time = torch.randint(0, 100, (200,), generator=gen)
    loader = LinkNeighborLoader(data, [4, 4], edge_label_index=label_index,
                                edge_label_time=label_time, time_attr="edge_time",
                                neg_sampling={"mode": mode, "amount": 2}, batch_size=50)
    seen = 0
    for batch in loader:
        t = label_time[batch.input_id]
        b, with_negatives = t.numel(), torch.cat([t, t.repeat_interleave(2)])
        # seeds: the sources (binary: and the negatives' sources), then the destinations
        # and negatives, each at its label edge's time
        seed_time = torch.cat([with_negatives if mode == "binary" else t, with_negatives])
        assert int(batch.batch.max()) + 1 == seed_time.numel()
        target_seed = batch.batch[batch.edge_index[1]]
        assert torch.equal(batch.batch[batch.edge_index[0]], target_seed)  # disjoint
        assert bool((edge_time[batch.e_id] <= seed_time[target_seed]).all())
        index = (batch.edge_label_index if mode == "binary"
                 else torch.stack([batch.src_index, batch.dst_pos_index]))
        assert torch.equal(batch.n_id[index[:, :b]], label_index[:, batch.input_id])
        assert batch.edge_label_time.numel() == (3 * b if mode == "binary" else b)
        seen += b
    assert seen == 200
    # node times (PyG's node-level time_attr): the batches of edge times equal to each
    # edge's source's time
    data.time = torch.randint(0, 100, (150,), generator=gen)
    data.src_time = data.time[src]
    by_node, by_edge = (list(LinkNeighborLoader(
        data, [4, 4], edge_label_index=label_index, edge_label_time=label_time,
        time_attr=attr, neg_sampling={"mode": mode, "amount": 2}, batch_size=100))
        for attr in ("time", "src_time"))
    for a, e in zip(by_node, by_edge):
        assert torch.equal(a.n_id, e.n_id) and torch.equal(a.e_id, e.e_id)
        assert torch.equal(a.edge_index, e.edge_index)
    with pytest.raises(ValueError, match="time_attr and edge_label_time go together"):
        LinkNeighborLoader(data, [3], edge_label_index=label_index, time_attr="edge_time")
    with pytest.raises(ValueError, match="data has no attribute 'when'"):
        LinkNeighborLoader(data, [3], edge_label_index=label_index, time_attr="when",
                           edge_label_time=label_time)


def test_the_link_loaders_close_their_workers():
    """As the node drop-ins: `with` (or close()) stops the loader, which then refuses an epoch."""
    data_mod = pytest.importorskip("torch_geometric.data")
    src, dst = edges(seed=2)
    data = data_mod.Data(x=torch.randn(150, 5), edge_index=torch.stack([src, dst]), num_nodes=150)
    with LinkNeighborLoader(data, [3, 3], edge_label_index=torch.stack([src[:100], dst[:100]]),
                            batch_size=32, workers=2) as loader:
        assert next(iter(loader)).input_id.numel() == 32
    assert loader.loader._closed
    with pytest.raises(RuntimeError):
        next(iter(loader))


def test_the_link_drop_ins_take_the_peers_worker_arguments_and_seed_their_shuffle():
    """num_workers (the peer's) is taken and left to our loader; `seed` seeds the order."""
    data_mod = pytest.importorskip("torch_geometric.data")
    src, dst = edges(seed=3)
    data = data_mod.Data(x=torch.randn(150, 5), edge_index=torch.stack([src, dst]), num_nodes=150)

    def first_ids(seed: int) -> list[int]:
        with LinkNeighborLoader(data, [2], batch_size=16, shuffle=True, num_workers=4,
                                persistent_workers=True, seed=seed) as loader:
            return next(iter(loader)).input_id.tolist()

    assert first_ids(1) == first_ids(1)
    assert first_ids(1) != first_ids(2)

