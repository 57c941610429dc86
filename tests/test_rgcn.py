"""R-GCN on TypedBlocks and the learnable embeddings of featureless node types: shapes, where
gradients go, empty relations, layer-by-layer = forward, sparse updates, checkpoints,
determinism, bad input, and that it learns what only a relation reveals."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from typed_helpers import (CITES, FEATURE_DIMS, FEATURELESS, HOSTS, NUM_NODES, REV_AFFIL,
                           REV_WRITES, WRITES, Planted, inputs, typed_graph)

from gnnrepro.models import NodeEmbeddings, OptimizerGroup, RGCN, make_optimizers
from gnnrepro.models.typed_model import relation_key
from gnnrepro.sampling import FusedSampler
from gnnrepro.sampling.block import TypedBlock

pytestmark = pytest.mark.usefixtures("one_thread")

SEEDS = {"paper": torch.tensor([0, 1, 2, 3, 5, 8, 13, 21, 34, 55])}


@pytest.fixture(scope="module")
def data():
    return typed_graph(seed=0)


def make_rgcn(graph, seed: int = 0, **kwargs) -> RGCN:
    torch.manual_seed(seed)
    kwargs = {"hidden": 8, "out_dim": 3, "dropout": 0.0, **kwargs}
    return RGCN(graph.canonical_relations, FEATURE_DIMS,
                embeddings=NodeEmbeddings(FEATURELESS, 4), **kwargs)


def test_output_shapes_and_layer_outputs(data) -> None:
    graph, features = data
    batch = FusedSampler(graph, [4, 3], seed=1).sample(SEEDS)
    model = make_rgcn(graph)
    x = inputs(batch, features)
    assert model(batch.blocks, x).shape == (10, 3)
    h = model.layer_inputs(batch.input_nodes, x)
    assert {t: tuple(v.shape) for t, v in h.items()} == {
        t: (batch.input_nodes[t].numel(), 4 if t in FEATURELESS else FEATURE_DIMS[t])
        for t in NUM_NODES}
    for i, block in enumerate(batch.blocks):
        h = model.forward_layer(i, block, h)
        assert {t: tuple(v.shape) for t, v in h.items()} == {
            t: (block.num_dst[t], 8 if i == 0 else 3) for t in NUM_NODES}


def test_gradients_reach_every_relation_with_edges(data) -> None:
    graph, features = data
    batch = FusedSampler(graph, [5, 5], seed=2).sample(SEEDS)
    model = make_rgcn(graph)
    model(batch.blocks, inputs(batch, features)).square().sum().backward()
    for i, (layer, block) in enumerate(zip(model.layers, batch.blocks)):
        for rel in graph.canonical_relations:
            grad = layer.rel[relation_key(rel)].weight.grad
            has_edges = block.blocks[rel].num_edges > 0
            assert (grad is not None and bool(grad.abs().sum() > 0)) == has_edges, (i, rel)
    # Not vacuous: layer 0 has edges of every relation into papers and authors, the last layer
    # none into authors (no author is a seed), and `hosts` none anywhere.
    assert [rel for rel in graph.canonical_relations if batch.blocks[0].blocks[rel].num_edges] == [
        WRITES, REV_WRITES, CITES, REV_AFFIL]
    assert batch.blocks[1].blocks[REV_WRITES].num_edges == 0


def test_a_relation_without_edges_adds_nothing(data) -> None:
    graph, features = data
    batch = FusedSampler(graph, [4, 4], seed=3).sample(SEEDS)
    model = make_rgcn(graph).eval()
    x = inputs(batch, features)
    before = model(batch.blocks, x)
    with torch.no_grad():
        for layer in model.layers:  # the edgeless relation's weights: anything
            layer.rel[relation_key(HOSTS)].weight.fill_(1e3)
    torch.testing.assert_close(model(batch.blocks, x), before, rtol=0, atol=0)
    # A batch whose every relation is empty: only the root terms, no crash.
    empty = FusedSampler(graph, [0, 0], seed=3).sample(SEEDS)
    out = model(empty.blocks, inputs(empty, features))
    assert out.shape == (10, 3) and bool(torch.isfinite(out).all())


def test_layer_by_layer_over_full_neighbourhoods_equals_forward(data) -> None:
    """Layer 0 for every node of every type, then layer 1 for the seeds reading layer 0's
    table by id (what layer-wise evaluation does) = forward on full-neighbour blocks."""
    graph, features = data
    model = make_rgcn(graph, dropout=0.5).eval()
    full = FusedSampler(graph, [-1, -1], seed=0).sample(SEEDS)
    want = model(full.blocks, inputs(full, features))
    every = {t: torch.arange(n) for t, n in NUM_NODES.items()}
    layer0 = FusedSampler(graph, [-1], seed=0).sample(every)
    block0 = layer0.blocks[0]
    table = model.forward_layer(0, block0, model.layer_inputs(block0.src_nodes,
                                                              inputs(layer0, features)))
    assert all(torch.equal(block0.src_nodes[t][:block0.num_dst[t]], every[t]) for t in NUM_NODES)
    block1 = FusedSampler(graph, [-1], seed=0).sample(SEEDS).blocks[0]
    h1 = {t: table[t][block1.src_nodes[t]] for t in NUM_NODES}
    got = model.forward_layer(1, block1, h1)["paper"]
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_embeddings_get_sparse_gradients_and_only_looked_up_rows_move(data) -> None:
    graph, features = data
    model = make_rgcn(graph)
    optimizer = make_optimizers(model, lr=0.01)
    assert [type(o).__name__ for o in optimizer.optimizers] == ["Adam", "SparseAdam"]
    table = model.embeddings.tables["inst"].weight
    assert optimizer.optimizers[1].param_groups[0]["params"] == [
        model.embeddings.tables[t].weight for t in FEATURELESS]
    batch = FusedSampler(graph, [4, 4], seed=4).sample(SEEDS)
    looked_up = batch.input_nodes["inst"]
    assert 0 < looked_up.numel() < NUM_NODES["inst"]
    before = table.detach().clone()
    optimizer.zero_grad()
    model(batch.blocks, inputs(batch, features)).sum().backward()
    assert table.grad.is_sparse
    assert set(table.grad.coalesce().indices()[0].tolist()) == set(looked_up.tolist())
    optimizer.step()
    moved = (table.detach() != before).any(1)
    assert set(moved.nonzero().squeeze(1).tolist()) == set(looked_up.tolist())


def test_checkpoints_carry_the_embeddings_and_both_optimizers(data) -> None:
    graph, features = data
    batch = FusedSampler(graph, [4, 4], seed=5).sample(SEEDS)
    model = make_rgcn(graph, seed=1)
    optimizer = make_optimizers(model, lr=0.01)
    for _ in range(2):
        optimizer.zero_grad()
        model(batch.blocks, inputs(batch, features)).sum().backward()
        optimizer.step()
    state = model.state_dict()
    assert set(state) >= {"embeddings.tables.inst.weight", "embeddings.tables.venue.weight"}
    restored = make_rgcn(graph, seed=2)
    restored.load_state_dict(state)
    model.eval()
    restored.eval()
    x = inputs(batch, features)
    torch.testing.assert_close(restored(batch.blocks, x), model(batch.blocks, x))
    again = make_optimizers(restored, lr=0.01)
    again.load_state_dict(optimizer.state_dict())
    assert again.optimizers[1].state_dict()["state"].keys() == \
        optimizer.optimizers[1].state_dict()["state"].keys()
    with pytest.raises(ValueError, match="2 optimizer states"):
        again.load_state_dict({"optimizers": []})
    with pytest.raises(TypeError, match="non-empty list of torch optimizers"):
        OptimizerGroup([])


def test_seeded_runs_are_identical(data) -> None:
    graph, features = data

    def run() -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        model = make_rgcn(graph, seed=7, dropout=0.5)
        optimizer = make_optimizers(model, lr=0.01)
        sampler = FusedSampler(graph, [3, 3], seed=7)
        torch.manual_seed(11)  # the dropout stream
        for step in range(3):
            batch = sampler.sample(SEEDS, batch_id=step)
            loss = model(batch.blocks, inputs(batch, features)).logsumexp(1).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        return loss.detach(), model.state_dict()

    (loss_a, state_a), (loss_b, state_b) = run(), run()
    assert torch.equal(loss_a, loss_b)
    assert all(torch.equal(state_a[k], state_b[k]) for k in state_a)


def test_bad_input_names_what_is_wrong(data) -> None:
    graph, features = data
    rels = graph.canonical_relations
    batch = FusedSampler(graph, [2, 2], seed=0).sample(SEEDS)
    model = make_rgcn(graph)
    x = inputs(batch, features)
    block = batch.blocks[0]
    without = TypedBlock({r: b for r, b in block.blocks.items() if r != CITES},
                         block.src_nodes, block.num_dst)
    with pytest.raises(ValueError, match=r"no relation \('paper', 'cites', 'paper'\), which the "
                                         r"model was built for"):
        model([without, batch.blocks[1]], x)
    small = RGCN(rels[:-1], FEATURE_DIMS, embeddings=NodeEmbeddings({"inst": 40}, 4))
    with pytest.raises(ValueError, match="which the model was not built for"):
        small(batch.blocks, x)
    with pytest.raises(ValueError, match="x has no features for node type 'author'"):
        model(batch.blocks, {"paper": x["paper"]})
    with pytest.raises(ValueError, match=r"x\['paper'\] must be \[\d+, 6\]"):
        model(batch.blocks, {**x, "paper": x["paper"][:, :5]})
    with pytest.raises(ValueError, match="'inst' has learnable embeddings"):
        model(batch.blocks, {**x, "inst": torch.zeros(1, 4)})
    with pytest.raises(ValueError, match="blocks has 1 blocks but the model has 2 layers"):
        model(batch.blocks[:1], x)
    with pytest.raises(TypeError, match="list of TypedBlocks"):
        model(batch.blocks[0], x)
    with pytest.raises(ValueError, match=r"h\['author'\] must be \[\d+, 8\] \(layer 1"):
        model.forward_layer(1, batch.blocks[1], {t: torch.zeros(1, 8) for t in NUM_NODES})
    with pytest.raises(ValueError, match=r"index must be a layer in \[0, 2\)"):
        model.forward_layer(2, batch.blocks[1], {})
    with pytest.raises(ValueError, match="'inst' has neither features"):
        RGCN(rels, FEATURE_DIMS)
    with pytest.raises(ValueError, match="'paper' has both features"):
        RGCN(rels, FEATURE_DIMS, embeddings=NodeEmbeddings({**FEATURELESS, "paper": 120}, 4))
    with pytest.raises(ValueError, match="in_dims names node type 'org'"):
        RGCN(rels, {**FEATURE_DIMS, "org": 3}, embeddings=NodeEmbeddings(FEATURELESS, 4))
    with pytest.raises(ValueError, match="target must be a node type"):
        RGCN(rels, FEATURE_DIMS, target="papers", embeddings=NodeEmbeddings(FEATURELESS, 4))
    with pytest.raises(ValueError, match="hidden must be >= 1"):
        RGCN(rels, FEATURE_DIMS, hidden=0, embeddings=NodeEmbeddings(FEATURELESS, 4))
    with pytest.raises(TypeError, match="relations must hold"):
        RGCN([("paper", "cites")], FEATURE_DIMS)
    with pytest.raises(ValueError, match="is given twice"):
        RGCN([CITES, CITES], {"paper": 6})
    with pytest.raises(ValueError, match="input_nodes has no ids for featureless node type"):
        model.layer_inputs({"paper": SEEDS["paper"]}, {"paper": torch.zeros(10, 6),
                                                       "author": torch.zeros(0, 5)})


def test_learns_what_only_a_relation_reveals() -> None:
    """On the planted task R-GCN reaches far above chance (0.25); an MLP on the papers' own
    features does not."""
    task = Planted(seed=0)
    torch.manual_seed(0)
    model = RGCN(task.graph.canonical_relations, task.dims, hidden=16,
                 out_dim=task.num_classes, dropout=0.1)
    assert task.train_typed(model, [3, 3], steps=200, lr=0.01) > 0.9
    assert task.mlp_accuracy(steps=200) < 0.45


def test_for_dataset_builds_embeddings_for_featureless_types(data) -> None:
    graph, features = data

    class Shape:  # what a TypedDataset offers
        num_features = FEATURE_DIMS
        featureless_types = list(FEATURELESS)
        num_classes, target = 5, "paper"

    Shape.graph = graph
    model = RGCN.for_dataset(Shape, embed_dim=3, hidden=4)
    assert model.embeddings.node_types == list(FEATURELESS) and model.embeddings.dim == 3
    batch = FusedSampler(graph, [2, 2], seed=0).sample(SEEDS)
    assert model(batch.blocks, inputs(batch, features)).shape == (10, 5)
    assert isinstance(model.layers[0].root["inst"], nn.Linear)


def test_fp16_rows_are_cast_once_to_the_models_dtype() -> None:
    graph, features = typed_graph()
    model = RGCN(graph.canonical_relations, FEATURE_DIMS, 8, 3, 2, 0.0, target="paper",
                 embeddings=NodeEmbeddings(FEATURELESS, 4)).eval()
    batch = FusedSampler(graph, [3, 3], seed=0).sample({"paper": torch.arange(10)})
    x = inputs(batch, features)
    with torch.no_grad():
        want = model(batch.blocks, {t: v.half().float() for t, v in x.items()})
        got = model(batch.blocks, {t: v.half() for t, v in x.items()})
    assert got.dtype == torch.float32 and torch.equal(got, want)
