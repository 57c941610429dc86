"""R-GAT (MLPerf's reference structure) on TypedBlocks: the attention math against a dense
definition, the same logits as PyG's HeteroConv(GATConv) with the same weights, the preset,
layer by layer = forward, empty relations, bad input, and that it learns through a relation."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from typed_helpers import (FEATURE_DIMS, FEATURELESS, HOSTS, NUM_NODES, Planted, inputs,
                           typed_graph)

from gnnrepro.models import RGAT, RGAT_MLPERF, NodeEmbeddings, RelGATConv
from gnnrepro.models.rgat import edge_softmax
from gnnrepro.models.typed_model import relation_key
from gnnrepro.sampling import FusedSampler
from gnnrepro.sampling.block import Block

pytestmark = pytest.mark.usefixtures("one_thread")

SEEDS = {"paper": torch.tensor([0, 1, 2, 3, 5, 8, 13, 21, 34, 55])}


@pytest.fixture(scope="module")
def data():
    return typed_graph(seed=1)


def make_rgat(graph, seed: int = 0, **kwargs) -> RGAT:
    torch.manual_seed(seed)
    kwargs = {"hidden": 8, "out_dim": 3, "num_layers": 2, "heads": 2, "dropout": 0.0, **kwargs}
    return RGAT(graph.canonical_relations, FEATURE_DIMS,
                embeddings=NodeEmbeddings(FEATURELESS, 5), **kwargs)


def dense_gat(conv: RelGATConv, block: Block, h_src: torch.Tensor,
              h_dst: torch.Tensor) -> torch.Tensor:
    """GATConv's definition, one destination and head at a time."""
    heads, c = conv.heads, conv.out_channels
    lin_src = conv.lin if conv.lin is not None else conv.lin_src
    lin_dst = conv.lin if conv.lin is not None else conv.lin_dst
    xs = lin_src(h_src).view(-1, heads, c)
    xd = lin_dst(h_dst).view(-1, heads, c)
    rows = []
    for v in range(block.num_dst):
        us = block.indices[block.indptr[v]:block.indptr[v + 1]]
        row = torch.zeros(heads, c)
        for k in range(heads):
            if us.numel():
                e = nn.functional.leaky_relu((xs[us, k] * conv.att_src[0, k]).sum(1)
                                             + (xd[v, k] * conv.att_dst[0, k]).sum(), 0.2)
                row[k] = (torch.softmax(e, 0).unsqueeze(1) * xs[us, k]).sum(0)
        rows.append(row.reshape(-1) + conv.bias)
    return torch.stack(rows)


@pytest.mark.parametrize("in_src, in_dst", [(6, 6), (6, 4)])  # shared lin / lin_src, lin_dst
def test_conv_matches_the_dense_definition(in_src: int, in_dst: int) -> None:
    torch.manual_seed(0)
    conv = RelGATConv(in_src, in_dst, 3, heads=2)
    nn.init.normal_(conv.bias)
    # 5 destinations: one without in-edges, a repeated edge, a source used twice.
    block = Block(torch.tensor([0, 2, 2, 5, 6, 8]), torch.tensor([4, 5, 0, 6, 6, 1, 2, 3]),
                  torch.arange(7), num_dst=5, dst_ids=torch.arange(5))
    h_src, h_dst = torch.randn(7, in_src), torch.randn(5, in_dst)
    out = conv(block, h_src, h_dst)
    torch.testing.assert_close(out, dense_gat(conv, block, h_src, h_dst))
    torch.testing.assert_close(out[1], conv.bias)  # no in-edge: the bias alone


def test_edge_softmax_sums_to_one_per_destination() -> None:
    logits = torch.tensor([[1.0, 50.0], [2.0, -50.0], [3.0, 0.0], [700.0, 1.0]])
    indptr = torch.tensor([0, 3, 3, 4])
    alpha = edge_softmax(logits, indptr, torch.tensor([0, 0, 0, 2]))
    torch.testing.assert_close(alpha[:3], torch.softmax(logits[:3], 0))
    torch.testing.assert_close(alpha[3], torch.ones(2))  # no overflow: the max comes off first


