"""Tests for temporal-sim: determinism, shapes, edge and node times, temporal splits, the cache,
argument checks, and the leak (ignoring time must help a neighbour-aggregating model)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from gnnrepro.datasets import SCALED_DATASETS, TemporalDataset, load
from gnnrepro.datasets.temporal_sim import HORIZON, TIME_SKEW, generate

pytestmark = pytest.mark.usefixtures("one_thread")  # the leak proxy's fits: 4x faster when busy

SCALE = 0.005  # 12,245 nodes, 618,592 directed edges; ~1.8k val nodes for the leak proxy


@pytest.fixture(scope="module")
def sim() -> TemporalDataset:
    return generate(SCALE, 0)


def _assert_same(a: TemporalDataset, b: TemporalDataset) -> None:
    assert list(a.arrays()) == list(b.arrays())
    for (key, x), y in zip(a.arrays().items(), b.arrays().values()):
        assert x.dtype == y.dtype and torch.equal(x, y), key


def _edge_ends(d: TemporalDataset) -> tuple[torch.Tensor, torch.Tensor]:
    """(src, dst) of every CSC position, int64."""
    dst = torch.repeat_interleave(torch.arange(d.num_nodes), d.graph.in_degrees())
    return d.graph.indices.to(torch.int64), dst


def neighbour_mean(d: TemporalDataset, past_only: bool) -> torch.Tensor:
    """Mean features of every node's neighbours (zero without any); `past_only` keeps only the
    edges with edge_time <= the node's node_time."""
    src, dst = _edge_ends(d)
    if past_only:
        keep = d.edge_time <= d.node_time[dst]
        src, dst = src[keep], dst[keep]
    sums = torch.zeros_like(d.features).index_add_(0, dst, d.features[src])
    counts = torch.bincount(dst, minlength=d.num_nodes).clamp_(min=1)
    return sums / counts[:, None]


def val_accuracy(d: TemporalDataset, x: torch.Tensor, steps: int = 100) -> float:
    """Val accuracy of multinomial logistic regression on standardised `x`, full-batch Adam on
    train (100 steps reach what 300 do, to 0.3 points)."""
    torch.manual_seed(0)
    x = (x - x[d.train_idx].mean(0)) / x[d.train_idx].std(0).clamp(min=1e-6)
    model = torch.nn.Linear(x.shape[1], d.num_classes)
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    xt, yt = x[d.train_idx], d.labels[d.train_idx]
    for _ in range(steps):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(xt), yt).backward()
        opt.step()
    with torch.no_grad():
        return (model(x[d.val_idx]).argmax(1) == d.labels[d.val_idx]).float().mean().item()


def leak_proxy(d: TemporalDataset) -> dict[str, float]:
    """Val accuracy with own features alone, plus past-only and all neighbours' mean."""
    return {"features": val_accuracy(d, d.features),
            "past": val_accuracy(d, torch.cat([d.features, neighbour_mean(d, True)], 1)),
            "all": val_accuracy(d, torch.cat([d.features, neighbour_mean(d, False)], 1))}


def test_registered_and_sized_like_scaled_ogbn_products(sim: TemporalDataset) -> None:
    assert "temporal-sim" in SCALED_DATASETS
    n = round(2_449_029 * SCALE)
    assert isinstance(sim, TemporalDataset) and sim.name == "temporal-sim"
    assert sim.num_nodes == n and sim.graph.num_edges == 2 * round(61_859_140 * SCALE)
    assert sim.features.shape == (n, 100) and sim.features.dtype == torch.float32
    assert sim.labels.dtype == torch.int64 and sim.num_classes == 47
    assert 0 <= int(sim.labels.min()) and int(sim.labels.max()) < 47
    assert sim.edge_time.shape == (sim.graph.num_edges,) and sim.edge_time.dtype == torch.int64
    assert sim.node_time.shape == (n,) and sim.node_time.dtype == torch.int64
    for t in (sim.edge_time, sim.node_time):
        assert 0 <= int(t.min()) and int(t.max()) < HORIZON
    assert sim.params == {"scale": SCALE, "seed": 0}
    assert sim.nbytes() == (sim.graph.nbytes() + sim.features.numel() * 4
                            + sim.labels.numel() * 8 + 8 * (sim.graph.num_edges + n))


