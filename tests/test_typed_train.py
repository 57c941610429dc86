"""train() on a typed dataset: the one loop trains R-GCN and R-GAT from the one Loader, with
sampled evaluation, featureless types learnt by SparseAdam, and checkpoints that resume to
the uninterrupted run's weights bit for bit."""
from __future__ import annotations

import pytest
import torch

from gnnrepro.baselines.dgl_import import dgl_available
from gnnrepro.datasets.typed_dataset import TypedDataset
from gnnrepro.pipeline import Loader
from gnnrepro.sampling import FusedSampler
from gnnrepro.training.loop import build_model, train
from gnnrepro.training.resume import Checkpointing
from typed_helpers import Planted


@pytest.fixture(scope="module")
def planted() -> TypedDataset:
    """The planted task (labels only through `writes`), authors featureless: their learnt
    embeddings must carry the class."""
    p = Planted(seed=0)
    return TypedDataset(p.graph, {"paper": p.features["paper"]}, p.labels, "paper",
                        p.train_idx[:260], p.train_idx[260:], p.test_idx, p.num_classes,
                        "planted")


def _run(data: TypedDataset, architecture: str, epochs: int, **kw) -> object:
    sampler = FusedSampler(data.graph, [-1, -1], seed=1)
    with Loader(data, sampler, "cpu", 32, seed=2) as loader:
        return train(data, loader, sampler, epochs=epochs, hidden=16, lr=0.02, dropout=0.0,
                     architecture=architecture, eval_method="auto", **kw)


@pytest.mark.parametrize("architecture", ["rgcn", "rgat"])
def test_the_loop_trains_typed_models_past_the_features_alone(planted, architecture) -> None:
    result = _run(planted, architecture, epochs=8)
    assert result.params["optimizer"] == "Adam+SparseAdam"  # the authors' embeddings
    assert result.params["eval_methods"] == {"val": "layerwise", "test": "layerwise"}  # auto
    assert result.losses[-1] < result.losses[0]
    # an MLP on the papers' features gets ~0.25 (Planted.mlp_accuracy, tests/test_rgcn.py)
    assert result.test_acc > 0.5, result.test_acc


def test_a_typed_run_resumes_bit_for_bit(planted, tmp_path) -> None:
    whole = _run(planted, "rgcn", epochs=2)
    _run(planted, "rgcn", epochs=1, checkpointing=Checkpointing(tmp_path, every=3))
    resumed = _run(planted, "rgcn", epochs=2,
                   checkpointing=Checkpointing(tmp_path, every=3, resume=True))
    assert resumed.params["checkpoint"]["resumed_at_step"] > 0
    assert whole.losses == resumed.losses and whole.test_acc == resumed.test_acc
    for key, value in whole.state.items():
        assert torch.equal(value, resumed.state[key]), key


def test_models_and_datasets_must_match(planted, dataset) -> None:
    with pytest.raises(ValueError, match="typed ones take rgcn, rgat"):
        build_model(planted, 2, 16, 0.0, 0, torch.device("cpu"), "graphsage")
    with pytest.raises(ValueError, match="homogeneous ones take graphsage"):
        build_model(dataset, 2, 16, 0.0, 0, torch.device("cpu"), "rgcn")


@pytest.mark.parametrize("architecture", ["rgcn", "rgat"])
def test_typed_layerwise_equals_full_neighbour_batches(planted, architecture) -> None:
    """Layer-wise inference (each layer once per needed node of every type) gives the logits
    of sampled evaluation at fanout -1 on every relation: the same model, computed exactly."""
    from gnnrepro.training.typed_layer_by_layer import typed_layer_by_layer_predict
    torch.manual_seed(0)
    model = build_model(planted, 2, 16, 0.0, 0, torch.device("cpu"), architecture).eval()
    ids = torch.tensor([5, 3, 399, 120, 5])
    nodes, logits = typed_layer_by_layer_predict(model, planted.graph, planted.features, ids,
                                                 torch.device("cpu"), 2)
    assert torch.equal(nodes, torch.tensor([3, 5, 120, 399]))
    batch = FusedSampler(planted.graph, [-1, -1]).sample({"paper": nodes})
    x = {t: f[batch.input_nodes[t]] for t, f in planted.features.items()}
    with torch.no_grad():
        want = model(batch.blocks, x)
    torch.testing.assert_close(logits, want, rtol=1e-5, atol=1e-6)


def test_auto_picks_layerwise_for_a_large_typed_split(planted) -> None:
    from gnnrepro.training.evaluate import choose_eval_method
    model = build_model(planted, 2, 16, 0.0, 0, torch.device("cpu"), "rgcn")
    sampler = FusedSampler(planted.graph, [10, 10])
    assert choose_eval_method("auto", model, sampler, 400) == "layerwise"
    assert choose_eval_method("auto", model, sampler, 1) == "sampled"
    mlp = torch.nn.Linear(2, 2)
    with pytest.raises(TypeError, match="eval_method='layerwise' needs"):
        choose_eval_method("layerwise", mlp, sampler, 10)


@pytest.mark.skipif(not dgl_available(), reason="DGL is not installed")
def test_dgls_loader_feeds_the_same_typed_model(planted) -> None:
    """DGL's DataLoader on the heterograph (per-relation fanouts, its own feature slicing)
    as a BatchSource: its batches are typed MiniBatches the same R-GCN trains on."""
    from gnnrepro.baselines.dgl_loader import DGLLoader
    sampler = FusedSampler(planted.graph, [-1, -1], seed=1)
    with DGLLoader(planted, [-1, -1], "cpu", 32, seed=2) as loader:
        batch = next(iter(loader))
        assert set(batch.x) == {"paper"}
        assert torch.equal(batch.x["paper"], planted.features["paper"][batch.input_nodes["paper"]])
        assert torch.equal(batch.y, planted.labels[batch.seeds["paper"]])
        result = train(planted, loader, sampler, epochs=8, hidden=16, lr=0.02, dropout=0.0,
                       architecture="rgcn")
    assert result.test_acc > 0.5, result.test_acc