class ReferenceRGAT(nn.Module):
    """MLPerf's reference RGNN(model="rgat") layers: HeteroConv(sum) over GATConv per relation
    in every layer, Linear on the target; run here on one TypedBlock per layer."""

    def __init__(self, relations, in_dims, hidden: int, out_dim: int, num_layers: int,
                 heads: int):
        super().__init__()
        from torch_geometric.nn import GATConv, HeteroConv
        self.convs = nn.ModuleList()
        for i in range(num_layers):
            dims = in_dims if i == 0 else {t: hidden for t in in_dims}

            def channels(rel):
                src, dst = dims[rel[0]], dims[rel[2]]
                return src if src == dst else (src, dst)

            self.convs.append(HeteroConv({rel: GATConv(channels(rel), hidden // heads, heads=heads,
                                                       add_self_loops=False)
                                          for rel in relations}, aggr="sum"))
        self.lin = nn.Linear(hidden, out_dim)

    def forward(self, blocks, x_dict):
        for i, (conv, block) in enumerate(zip(self.convs, blocks)):
            # MLPerf's forward drops the relations whose types have no rows in this layer.
            edge_index_dict = {rel: torch.stack([b.indices, b.edge_dst()])
                               for rel, b in block.blocks.items()
                               if rel[0] in x_dict and rel[2] in x_dict}
            out = conv(x_dict, edge_index_dict)
            x_dict = {t: rows[:block.num_dst[t]] for t, rows in out.items()}
            if i != len(self.convs) - 1:
                x_dict = {t: nn.functional.leaky_relu(rows) for t, rows in x_dict.items()}
        return self.lin(x_dict["paper"])


@pytest.mark.filterwarnings("ignore:There exist node types")  # venue: PyG says what we test
def test_same_logits_as_pyg_heteroconv_with_the_same_weights(data) -> None:
    """PyG's own layers with the reference's initial weights, loaded into our RGAT: the same
    logits (venue -> paper acts in layer 0 only, as MLPerf's forward drops it later)."""
    pytest.importorskip("torch_geometric")
    graph, features = data
    model = make_rgat(graph, num_layers=3).eval()
    torch.manual_seed(5)
    dims = {**FEATURE_DIMS, "inst": 5, "venue": 5}
    ref = ReferenceRGAT(graph.canonical_relations, dims, 8, 3, 3, heads=2).eval()
    with torch.no_grad():
        for conv in ref.convs:  # PyG starts biases at 0: make them count
            for p in conv.parameters():
                if p.dim() == 1:
                    p.normal_()
    state = ref.state_dict()
    dropped = {k for k in state for i in (1, 2) if k.startswith(f"convs.{i}.convs."
                                                                f"{relation_key(HOSTS)}.")}
    assert dropped
    missing, unexpected = model.load_state_dict(
        {k: v for k, v in state.items() if k not in dropped}, strict=False)
    assert unexpected == [] and all(k.startswith("embeddings.") for k in missing)
    for fanouts in ([4, 3, 2], [-1, -1, -1], [0, 2, 0]):
        batch = FusedSampler(graph, fanouts, seed=2).sample(SEEDS)
        x = inputs(batch, features)
        with torch.no_grad():
            want = ref(batch.blocks, model.layer_inputs(batch.input_nodes, x))
            torch.testing.assert_close(model(batch.blocks, x), want, rtol=1e-5, atol=1e-5)


def test_gradients_and_relations_without_edges(data) -> None:
    graph, features = data
    batch = FusedSampler(graph, [5, 5], seed=3).sample(SEEDS)
    model = make_rgat(graph)
    model(batch.blocks, inputs(batch, features)).square().sum().backward()
    for i, (layer, block) in enumerate(zip(model.convs, batch.blocks)):
        for rel, conv in zip(layer.relations, layer.convs.values()):
            lin = conv.lin if conv.lin is not None else conv.lin_src
            has_edges = block.blocks[rel].num_edges > 0
            reached = lin.weight.grad is not None and bool(lin.weight.grad.abs().sum() > 0)
            assert reached == has_edges, (i, rel)
            if not has_edges:  # nothing computed, nothing to learn but the bias (as in PyG)
                assert conv.att_src.grad is None
    assert relation_key(HOSTS) not in model.convs[1].convs  # venue has no rows after layer 0


