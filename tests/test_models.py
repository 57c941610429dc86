"""Tests for gnnrepro.models: GraphSAGE's mean aggregation, its checks, and that it learns."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from gnnrepro.datasets import load
from gnnrepro.features import InMemoryFeatureStore
from gnnrepro.models import MLP, GraphSAGE, SAGEConv
from gnnrepro.models.aggregate import dst_rows_and_neighbour_mean
from gnnrepro.sampling.block import Block
from gnnrepro.sampling.fused import FusedSampler


def hand_blocks() -> list[Block]:
    """Two blocks: 7 inputs -> 4 -> 2 seeds, with a repeated edge and isolated destinations."""
    first = Block(indptr=torch.tensor([0, 2, 2, 5, 6]),  # destination 1 has no neighbours
                  indices=torch.tensor([4, 5, 0, 6, 6, 1]),  # 6 -> 2 twice: counted twice
                  src_nodes=torch.tensor([10, 11, 12, 13, 14, 15, 16]), num_dst=4)
    second = Block(indptr=torch.tensor([0, 3, 3]), indices=torch.tensor([1, 2, 3]),
                   src_nodes=torch.tensor([10, 11, 12, 13]), num_dst=2)
    return [first, second]


def naive_conv(conv: SAGEConv, block: Block, h: torch.Tensor) -> torch.Tensor:
    """The layer's definition, one destination at a time."""
    rows = []
    for v in range(block.num_dst):
        neighbours = block.indices[block.indptr[v]:block.indptr[v + 1]]
        mean = h[neighbours].mean(0) if neighbours.numel() else torch.zeros(h.shape[1])
        rows.append(conv.fc_self(h[v]) + conv.fc_neigh(mean))
    return torch.stack(rows)


@pytest.mark.parametrize("in_dim, out_dim", [(5, 3), (3, 5)])  # projection before / after mean
def test_conv_matches_naive_loop(in_dim: int, out_dim: int) -> None:
    torch.manual_seed(0)
    conv, block = SAGEConv(in_dim, out_dim), hand_blocks()[0]
    h = torch.randn(block.num_src, in_dim)
    out = conv(block, h)
    assert out.shape == (4, out_dim)
    torch.testing.assert_close(out, naive_conv(conv, block, h))
    torch.testing.assert_close(out[1], conv.fc_self(h[1]))  # isolated: zero neighbour mean


def test_graphsage_matches_naive_composition() -> None:
    torch.manual_seed(0)
    model, blocks = GraphSAGE(6, hidden=8, out_dim=3, num_layers=2).eval(), hand_blocks()
    x = torch.randn(7, 6)
    hidden = torch.relu(naive_conv(model.layers[0], blocks[0], x))
    expected = naive_conv(model.layers[1], blocks[1], hidden)
    torch.testing.assert_close(model(blocks, x), expected)


def test_graphsage_block_without_edges() -> None:
    block = Block(torch.zeros(4, dtype=torch.int64), torch.empty(0, dtype=torch.int64),
                  torch.arange(3), num_dst=3)
    model = GraphSAGE(4, hidden=8, out_dim=2, num_layers=1)
    x = torch.randn(3, 4)
    torch.testing.assert_close(model([block], x), model.layers[0].fc_self(x))


def test_graphsage_gradients_flow_and_determinism() -> None:
    blocks, x = hand_blocks(), torch.randn(7, 6, requires_grad=True)
    models, outputs = [], []
    for _ in range(2):
        torch.manual_seed(3)
        models.append(GraphSAGE(6, hidden=8, out_dim=3, num_layers=2, dropout=0.5))
        outputs.append(models[-1](blocks, x))
    assert torch.equal(outputs[0], outputs[1])  # same init and dropout masks
    outputs[0].sum().backward()
    assert x.grad is not None and bool(x.grad.abs().sum() > 0)
    for name, p in models[0].named_parameters():
        assert p.grad is not None and bool(p.grad.abs().sum() > 0), name


def test_graphsage_checks_inputs() -> None:
    model, blocks = GraphSAGE(6, hidden=8, out_dim=3, num_layers=2), hand_blocks()
    with pytest.raises(ValueError, match="2 layers"):
        model(blocks[:1], torch.randn(7, 6))
    with pytest.raises(ValueError, match="x must have one row per input node"):
        model(blocks, torch.randn(6, 6))
    with pytest.raises(ValueError, match="num_layers"):
        GraphSAGE(6, num_layers=0)
    with pytest.raises(TypeError, match="hidden"):
        GraphSAGE(6, hidden=8.0)
    with pytest.raises(ValueError, match="dropout"):
        MLP(6, 8, 3, 2, dropout=1.0)


def test_mlp_shapes() -> None:
    torch.manual_seed(0)
    model = MLP(6, 8, 3, num_layers=3, dropout=0.0)
    assert model(torch.randn(5, 6)).shape == (5, 3) and len(model.layers) == 3


STEPS, BATCH, FANOUTS = 300, 64, [5, 5]


