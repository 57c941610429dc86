"""Layer-wise full-neighbour inference: it computes what the model computes on all-neighbour
blocks, for exactly the nodes each layer needs; evaluation picks the cheaper method by name or
by cost, says which it used, and refuses what it cannot run."""
from __future__ import annotations

import contextlib
import dataclasses

import pytest
import torch

from helpers import random_graph

from gnnrepro import CSCGraph
from gnnrepro.datasets import Dataset
from gnnrepro.feature_file import write_feature_file
from gnnrepro.features import DiskFeatureStore, FeatureStore, InMemoryFeatureStore
from gnnrepro.models import MLP, GraphSAGE
from gnnrepro.pipeline import Loader
from gnnrepro.sampling import FusedSampler
from gnnrepro.training import accuracy, train
from gnnrepro.training.evaluate import choose_eval_method
from gnnrepro.training.layerwise import layerwise_predict, needed_nodes

pytestmark = pytest.mark.usefixtures("one_thread")


def _model(in_dim: int, hidden: int, out_dim: int, layers: int) -> GraphSAGE:
    torch.manual_seed(3)
    return GraphSAGE(in_dim, hidden, out_dim, layers, dropout=0.5)


@pytest.mark.parametrize("in_dim,hidden,out_dim,layers", [
    (8, 32, 5, 3),    # mean first, mean first, W_neigh first (32 -> 5)
    (40, 16, 24, 2),  # W_neigh first (40 -> 16), then mean first (16 -> 24)
    (6, 6, 3, 1),     # one layer: the targets' own neighbours only
])
def test_layerwise_equals_the_model_on_all_neighbour_blocks(graph: CSCGraph, in_dim, hidden,
                                                            out_dim, layers) -> None:
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(graph.num_nodes, in_dim, generator=gen)
    model = _model(in_dim, hidden, out_dim, layers)
    targets = torch.tensor([graph.num_nodes - 1, 5, 0, 17, 5, 300])  # unsorted, a repeat,
    # and an isolated node (the top 5% of ids have no in-edges)
    nodes, logits = layerwise_predict(model, graph, x, targets, torch.device("cpu"))
    assert torch.equal(nodes, torch.unique(targets))
    mb = FusedSampler(graph, [-1] * layers, seed=0).sample(nodes)
    model.eval()
    with torch.no_grad():
        expected = model(mb.blocks, x[mb.input_nodes])
    torch.testing.assert_close(logits, expected, rtol=1e-5, atol=1e-5)
    assert model.training is False  # left as it was found
    model.train()
    layerwise_predict(model, graph, x, targets, torch.device("cpu"))
    assert model.training


def test_needed_nodes_are_the_targets_grown_by_in_neighbours(graph: CSCGraph) -> None:
    targets = torch.tensor([3, 44, 44, 590])
    sets = needed_nodes(graph, targets, 3)
    assert torch.equal(sets[-1], torch.tensor([3, 44, 590]))
    indptr, indices = graph.indptr.tolist(), graph.indices.tolist()
    for later, earlier in zip(sets[1:], sets[:-1]):
        grown = set(later.tolist())
        for v in later.tolist():
            grown.update(indices[indptr[v]:indptr[v + 1]])
        assert earlier.tolist() == sorted(grown)


def test_layerwise_handles_no_targets(graph: CSCGraph) -> None:
    x = torch.randn(graph.num_nodes, 4)
    nodes, logits = layerwise_predict(_model(4, 8, 3, 2), graph, x,
                                      torch.zeros(0, dtype=torch.int64), torch.device("cpu"))
    assert nodes.numel() == 0 and logits.shape == (0, 3)


def test_duplicate_ids_count_as_often_as_given_by_either_method(dataset: Dataset) -> None:
    sampler = FusedSampler(dataset.graph, [-1, -1], seed=0)
    model = _model(dataset.num_features, 16, dataset.num_classes, 2)
    ids = torch.cat([dataset.test_idx[:50]] * 3 + [dataset.test_idx[50:80]])  # batches of 50
    accs = [accuracy(model, dataset, sampler, ids, torch.device("cpu"), 50, method=method)
            for method in ("sampled", "layerwise")]
    assert accs[0] == pytest.approx(accs[1], abs=1.0 / ids.numel())


@pytest.mark.parametrize("bad", [[-1], [10**6], [0, -600]])
def test_layerwise_rejects_ids_outside_the_graph(graph: CSCGraph, bad) -> None:
    with pytest.raises(ValueError, match="targets must lie in"):
        layerwise_predict(_model(4, 8, 3, 2), graph, torch.randn(graph.num_nodes, 4),
                          torch.tensor(bad), torch.device("cpu"))


def test_layerwise_refuses_what_it_cannot_run(graph: CSCGraph) -> None:
    with pytest.raises(ValueError, match="features must have one row per node"):
        layerwise_predict(_model(4, 8, 3, 2), graph, torch.randn(5, 4), torch.tensor([0]),
                          torch.device("cpu"))
    with pytest.raises(TypeError, match="model must be a GraphSAGE"):
        layerwise_predict(MLP(4, 8, 3), graph, torch.randn(graph.num_nodes, 4),
                          torch.tensor([0]), torch.device("cpu"))