def test_layer_by_layer_over_full_neighbourhoods_equals_forward(data) -> None:
    graph, features = data
    model = make_rgat(graph, dropout=0.5).eval()
    full = FusedSampler(graph, [-1, -1], seed=0).sample(SEEDS)
    want = model(full.blocks, inputs(full, features))
    layer0 = FusedSampler(graph, [-1], seed=0).sample({t: torch.arange(n)
                                                        for t, n in NUM_NODES.items()})
    block0 = layer0.blocks[0]
    table = model.forward_layer(0, block0, model.layer_inputs(block0.src_nodes,
                                                              inputs(layer0, features)))
    assert set(table) == {"paper", "author", "inst"}  # the relations' destination types
    block1 = FusedSampler(graph, [-1], seed=0).sample(SEEDS).blocks[0]
    got = model.forward_layer(1, block1, {t: rows[block1.src_nodes[t]]
                                          for t, rows in table.items()})
    torch.testing.assert_close(got["paper"], want, rtol=1e-5, atol=1e-5)


def test_the_mlperf_preset(data) -> None:
    graph, features = data
    preset = RGAT_MLPERF
    assert (preset.hidden, preset.heads, preset.num_layers, preset.fanouts, preset.batch_size,
            preset.lr, preset.dropout) == (512, 4, 3, (5, 10, 15), 1024, 1e-3, 0.2)
    torch.manual_seed(0)
    model = preset.build(graph.canonical_relations, FEATURE_DIMS, 2983,
                         embeddings=NodeEmbeddings(FEATURELESS, 16))
    assert model.num_layers == 3 and model.dropout == 0.2
    assert model.lin.in_features == 512 and model.lin.out_features == 2983
    conv = model.convs[1].convs[relation_key(graph.canonical_relations[0])]
    assert (conv.heads, conv.out_channels, conv.lin.in_features) == (4, 128, 512)
    batch = FusedSampler(graph, list(preset.fanouts), seed=0).sample(SEEDS)
    assert model(batch.blocks, inputs(batch, features)).shape == (10, 2983)


def test_seeded_forward_is_deterministic_with_dropout(data) -> None:
    graph, features = data
    batch = FusedSampler(graph, [3, 3], seed=4).sample(SEEDS)
    outs = []
    for _ in range(2):
        model = make_rgat(graph, seed=9, dropout=0.5)
        torch.manual_seed(1)
        outs.append(model(batch.blocks, inputs(batch, features)))
    assert torch.equal(outs[0], outs[1])


def test_bad_input_names_what_is_wrong(data) -> None:
    graph, _ = data
    rels = graph.canonical_relations
    emb = NodeEmbeddings(FEATURELESS, 5)
    with pytest.raises(ValueError, match=r"hidden \(10\) must be a multiple of heads \(4\)"):
        RGAT(rels, FEATURE_DIMS, hidden=10, heads=4, embeddings=emb)
    with pytest.raises(ValueError, match="target 'venue' gets no rows from the last layer"):
        RGAT(rels, FEATURE_DIMS, target="venue", embeddings=emb)
    with pytest.raises(ValueError, match="dropout must lie in"):
        RGAT(rels, FEATURE_DIMS, dropout=1.0, embeddings=emb)
    with pytest.raises(ValueError, match="heads must be >= 1"):
        RGAT(rels, FEATURE_DIMS, heads=0, embeddings=emb)


def test_learns_what_only_a_relation_reveals() -> None:
    task = Planted(seed=0)
    torch.manual_seed(0)
    model = RGAT(task.graph.canonical_relations, task.dims, hidden=32, out_dim=task.num_classes,
                 num_layers=2, heads=4, dropout=0.1)
    assert task.train_typed(model, [3, 3], steps=300, lr=0.01) > 0.75  # chance: 0.25
    assert task.mlp_accuracy(steps=300) < 0.45