def train_and_test(model: torch.nn.Module, dataset, sampler: FusedSampler | None,
                   store: InMemoryFeatureStore) -> float:
    """Train STEPS Adam steps on random train batches; return test accuracy."""
    torch.manual_seed(0)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.003)
    gen = torch.Generator().manual_seed(0)

    def logits(seeds: torch.Tensor, batch_id: int) -> torch.Tensor:
        if sampler is None:
            return model(store.gather(seeds))
        batch = sampler.sample(seeds, batch_id)
        return model(batch.blocks, store.gather(batch.input_nodes))

    model.train()
    for step in range(STEPS):
        pick = torch.randint(0, dataset.train_idx.numel(), (BATCH,), generator=gen)
        seeds = dataset.train_idx[pick].unique()
        loss = F.cross_entropy(logits(seeds, step), dataset.labels[seeds])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    correct = 0
    with torch.no_grad():
        for i, seeds in enumerate(dataset.test_idx.split(4096)):
            correct += int((logits(seeds, STEPS + i).argmax(1) == dataset.labels[seeds]).sum())
    return correct / dataset.test_idx.numel()


@pytest.mark.usefixtures("one_thread")
def test_graphsage_learns_products_sim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GNNREPRO_DATA", str(tmp_path))
    dataset = load("products-sim", scale=0.005)  # 12,245 nodes, 983 training nodes
    store = InMemoryFeatureStore(dataset.features)
    chance = float(torch.bincount(dataset.labels).max()) / dataset.num_nodes
    torch.manual_seed(0)
    sage = GraphSAGE(dataset.num_features, 64, dataset.num_classes, len(FANOUTS), 0.5)
    mlp = MLP(dataset.num_features, 64, dataset.num_classes, len(FANOUTS), 0.5)
    sage_acc = train_and_test(sage, dataset, FusedSampler(dataset.graph, FANOUTS), store)
    mlp_acc = train_and_test(mlp, dataset, None, store)
    assert chance < 0.1
    assert sage_acc > 0.5, (sage_acc, mlp_acc)
    assert sage_acc > mlp_acc + 0.15, (sage_acc, mlp_acc)


def test_conv_rejects_out_of_range_neighbours() -> None:
    """A malformed block (an edge to a source that does not exist) raises, never reads past h."""
    block = Block(torch.tensor([0, 2, 3]), torch.tensor([0, 5, 1]), torch.arange(3), num_dst=2)
    with pytest.raises((IndexError, RuntimeError)):
        SAGEConv(4, 2)(block, torch.randn(3, 4))


@pytest.mark.parametrize("use", ["both", "dst rows only", "mean only"])
def test_dst_rows_and_mean_share_one_gradient_buffer_with_the_same_gradients(use: str) -> None:
    block = hand_blocks()[0]  # a repeated edge and a destination without neighbours
    h = torch.randn(block.num_src, 5, dtype=torch.float64, requires_grad=True)
    dst, mean = dst_rows_and_neighbour_mean(block, h)
    ref_dst = h[:block.num_dst]
    ref_mean = F.embedding_bag(block.indices, h, block.indptr, mode="mean",
                               include_last_offset=True)
    torch.testing.assert_close((dst, mean), (ref_dst, ref_mean))
    weights = torch.randn(2, block.num_dst, 5, dtype=torch.float64)
    parts = {"both": (0, 1), "dst rows only": (0,), "mean only": (1,)}[use]
    got = torch.autograd.grad(sum(((dst, mean)[i] * weights[i]).sum() for i in parts), h)[0]
    want = torch.autograd.grad(sum(((ref_dst, ref_mean)[i] * weights[i]).sum() for i in parts),
                               h)[0]
    torch.testing.assert_close(got, want)
    assert torch.autograd.gradcheck(lambda x: dst_rows_and_neighbour_mean(block, x), (h,))


def test_dst_rows_and_mean_read_strided_index_tensors_like_contiguous_ones() -> None:
    """Blocks whose indices / indptr are strided views (a user's own slicing) give the same
    rows, mean and gradient as their contiguous copies."""
    block = hand_blocks()[0]
    strided = Block(torch.stack([block.indptr, block.indptr + 7], 1)[:, 0],
                    torch.stack([block.indices, block.indices.flip(0)], 1)[:, 0],
                    block.src_nodes, num_dst=block.num_dst)
    assert not strided.indices.is_contiguous() and not strided.indptr.is_contiguous()
    h = torch.randn(block.num_src, 5, dtype=torch.float64, requires_grad=True)
    weights = torch.randn(2, block.num_dst, 5, dtype=torch.float64)
    results = []
    for b in (block, strided):
        dst, mean = dst_rows_and_neighbour_mean(b, h)
        grad = torch.autograd.grad((dst * weights[0]).sum() + (mean * weights[1]).sum(), h)[0]
        results.append((dst, mean, grad))
    torch.testing.assert_close(results[1], results[0])