def test_same_seed_same_arrays_other_seed_other_arrays(sim: TemporalDataset) -> None:
    _assert_same(sim, generate(SCALE, 0))
    other = generate(SCALE, 1)
    assert not torch.equal(sim.node_time, other.node_time)
    assert not torch.equal(sim.graph.indices, other.graph.indices)


def test_both_directions_of_an_edge_share_its_time(sim: TemporalDataset) -> None:
    src, dst = _edge_ends(sim)
    n = sim.num_nodes
    forward = (dst * n + src).numpy()  # ascending: the CSC order
    reverse = np.searchsorted(forward, (src * n + dst).numpy())
    assert np.array_equal(forward[reverse], (src * n + dst).numpy()), "graph not symmetric"
    assert torch.equal(sim.edge_time[torch.from_numpy(reverse)], sim.edge_time)


def test_same_class_edges_are_half_and_come_later(sim: TemporalDataset) -> None:
    src, dst = _edge_ends(sim)
    same = sim.labels[src] == sim.labels[dst]
    assert 0.4 < same.double().mean().item() < 0.6
    t = sim.edge_time.double() / HORIZON  # mean of U**(1/a): a / (a + 1)
    assert t[same].mean().item() == pytest.approx(TIME_SKEW / (TIME_SKEW + 1), abs=0.01)
    assert t[~same].mean().item() == pytest.approx(1 / (TIME_SKEW + 1), abs=0.01)


def test_splits_are_temporal_disjoint_and_cover_all_nodes(sim: TemporalDataset) -> None:
    everything = torch.cat([sim.train_idx, sim.val_idx, sim.test_idx])
    assert torch.equal(everything.sort().values, torch.arange(sim.num_nodes))
    train, val, test = (sim.node_time[i] for i in (sim.train_idx, sim.val_idx, sim.test_idx))
    assert int(train.max()) < 0.7 * HORIZON <= int(val.min())
    assert int(val.max()) < 0.85 * HORIZON <= int(test.min())
    assert abs(sim.train_idx.numel() / sim.num_nodes - 0.7) < 0.02


def test_cache_round_trip(tmp_path: Path, sim: TemporalDataset) -> None:
    first = load("temporal-sim", root=tmp_path, scale=SCALE)
    assert isinstance(first, TemporalDataset)
    _assert_same(first, sim)
    entry = tmp_path / "temporal-sim" / f"scale={SCALE}-seed=0"
    assert (entry / "edge_time.npy").exists() and (entry / "node_time.npy").exists()
    _assert_same(load("temporal-sim", root=tmp_path, scale=SCALE), sim)  # mapped, not rebuilt
    (entry / "node_time.npy").unlink()  # a damaged entry is rebuilt
    _assert_same(load("temporal-sim", root=tmp_path, scale=SCALE), sim)


def test_dataset_checks_the_time_arrays(sim: TemporalDataset) -> None:
    arrays = sim.arrays()
    rebuilt = TemporalDataset.from_arrays(arrays, num_classes=47, name="x", params={})
    _assert_same(rebuilt, sim)
    for key, bad in (("edge_time", sim.edge_time[1:]), ("node_time", sim.node_time.int())):
        with pytest.raises(ValueError, match=key):
            TemporalDataset.from_arrays(arrays | {key: bad}, num_classes=47, name="x", params={})


@pytest.mark.parametrize("kwargs, error, word", [
    ({"scale": 0}, ValueError, "scale"),
    ({"scale": -0.5}, ValueError, "scale"),
    ({"scale": 1e-6}, ValueError, "scale"),
    ({"scale": "0.1"}, TypeError, "scale"),
    ({"seed": -1}, ValueError, "seed"),
    ({"seed": 1.5}, TypeError, "seed"),
    ({"scael": 0.1}, TypeError, "scael"),
])
def test_bad_arguments_are_named(tmp_path: Path, kwargs: dict, error: type, word: str) -> None:
    with pytest.raises(error, match=word):
        load("temporal-sim", root=tmp_path, **kwargs)


def test_ignoring_time_leaks_the_future(sim: TemporalDataset) -> None:
    acc = leak_proxy(sim)
    assert acc["all"] >= acc["past"] + 0.10, acc
    assert acc["past"] >= acc["features"] + 0.03, acc
