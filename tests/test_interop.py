"""Our batches in DGL's and PyG's layouts (gnnrepro.interop): the PyG view is NeighborLoader's
subgraph (hop order, each node's edges once, every edge a graph edge), the DGL view runs dgl.nn
layers, train() takes a caller's model in any layout, and the errors a peer's user meets speak
their terms."""
from __future__ import annotations

import threading

import pytest
import torch
from torch import nn

from helpers import require_dgl
from gnnrepro.baselines.dgl_import import dgl_available, import_dgl
from gnnrepro.interop import model_logits, pyg_adj_t, pyg_edge_index, to_dgl, to_pyg
from gnnrepro.models import GraphSAGE
from gnnrepro.pipeline.loader import Loader
from gnnrepro.sampling import FusedSampler
from gnnrepro.training.evaluate import choose_eval_method
from gnnrepro.training.loop import train

FANOUTS = [5, 4, 3]


@pytest.fixture(scope="module")
def batch(dataset):
    with Loader(dataset, FusedSampler(dataset.graph, FANOUTS, seed=3), "cpu", 64) as loader:
        return next(iter(loader))


def test_pyg_view_is_neighbor_loaders_subgraph(dataset, batch) -> None:
    view = to_pyg(batch)
    n_id, edge_index, bs = view.n_id, view.edge_index, view.batch_size
    assert bs == 64 and torch.equal(n_id[:bs], batch.seeds)
    assert torch.equal(view.x, dataset.features[n_id]) and len(torch.unique(n_id)) == len(n_id)
    assert edge_index.dtype == torch.int64 and edge_index.shape[0] == 2
    g = dataset.graph
    for s, d in edge_index.t().tolist():  # every edge a graph edge (source -> target)
        assert bool((g.indices[g.indptr[n_id[d]]:g.indptr[n_id[d] + 1]] == n_id[s]).any())
    # each node's edges once, from the hop that first reached it: the seeds' fanout is the last
    # (PyG's num_neighbors[0]), each later hop's the one before; the last hop has none.
    targets = torch.bincount(edge_index[1], minlength=len(n_id))
    reached = [0] + [b.num_dst for b in reversed(batch.blocks)]
    for hop, fanout in enumerate(reversed(FANOUTS)):
        nodes = n_id[reached[hop]:reached[hop + 1]]
        want = torch.clamp(g.in_degrees()[nodes], max=fanout)
        assert torch.equal(targets[reached[hop]:reached[hop + 1]], want)
    assert int(targets[reached[-1]:].sum()) == 0


def test_the_views_carry_the_edge_ids_the_sampler_gives(dataset, batch) -> None:
    """PyG's e_id (in edge_index's order) and DGL's EID name each sampled edge's position in
    the graph; without edge ids from the sampler neither is there."""
    g = dataset.graph
    with Loader(dataset, FusedSampler(g, FANOUTS, seed=3, edge_ids=True), "cpu", 64) as loader:
        with_ids = next(iter(loader))
    view = to_pyg(with_ids)
    src, dst = view.n_id[view.edge_index]
    assert view.e_id.shape == (view.edge_index.shape[1],)
    assert torch.equal(g.indices[view.e_id].to(torch.int64), src)
    assert torch.equal(torch.searchsorted(g.indptr, view.e_id, right=True) - 1, dst)
    assert getattr(to_pyg(batch), "e_id", None) is None
    if dgl_available():
        dgl = import_dgl()
        for block in to_dgl(with_ids)[2]:
            u, v = block.edges()
            eid = block.edata[dgl.EID]
            assert torch.equal(g.indices[eid].to(torch.int64), block.srcdata[dgl.NID][u])
            assert torch.equal(torch.searchsorted(g.indptr, eid, right=True) - 1,
                               block.dstdata[dgl.NID][v])
        assert dgl.EID not in to_dgl(batch)[2][0].edata


def test_pyg_edge_index_of_seeds_without_neighbours() -> None:
    from gnnrepro.sampling.block import Block
    lonely = Block(torch.zeros(3, dtype=torch.int64), torch.empty(0, dtype=torch.int64),
                   torch.tensor([4, 7]), 2)
    assert pyg_edge_index([lonely]).shape == (2, 0)
    assert pyg_adj_t([lonely], 2)._nnz() == 0
    none = Block(torch.zeros(1, dtype=torch.int64), torch.empty(0, dtype=torch.int64),
                 torch.empty(0, dtype=torch.int64), 0)
    assert pyg_adj_t([none], 0).shape == (0, 0) and pyg_edge_index([none]).shape == (2, 0)
    with pytest.raises(ValueError, match="blocks must not be empty"):
        pyg_edge_index([])
    with pytest.raises(TypeError, match="MiniBatch"):
        to_pyg("not a batch")