def test_auto_picks_the_method_that_reads_fewer_edges() -> None:
    graph = random_graph(2000, 60000, power_law=False, seed=0)  # mean degree ~30
    sampler = FusedSampler(graph, [15, 10, 5], seed=0)
    model = _model(4, 8, 3, 3)
    # layer-wise reads 3 x 60k edges; sampled about 5 + 50 + 750 per seed, each 2.4x the cost
    assert choose_eval_method("auto", model, sampler, 2000) == "layerwise"
    assert choose_eval_method("auto", model, sampler, 100) == "layerwise"  # 80k edges x 2.4
    assert choose_eval_method("auto", model, sampler, 20) == "sampled"
    assert choose_eval_method("sampled", model, sampler, 2000) == "sampled"
    assert choose_eval_method("auto", MLP(4, 8, 3), sampler, 2000) == "sampled"
    with pytest.raises(ValueError, match="eval_method must be one of"):
        choose_eval_method("exact", model, sampler, 10)
    with pytest.raises(TypeError, match="eval_method='layerwise' needs a GraphSAGE"):
        choose_eval_method("layerwise", MLP(4, 8, 3), sampler, 10)


def test_accuracy_by_both_methods_agree_with_all_neighbours(dataset: Dataset) -> None:
    sampler = FusedSampler(dataset.graph, [-1, -1], seed=0)
    model = _model(dataset.num_features, 16, dataset.num_classes, 2)
    ids = dataset.test_idx
    by_blocks = accuracy(model, dataset, sampler, ids, torch.device("cpu"), 97,
                         method="sampled")
    layerwise = accuracy(model, dataset, sampler, ids, torch.device("cpu"), 97,
                         method="layerwise")
    assert layerwise == pytest.approx(by_blocks, abs=1.0 / ids.numel())  # float ties at most


def test_train_says_which_method_each_split_used(dataset: Dataset) -> None:
    sampler = FusedSampler(dataset.graph, [4, 3], seed=0)
    results = {}
    for method in ("layerwise", "sampled"):
        with contextlib.closing(Loader(dataset, sampler, "cpu", 64, seed=0)) as loader:
            results[method] = train(dataset, loader, sampler, epochs=1, hidden=16, seed=0,
                                    eval_method=method)
        assert results[method].params["eval_methods"] == {"val": method, "test": method}
        assert results[method].params["eval_method"] == method
    # the same trained weights: the two methods differ only in the blocks they evaluate on
    for name, value in results["layerwise"].state.items():
        assert torch.equal(value, results["sampled"].state[name])
    with contextlib.closing(Loader(dataset, sampler, "cpu", 64, seed=0)) as loader:
        with pytest.raises(ValueError, match="eval_method must be one of"):
            train(dataset, loader, sampler, epochs=1, eval_method="exact")


class _CountingStore(FeatureStore):
    """The real rows behind a store that is not the in-memory one (so nothing reads its table
    directly), counting the rows gathered."""

    thread_use = "share"

    def __init__(self, rows: torch.Tensor):
        self.rows = InMemoryFeatureStore(rows.clone(), share=False, pin=False)
        self.rows_gathered = 0
        self.num_nodes, self.dim, self.dtype = rows.shape[0], rows.shape[1], rows.dtype

    num_nodes = dim = dtype = None  # set per object

    def nbytes(self) -> int:
        return self.rows.nbytes()

    def gather(self, ids, out=None):
        self.rows_gathered += len(ids)
        return self.rows.gather(ids, out)


@pytest.mark.parametrize("method", ["sampled", "layerwise"])
def test_evaluation_reads_rows_through_the_store(dataset: Dataset, tmp_path, method) -> None:
    sampler = FusedSampler(dataset.graph, [4, 3], seed=0)
    model = _model(dataset.num_features, 16, dataset.num_classes, 2)
    ids, cpu = dataset.test_idx, torch.device("cpu")
    expected = accuracy(model, dataset, sampler, ids, cpu, 97, method=method)
    # a disk store over a file of the same rows gives the same accuracy ...
    disk = DiskFeatureStore(write_feature_file(tmp_path / "f.gnnf", dataset.features).path,
                            cache_bytes=1 << 16, direct=False)
    assert accuracy(model, dataset, sampler, ids, cpu, 97, method=method,
                    store=disk) == expected
    disk.close()
    # ... and the rows really come from the store: the dataset's own table is not read
    blank = dataclasses.replace(dataset, features=torch.zeros_like(dataset.features))
    store = _CountingStore(dataset.features)
    assert accuracy(model, blank, sampler, ids, cpu, 97, method=method,
                    store=store) == expected
    assert store.rows_gathered > 0


def test_train_evaluates_through_the_loaders_store(dataset: Dataset) -> None:
    sampler = FusedSampler(dataset.graph, [4, 3], seed=0)
    blank = dataclasses.replace(dataset, features=torch.zeros_like(dataset.features))
    results = []
    for data, store in ((dataset, None), (blank, _CountingStore(dataset.features))):
        with contextlib.closing(Loader(data, sampler, "cpu", 256, seed=0,
                                       feature_store=store)) as loader:
            results.append(train(data, loader, sampler, epochs=1, hidden=16, seed=0,
                                 eval_method="sampled"))
    # the same batches and rows (from the store), so the same weights and accuracies; had
    # evaluation read `blank`'s zeros, the accuracies would differ
    for name, value in results[0].state.items():
        assert torch.equal(value, results[1].state[name])
    assert (results[1].val_acc, results[1].test_acc) == (results[0].val_acc,
                                                         results[0].test_acc)
