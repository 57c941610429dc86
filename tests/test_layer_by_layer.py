"""Layer-wise inference for a caller's model that exposes its layers (`forward_layer`): in every
layout it computes what the model computes on all-neighbour blocks, chunk sizes bounded by
edges, and evaluation and train() pick it for such a model and say so."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from helpers import random_graph, require_dgl

from gnnrepro import CSCGraph
from gnnrepro.datasets import Dataset
from gnnrepro.features import InMemoryFeatureStore
from gnnrepro.interop import exposes_layers, layer_output, model_logits
from gnnrepro.pipeline import Loader
from gnnrepro.sampling import FusedSampler
from gnnrepro.training import accuracy, train
from gnnrepro.training import layer_by_layer
from gnnrepro.training.evaluate import choose_eval_method
from gnnrepro.training.layer_by_layer import full_neighbour_block, layer_by_layer_predict
from gnnrepro.training.layerwise import layerwise_cost, sampled_cost

pytestmark = pytest.mark.usefixtures("one_thread")
CPU = torch.device("cpu")


class BlockMean(nn.Module):
    """A caller's model on gnnrepro Blocks: per layer mean of in-neighbours plus self, ReLU
    between layers; max aggregation in the middle, so a layout mix-up shows."""

    def __init__(self, dims: list[int]):
        super().__init__()
        self.lins = nn.ModuleList(nn.Linear(2 * a, b) for a, b in zip(dims, dims[1:]))

    def forward_layer(self, i: int, block, h: torch.Tensor) -> torch.Tensor:
        dst = block.edge_dst()
        agg = torch.zeros(block.num_dst, h.shape[1]).index_reduce_(
            0, dst, h[block.indices], "mean" if i != 1 else "amax", include_self=False)
        out = self.lins[i](torch.cat([h[:block.num_dst], agg], 1))
        return out.relu() if i < len(self.lins) - 1 else out

    def forward(self, blocks, x):
        h = x
        for i, block in enumerate(blocks):
            h = self.forward_layer(i, block, h)
        return h


class EdgeIndexMean(nn.Module):
    """A caller's model in PyG's layout, x and edge_index (or adj_t), a row per node."""

    def __init__(self, dims: list[int]):
        super().__init__()
        self.lins = nn.ModuleList(nn.Linear(2 * a, b) for a, b in zip(dims, dims[1:]))

    def forward_layer(self, i: int, x: torch.Tensor, edges) -> torch.Tensor:
        if isinstance(edges, torch.Tensor) and edges.layout == torch.sparse_csr:
            degree = edges.crow_indices().diff().clamp(min=1).unsqueeze(1).to(x.dtype)
            agg = (edges @ x) / degree
        else:
            agg = torch.zeros_like(x).index_reduce_(0, edges[1], x[edges[0]], "mean",
                                                    include_self=False)
        out = self.lins[i](torch.cat([x, agg], 1))
        return out.relu() if i < len(self.lins) - 1 else out

    def forward(self, x, edges):
        for i in range(len(self.lins)):
            x = self.forward_layer(i, x, edges)
        return x


def _model(layout: str, dims: list[int]) -> nn.Module:
    torch.manual_seed(5)
    if layout == "blocks":
        return BlockMean(dims)
    if layout == "dgl":
        require_dgl()
        from gnnrepro.baselines.dgl_model import DGLGraphSAGE
        return DGLGraphSAGE(dims[0], dims[1], dims[-1], len(dims) - 1, dropout=0.5)
    return EdgeIndexMean(dims)


def _all_neighbour_logits(model: nn.Module, graph: CSCGraph, x: torch.Tensor,
                          nodes: torch.Tensor, layers: int, layout: str) -> torch.Tensor:
    """The model on one batch of all-neighbour blocks: what layer-wise must equal."""
    mb = FusedSampler(graph, [-1] * layers, seed=0).sample(nodes)
    mb.x, mb.y = x[mb.input_nodes], torch.zeros(nodes.numel(), dtype=torch.int64)
    model.eval()
    with torch.no_grad():
        return model_logits(model, mb, layout)


@pytest.mark.parametrize("layout", ["blocks", "pyg", "pyg-sparse", "dgl"])
@pytest.mark.parametrize("small_chunks", [False, True])
def test_layer_by_layer_equals_the_model_on_all_neighbour_blocks(
        graph: CSCGraph, layout: str, small_chunks: bool, monkeypatch) -> None:
    if small_chunks:  # many chunks, some of one node with more in-edges than the bound
        monkeypatch.setattr(layer_by_layer, "CHUNK_EDGES", 7)
    dims = [6, 16, 12, 4]
    x = torch.randn(graph.num_nodes, dims[0], generator=torch.Generator().manual_seed(0))
    model = _model(layout, dims)
    model.train()
    targets = torch.tensor([graph.num_nodes - 1, 5, 0, 17, 5, 300])  # unsorted, a repeat,
    # and an isolated node (the last: the top 5% of ids have no in-edges)
    nodes, logits = layer_by_layer_predict(model, graph, x, targets, CPU, layout, 3)
    assert torch.equal(nodes, torch.unique(targets))
    assert model.training  # left as it was found (eval mode inside: no dropout)
    expected = _all_neighbour_logits(model, graph, x, nodes, 3, layout)
    torch.testing.assert_close(logits, expected, rtol=1e-4, atol=1e-5)


def test_layer_by_layer_reads_rows_through_a_store(graph: CSCGraph) -> None:
    from test_layerwise import _CountingStore  # a store that is not the in-memory one
    x = torch.randn(graph.num_nodes, 6, generator=torch.Generator().manual_seed(1))
    model = _model("blocks", [6, 8, 3])
    targets = torch.arange(0, graph.num_nodes, 7)
    from_table = layer_by_layer_predict(model, graph, x, targets, CPU, "blocks", 2)[1]
    store = _CountingStore(x)
    from_store = layer_by_layer_predict(model, graph, store, targets, CPU, "blocks", 2)[1]
    assert torch.equal(from_table, from_store) and store.rows_gathered > 0
    in_memory = layer_by_layer_predict(model, graph, InMemoryFeatureStore(x), targets, CPU,
                                       "blocks", 2)[1]
    assert torch.equal(from_table, in_memory)


def test_full_neighbour_block_puts_the_destinations_first(graph: CSCGraph) -> None:
    chunk = torch.tensor([2, 9, 40, 41, 500])
    block = full_neighbour_block(graph, chunk)
    assert block.num_dst == 5 and torch.equal(block.src_nodes[:5], chunk)
    assert block.src_nodes.unique().numel() == block.num_src  # every source once
    for d, v in enumerate(chunk.tolist()):
        want = graph.indices[graph.indptr[v]:graph.indptr[v + 1]].long()
        got = block.src_nodes[block.indices[block.indptr[d]:block.indptr[d + 1]]]
        assert torch.equal(got, want)  # all in-edges, in the graph's order


def test_chunks_respect_the_edge_bound(monkeypatch) -> None:
    graph = random_graph(300, 4000, power_law=True, seed=2)
    monkeypatch.setattr(layer_by_layer, "CHUNK_EDGES", 50)
    nodes = torch.arange(graph.num_nodes)
    chunks = list(layer_by_layer._edge_chunks(graph, nodes))
    assert torch.equal(torch.cat(chunks), nodes)
    degrees = graph.in_degrees()
    for chunk in chunks:
        assert chunk.numel() == 1 or int(degrees[chunk].sum()) <= 50
    assert list(layer_by_layer._edge_chunks(graph, nodes[:0])) == []


def test_a_model_without_forward_layer_is_evaluated_sampled(graph: CSCGraph) -> None:
    class Plain(nn.Module):
        def forward(self, blocks, x):
            return x[:blocks[-1].num_dst]
    sampler = FusedSampler(graph, [15, 10, 5], seed=0)
    assert not exposes_layers(Plain()) and exposes_layers(BlockMean([4, 3]))
    assert choose_eval_method("auto", Plain(), sampler, graph.num_nodes) == "sampled"
    with pytest.raises(TypeError, match="needs a GraphSAGE model or one with forward_layer"):
        choose_eval_method("layerwise", Plain(), sampler, 10)
    with pytest.raises(TypeError, match="forward_layer"):
        layer_by_layer_predict(Plain(), graph, torch.randn(graph.num_nodes, 4),
                               torch.tensor([0]), CPU, "blocks", 3)


def test_a_layer_that_fails_or_returns_the_wrong_rows_is_named(graph: CSCGraph) -> None:
    block = full_neighbour_block(graph, torch.tensor([1, 2, 3]))
    h = torch.randn(block.num_src, 6)
    with pytest.raises(TypeError, match=r"layer 0 failed when called as "
                                        r"model.forward_layer\(i, h, edge_index\)"):
        layer_output(BlockMean([6, 4]), 0, block, h, "pyg")  # a Blocks model given PyG's

    class AllRows(BlockMean):
        def forward_layer(self, i, block, h):
            return h
    with pytest.raises(ValueError, match=r"layer 0 returned .* not one row per destination"):
        layer_output(AllRows([6, 4]), 0, block, h, "blocks")


def test_auto_evaluates_a_callers_model_layerwise_for_a_large_split(dataset: Dataset) -> None:
    sampler = FusedSampler(dataset.graph, [10, 10], seed=0)
    model = _model("blocks", [dataset.num_features, 16, dataset.num_classes])
    graph, ids = dataset.graph, dataset.test_idx
    # layer-wise reads every edge twice; sampled about 110 edges a seed, at 2.4x the cost
    assert layerwise_cost(graph, 2) < sampled_cost(graph, [10, 10], ids.numel())
    assert choose_eval_method("auto", model, sampler, ids.numel()) == "layerwise"
    assert choose_eval_method("auto", model, sampler, 5) == "sampled"
    # exact, so equal to sampling every neighbour (float ties at most)
    full = FusedSampler(dataset.graph, [-1, -1], seed=0)
    accs = [accuracy(model, dataset, full, ids, CPU, 97, method=m)
            for m in ("sampled", "layerwise")]
    assert accs[0] == pytest.approx(accs[1], abs=1.0 / ids.numel())


@pytest.mark.parametrize("layout", ["blocks", "pyg"])
def test_train_evaluates_a_callers_model_layerwise(dataset: Dataset, layout: str) -> None:
    evaluator = FusedSampler(dataset.graph, [4, 3], seed=0)
    model = _model(layout, [dataset.num_features, 16, dataset.num_classes])
    with Loader(dataset, FusedSampler(dataset.graph, [4, 3], seed=0), "cpu", 64) as loader:
        result = train(dataset, loader, evaluator, epochs=2, model=model, layout=layout,
                       eval_method="layerwise", lr=0.01)
    assert result.params["eval_methods"] == {"val": "layerwise", "test": "layerwise"}
    assert result.test_acc > 1.5 / dataset.num_classes  # learns something
    again = accuracy(model, dataset, evaluator, dataset.test_idx, CPU, 512,
                     method="layerwise", layout=layout)
    assert again == result.test_acc  # the trained weights, scored the same way


def _rank_predicts(rank: int, init: str, targets: torch.Tensor, out: str) -> None:
    """One of two gloo ranks: its share of layer-by-layer inference, saved to `out`."""
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=2)
    try:
        graph = random_graph(600, 6000, power_law=True, seed=1)
        x = torch.randn(graph.num_nodes, 6, generator=torch.Generator().manual_seed(0))
        nodes, logits = layer_by_layer_predict(_model("blocks", [6, 16, 12, 4]), graph, x,
                                               targets, CPU, "blocks", 3, rank, 2)
        torch.save((nodes, logits), f"{out}.{rank}")
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("targets", [[5, 0, 17, 300, 599], [17]])  # [17]: rank 0 gets none
def test_two_ranks_share_every_layer_and_equal_one_process(tmp_path, targets) -> None:
    import torch.multiprocessing as mp
    targets = torch.tensor(targets)
    out = str(tmp_path / "share")
    mp.spawn(_rank_predicts, args=(f"file://{tmp_path / 'init'}", targets, out), nprocs=2)
    shares = [torch.load(f"{out}.{rank}") for rank in range(2)]
    graph = random_graph(600, 6000, power_law=True, seed=1)
    x = torch.randn(graph.num_nodes, 6, generator=torch.Generator().manual_seed(0))
    nodes, logits = layer_by_layer_predict(_model("blocks", [6, 16, 12, 4]), graph, x,
                                           targets, CPU, "blocks", 3)
    assert torch.equal(torch.cat([s[0] for s in shares]), nodes)
    torch.testing.assert_close(torch.cat([s[1] for s in shares]), logits)