def test_pyg_adj_t_holds_the_edge_index_edges(batch) -> None:
    view, sparse = to_pyg(batch), to_pyg(batch, sparse=True)
    assert not hasattr(sparse, "edge_index") or getattr(sparse, "edge_index", None) is None
    adj_t, n = sparse.adj_t, batch.input_nodes.numel()
    assert adj_t.layout == torch.sparse_csr and adj_t.shape == (n, n)
    coo = adj_t.to_sparse_coo().coalesce()
    pairs = sorted(zip(view.edge_index[1].tolist(), view.edge_index[0].tolist()))
    assert sorted(map(tuple, coo.indices().t().tolist())) == pairs  # (target, source)
    assert bool((coo.values() == 1).all()) and coo.values().dtype == batch.x.dtype
    # targets in order, each node's edges one row; CSR's invariants hold (sorted columns)
    assert torch.equal(adj_t.crow_indices()[1:] - adj_t.crow_indices()[:-1],
                       torch.bincount(view.edge_index[1], minlength=n))
    torch._validate_sparse_csr_tensor_args(adj_t.crow_indices(), adj_t.col_indices(),
                                           adj_t.values(), adj_t.shape)
    with pytest.raises(TypeError, match="sparse must be a bool"):
        to_pyg(batch, sparse="yes")
    with pytest.raises(ValueError, match="num_nodes"):
        pyg_adj_t(batch.blocks, batch.seeds.numel() - 1)


def test_pyg_layers_give_the_same_rows_on_adj_t(batch) -> None:
    pyg_nn = pytest.importorskip("torch_geometric.nn")
    torch.manual_seed(0)
    conv = pyg_nn.SAGEConv(100, 16)
    view, sparse = to_pyg(batch), to_pyg(batch, sparse=True)
    assert torch.allclose(conv(view.x, view.edge_index), conv(sparse.x, sparse.adj_t),
                          atol=1e-5)
    assert model_logits(_PyGPair(conv), batch, "pyg-sparse").shape == (64, 16)


class _PyGPair(nn.Module):
    """One PyG layer called as model(x, edges)."""

    def __init__(self, conv: nn.Module) -> None:
        super().__init__()
        self.conv = conv

    def forward(self, x: torch.Tensor, edges) -> torch.Tensor:
        return self.conv(x, edges)


