"""R-GCN and R-GAT on "cpu" and "cuda": on the device, the CPU's logits and gradients (dense
and the embeddings' sparse ones), and a SparseAdam step that moves the looked-up rows only."""
from __future__ import annotations

import copy

import pytest
import torch

from typed_helpers import FEATURE_DIMS, FEATURELESS, inputs, typed_graph

from gnnrepro.models import RGAT, RGCN, NodeEmbeddings, make_optimizers
from gnnrepro.sampling import FusedSampler


@pytest.mark.parametrize("kind", ["rgcn", "rgat"])
def test_device_gives_the_cpus_logits_and_gradients(device: str, kind: str) -> None:
    graph, features = typed_graph(seed=2)
    torch.manual_seed(0)
    embeddings = NodeEmbeddings(FEATURELESS, 4)
    if kind == "rgcn":
        model = RGCN(graph.canonical_relations, FEATURE_DIMS, hidden=16, out_dim=5,
                     dropout=0.0, embeddings=embeddings)
    else:
        model = RGAT(graph.canonical_relations, FEATURE_DIMS, hidden=16, out_dim=5,
                     num_layers=3, heads=4, dropout=0.0, embeddings=embeddings)
    batch = FusedSampler(graph, [5, 4, 3][:model.num_layers], seed=1).sample(
        {"paper": torch.arange(0, 120, 7)})
    moved = copy.deepcopy(model).to(device)
    want = model(batch.blocks, inputs(batch, features))
    want.square().sum().backward()
    on_device = batch.to(device)
    got = moved(on_device.blocks, {t: x.to(device) for t, x in inputs(batch, features).items()})
    torch.testing.assert_close(got.cpu(), want, rtol=1e-4, atol=1e-5)
    optimizer = make_optimizers(moved, lr=0.01)
    optimizer.zero_grad()
    got.square().sum().backward()
    for (name, p), q in zip(model.named_parameters(), moved.parameters()):
        if p.grad is None:
            assert q.grad is None, name
            continue
        a, b = (p.grad.to_dense(), q.grad.to_dense()) if p.grad.is_sparse else (p.grad, q.grad)
        torch.testing.assert_close(b.cpu(), a, rtol=1e-4, atol=1e-5, msg=name)
    table = moved.embeddings.tables["inst"].weight
    before = table.detach().clone()
    optimizer.step()
    rows = (table.detach() != before).any(1).nonzero().squeeze(1).cpu()
    assert set(rows.tolist()) == set(batch.input_nodes["inst"].tolist())