def test_pyg_layers_run_on_the_view(batch) -> None:
    pyg_nn = pytest.importorskip("torch_geometric.nn")

    class PyGSage(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.convs = nn.ModuleList([pyg_nn.SAGEConv(100, 16), pyg_nn.SAGEConv(16, 16),
                                        pyg_nn.GATConv(16, 47)])

        def forward(self, x, edge_index):
            for conv in self.convs:
                x = conv(x, edge_index)
            return x
    assert model_logits(PyGSage(), batch, "pyg").shape == (64, 47)


def test_dgl_view_runs_dgl_nn_layers(batch) -> None:
    require_dgl()
    from gnnrepro.baselines.dgl_import import import_dgl
    dgl = import_dgl()
    from dgl.nn.pytorch import GATConv, GraphConv, SAGEConv
    input_nodes, output_nodes, blocks = to_dgl(batch)
    assert torch.equal(input_nodes, batch.input_nodes) and torch.equal(output_nodes, batch.seeds)
    assert torch.equal(blocks[0].srcdata["feat"], batch.x)
    assert torch.equal(blocks[-1].dstdata["label"], batch.y)
    assert torch.equal(blocks[-1].dstdata[dgl.NID], batch.seeds)
    for ours, theirs in zip(batch.blocks, blocks):
        assert (theirs.num_src_nodes(), theirs.num_dst_nodes(), theirs.num_edges()) == \
            (ours.num_src, ours.num_dst, ours.num_edges)

    class DGLModel(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = nn.ModuleList([SAGEConv(100, 16, "mean"),
                                         GATConv(16, 8, num_heads=2, allow_zero_in_degree=True),
                                         GraphConv(16, 47, allow_zero_in_degree=True)])

        def forward(self, blocks, x):
            h = self.layers[0](blocks[0], x)
            h = self.layers[1](blocks[1], h).flatten(1)
            return self.layers[2](blocks[2], h)
    assert model_logits(DGLModel(), batch, "dgl").shape == (64, 47)


def test_a_model_in_the_wrong_layout_is_told_which_to_use(batch) -> None:
    sage = GraphSAGE(100, 16, 47, len(FANOUTS), 0.0)
    with pytest.raises(TypeError, match=r"model\(x, edge_index\).*for gnnrepro Blocks layout='blocks'"):
        model_logits(sage, batch, "pyg")
    with pytest.raises(ValueError, match="layout must be one of blocks, dgl, pyg"):
        model_logits(sage, batch, "dgl-blocks")

    class PerNode(nn.Module):  # a PyG-style model returns a row per node
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(100, 47)

        def forward(self, blocks, x):
            return self.lin(x)
    with pytest.raises(ValueError, match=r"not one row of logits per seed \(64\)"):
        model_logits(PerNode(), batch, "blocks")


def test_features_on_another_device_than_the_model(batch) -> None:
    model = GraphSAGE(100, 16, 47, len(FANOUTS), 0.0).to("meta")
    with pytest.raises(ValueError, match=r"features are on cpu but the model's weights are on "
                                         r"meta: move the model with model.to\(loader.device\)"):
        model_logits(model, batch, "blocks")


def test_a_loader_in_the_middle_of_an_epoch_refuses_a_second_thread(dataset) -> None:
    loader = Loader(dataset, FusedSampler(dataset.graph, FANOUTS, seed=0), "cpu", 64)
    epoch = iter(loader)
    next(epoch)
    errors: list[BaseException] = []

    def other() -> None:
        try:
            iter(loader)
        except RuntimeError as exc:
            errors.append(exc)
    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert len(errors) == 1 and "another thread" in str(errors[0])
    assert sum(1 for _ in epoch) == len(loader) - 1  # the first thread's epoch goes on
    loader.close()


def test_an_epoch_started_in_one_thread_and_taken_over_by_another_is_told(dataset) -> None:
    """Both threads call iter() before either iterates: the older iterator's first next()
    says another thread has the Loader, and the newer epoch runs whole."""
    loader = Loader(dataset, FusedSampler(dataset.graph, FANOUTS, seed=0), "cpu", 64)
    older = iter(loader)
    newer: list = []
    thread = threading.Thread(target=lambda: newer.append(iter(loader)))
    thread.start()
    thread.join()
    with pytest.raises(RuntimeError, match="in the middle of an epoch in another thread"):
        next(older)
    results: list[int] = []
    thread = threading.Thread(target=lambda: results.append(sum(1 for _ in newer[0])))
    thread.start()
    thread.join()
    assert results == [len(loader)]
    loader.close()


@pytest.mark.parametrize("layout", ["blocks", "pyg", "pyg-sparse", "dgl"])
def test_train_takes_the_callers_model(dataset, layout: str) -> None:
    if layout == "dgl":
        require_dgl()
    evaluator = FusedSampler(dataset.graph, FANOUTS, seed=0)
    if layout == "blocks":
        make = lambda: GraphSAGE(100, 32, 47, 3, 0.2)  # noqa: E731
    elif layout.startswith("pyg"):
        pyg_nn = pytest.importorskip("torch_geometric.nn")

        class PyGSage(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.convs = nn.ModuleList([pyg_nn.SAGEConv(100, 32), pyg_nn.SAGEConv(32, 32),
                                            pyg_nn.SAGEConv(32, 47)])

            def forward(self, x, edge_index):
                for i, conv in enumerate(self.convs):
                    x = conv(x, edge_index)
                    x = x.relu() if i < 2 else x
                return x
        make = PyGSage
    else:
        from gnnrepro.baselines.dgl_model import DGLGraphSAGE
        make = lambda: DGLGraphSAGE(100, 32, 47, 3, 0.2)  # noqa: E731
    results = []
    for _ in range(2):  # the same weights and batches give the same run
        torch.manual_seed(0)
        model = make()
        with Loader(dataset, FusedSampler(dataset.graph, FANOUTS, seed=0), "cpu", 64) as ld:
            results.append(train(dataset, ld, evaluator, epochs=2, model=model, layout=layout,
                                 lr=0.01))
    first, again = results
    assert first.losses == again.losses and first.losses[1] < first.losses[0]
    assert first.test_acc > 1.5 / dataset.num_classes  # learns something
    assert first.params["layout"] == layout and "(the caller's" in first.params["model"]
    # a model that exposes its layers (ours, DGL's example with forward_layer) is evaluated
    # as auto picks by cost; PyG's SAGE here has no forward_layer: sampled
    for split, method in first.params["eval_methods"].items():
        ids = getattr(dataset, f"{split}_idx")
        assert method == ("sampled" if layout.startswith("pyg") else
                          choose_eval_method("auto", model, evaluator, ids.numel())), split


def test_train_refuses_a_model_beside_an_architecture(dataset) -> None:
    evaluator = FusedSampler(dataset.graph, FANOUTS, seed=0)
    with Loader(dataset, FusedSampler(dataset.graph, FANOUTS, seed=0), "cpu", 64) as ld:
        with pytest.raises(ValueError, match="either model or architecture"):
            train(dataset, ld, evaluator, model=GraphSAGE(100, 8, 47, 3, 0.0),
                  architecture="dgl-sage")
        with pytest.raises(TypeError, match="model must be a torch.nn.Module"):
            train(dataset, ld, evaluator, model="graphsage")
        with pytest.raises(ValueError, match="layout='pyg' is for a caller's model"):
            train(dataset, ld, evaluator, layout="pyg")  # refused before any training


def test_from_pyg_and_from_dgl_keep_the_graph(dataset) -> None:
    from gnnrepro.interop import from_dgl, from_pyg
    g = dataset.graph
    dst = torch.repeat_interleave(torch.arange(g.num_nodes), g.in_degrees())
    src = g.indices.to(torch.int64)
    train_mask = torch.zeros(g.num_nodes, dtype=torch.bool)
    train_mask[dataset.train_idx] = True

    def same(converted) -> None:
        assert torch.equal(converted.graph.indptr, g.indptr)
        assert torch.equal(converted.graph.indices.to(torch.int64), src)
        assert torch.equal(converted.features, dataset.features)
        assert torch.equal(converted.labels, dataset.labels)
        assert torch.equal(converted.train_idx, dataset.train_idx)
        assert converted.num_classes == int(dataset.labels.max()) + 1

    pyg_data = pytest.importorskip("torch_geometric.data")
    data = pyg_data.Data(x=dataset.features, edge_index=torch.stack([src, dst]),
                         y=dataset.labels.unsqueeze(1), train_mask=train_mask)
    same(from_pyg(data))
    same(from_pyg(data, train_idx=dataset.train_idx))
    adj_t = torch.sparse_coo_tensor(torch.stack([dst, src]), torch.ones(src.numel()),
                                    (g.num_nodes, g.num_nodes))
    repeated = torch.sparse_coo_tensor(torch.stack([dst[:1].repeat(2), src[:1].repeat(2)]),
                                       torch.ones(2), (g.num_nodes, g.num_nodes))
    assert from_pyg(pyg_data.Data(x=dataset.features, adj_t=repeated, y=dataset.labels,
                                  train_mask=train_mask)).graph.num_edges == 2  # kept, as edges
    for given in (adj_t, adj_t.to_sparse_csr()):  # T.ToSparseTensor's graph, torch.sparse
        sparse = pyg_data.Data(x=dataset.features, adj_t=given, y=dataset.labels.unsqueeze(1),
                               train_mask=train_mask)
        converted = from_pyg(sparse)
        assert torch.equal(converted.graph.indptr, g.indptr)
        # coalescing orders each row's sources; the edges are the same
        for v in range(0, g.num_nodes, 97):
            lo, hi = int(g.indptr[v]), int(g.indptr[v + 1])
            assert sorted(converted.graph.indices[lo:hi].tolist()) == sorted(src[lo:hi].tolist())
    with pytest.raises(TypeError, match="edge_index"):
        from_pyg(object())
    with pytest.raises(ValueError, match="train mask has shape"):
        from_pyg(data, train_idx=torch.ones(3, dtype=torch.bool))
    require_dgl()
    from gnnrepro.baselines.dgl_import import import_dgl
    dgl = import_dgl()
    dg = dgl.graph((src, dst), num_nodes=g.num_nodes)
    dg.ndata["feat"], dg.ndata["label"] = dataset.features, dataset.labels
    same(from_dgl(dg, dataset.train_idx))
    with pytest.raises(ValueError, match="train_idx: give the training ids"):
        from_dgl(dg)
    with pytest.raises(TypeError, match="DGLGraph"):
        from_dgl(data)


def test_drop_in_loaders_take_the_peers_arguments(dataset) -> None:
    from gnnrepro.drop_in import DataLoader, NeighborLoader
    g = dataset.graph
    dst = torch.repeat_interleave(torch.arange(g.num_nodes), g.in_degrees())
    src = g.indices.to(torch.int64)
    pyg_data = pytest.importorskip("torch_geometric.data")
    data = pyg_data.Data(x=dataset.features, edge_index=torch.stack([src, dst]),
                         y=dataset.labels)
    with NeighborLoader(data, num_neighbors=[3, 4, 5], batch_size=64, shuffle=True,
                        num_workers=4, input_nodes=dataset.train_idx, threads=1) as loader:
        batches = list(loader)
        assert len(batches) == len(loader) == -(-dataset.train_idx.numel() // 64)
        first = batches[0]
        assert first.batch_size == 64 and first.x.shape[0] == first.n_id.numel()
        assert list(loader)[0].n_id.numel() != 0  # iterable epoch after epoch
    # The same batch as our loader's with fanouts input layer first (PyG's reversed).
    with Loader(dataset, FusedSampler(dataset.graph, [5, 4, 3], seed=0), "cpu", 64) as ours:
        mb = next(iter(ours))
    assert torch.equal(first.n_id, mb.input_nodes)
    assert torch.equal(first.edge_index, to_pyg(mb).edge_index)
    sparse_data = pyg_data.Data(x=dataset.features, y=dataset.labels,
                                adj_t=torch.sparse_coo_tensor(
                                    torch.stack([dst, src]), torch.ones(src.numel()),
                                    (g.num_nodes, g.num_nodes)).to_sparse_csr())
    with NeighborLoader(sparse_data, num_neighbors=[3, 4, 5], batch_size=64, shuffle=True,
                        input_nodes=dataset.train_idx, threads=1) as loader:
        sparse_first = next(iter(loader))  # PyG's: a graph given as adj_t comes as adj_t
    assert sparse_first.adj_t.layout == torch.sparse_csr
    assert torch.equal(sparse_first.n_id, first.n_id)
    with pytest.raises(TypeError, match="pin_memory: not settings of gnnrepro's loader"):
        NeighborLoader(data, num_neighbors=[3], input_nodes=dataset.train_idx, pin_memory=True)
    # PyG's defaults: every node is a seed, in order, unshuffled
    with NeighborLoader(data, num_neighbors=[3], batch_size=1000, threads=1) as loader:
        seeds = torch.cat([batch.n_id[:batch.batch_size] for batch in loader])
    assert torch.equal(seeds, torch.arange(g.num_nodes))
    require_dgl()
    from gnnrepro.baselines.dgl_import import import_dgl
    dgl = import_dgl()
    dg = dgl.graph((src, dst), num_nodes=g.num_nodes)
    dg.ndata["feat"], dg.ndata["label"] = dataset.features, dataset.labels
    with DataLoader(dg, dataset.train_idx, [5, 4, 3], batch_size=64, shuffle=True,
                    threads=1) as loader:
        input_nodes, output_nodes, blocks = next(iter(loader))
    assert torch.equal(input_nodes, mb.input_nodes) and torch.equal(output_nodes, mb.seeds)
    assert torch.equal(blocks[0].srcdata["feat"], dataset.features[input_nodes])
    assert torch.equal(blocks[-1].dstdata["label"], dataset.labels[output_nodes])
    assert torch.equal(blocks[0].srcdata[dgl.NID], input_nodes)
    # DGL's own sampler and DataLoader arguments, as DGL's example passes them
    sampler = dgl.dataloading.NeighborSampler([5, 4, 3], prefetch_node_feats=["feat"],
                                              prefetch_labels=["label"])
    with DataLoader(dg, dataset.train_idx, sampler, batch_size=64, shuffle=True,
                    drop_last=False, num_workers=0, use_uva=False, threads=1) as loader:
        assert torch.equal(next(iter(loader))[1], mb.seeds)
    full = dgl.dataloading.MultiLayerFullNeighborSampler(1)
    with DataLoader(dg, torch.arange(g.num_nodes), full, batch_size=1000,
                    threads=1) as loader:  # DGL's default shuffle=False: contiguous batches
        batches = list(loader)
    assert torch.equal(torch.cat([b[1] for b in batches]), torch.arange(g.num_nodes))
    assert all(b[2][0].num_edges() == int(g.in_degrees()[b[1]].sum()) for b in batches)
    with DataLoader(dg, dataset.train_idx, [5], batch_size=100, drop_last=True,
                    threads=1) as loader:
        assert len(loader) == dataset.train_idx.numel() // 100
    with pytest.raises(ValueError, match=r"NeighborSampler\(edge_dir='out'\)"):
        DataLoader(dg, dataset.train_idx, dgl.dataloading.NeighborSampler([3], edge_dir="out"))
    with pytest.raises(ValueError, match="use_uva=True samples on the GPU"):
        DataLoader(dg, dataset.train_idx, [3], device="cpu", use_uva=True)
    with pytest.raises(TypeError, match="sampler must be the fanouts"):
        DataLoader(dg, dataset.train_idx, object())
