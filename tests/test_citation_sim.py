"""Tests for citation-sim and LinkDataset: ogbl-citation2's shape, the edge-id contract (edge i
and i + E_t are each other's reverse), the OGB-style hold-out and negatives, determinism, the
cache, argument checks, a learnable signal, and ogbl-citation2 read offline through ogb."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from helpers import write_csv_gz

from gnnrepro.datasets import (KNOWN_DATASETS, LINK_DATASETS, SCALED_DATASETS, LinkDataset, load,
                               ogbl_loader)
from gnnrepro.datasets.citation_sim import generate
from gnnrepro.graph import CSCGraph

pytestmark = pytest.mark.usefixtures("one_thread")

SCALE = 0.01  # 29,280 nodes, 303,872 training edges, 870 val and 870 test queries: ~0.5 s
RANDOM_MRR = sum(1 / r for r in range(1, 1002)) / 1001  # a random rank among 1 + 1,000


@pytest.fixture(autouse=True)
def data_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test caches into its own tmp dir and has no default OGB data."""
    monkeypatch.setenv("GNNREPRO_DATA", str(tmp_path / "cache"))
    monkeypatch.setenv("GNNREPRO_OGB_ROOT", str(tmp_path / "no-ogb-here"))
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def sim() -> LinkDataset:
    return generate(SCALE, 0)


def _assert_same(a: LinkDataset, b: LinkDataset) -> None:
    assert list(a.arrays()) == list(b.arrays())
    for (key, x), y in zip(a.arrays().items(), b.arrays().values()):
        assert x.dtype == y.dtype and torch.equal(x, y), key


def _keys(src: torch.Tensor, dst: torch.Tensor, n: int) -> np.ndarray:
    return (src * n + dst).numpy()


def mrr(scores: torch.Tensor) -> float:
    """OGB's MRR of [Q, 1 + K] scores, the true destination's first: the rank is 1 + the mean
    of the optimistic and pessimistic counts of negatives scored above it."""
    pos, neg = scores[:, :1], scores[:, 1:]
    rank = 1 + 0.5 * ((neg > pos).sum(1) + (neg >= pos).sum(1))
    return (1 / rank).mean().item()


def cosine_mrr(d: LinkDataset, x: torch.Tensor) -> float:
    """Val MRR of scoring a candidate by the cosine of its row of `x` with the source's."""
    x = torch.nn.functional.normalize(x, dim=1)
    candidates = torch.cat([d.val_dst[:, None], d.val_neg], 1)
    scores = torch.cat([torch.einsum("qf,qkf->qk", x[s], x[c])  # 128 queries: ~66 MB at once
                        for s, c in zip(d.val_src.split(128), candidates.split(128))])
    return mrr(scores)


def with_neighbour_mean(d: LinkDataset) -> torch.Tensor:
    """Own features plus the mean of the training graph's neighbours' (one GNN layer's view)."""
    dst = torch.repeat_interleave(torch.arange(d.num_nodes), d.graph.in_degrees())
    src = d.graph.indices.to(torch.int64)
    sums = torch.zeros_like(d.features).index_add_(0, dst, d.features[src])
    return d.features + sums / d.graph.in_degrees().clamp(min=1)[:, None]


# --- citation-sim ----------------------------------------------------------------------------

def test_registered_and_sized_like_scaled_ogbl_citation2(sim: LinkDataset) -> None:
    assert "citation-sim" in SCALED_DATASETS and "citation-sim" in LINK_DATASETS
    assert "ogbl-citation2" in KNOWN_DATASETS and "ogbl-citation2" in LINK_DATASETS
    n, q = round(2_927_963 * SCALE), round(86_956 * SCALE)
    assert isinstance(sim, LinkDataset) and sim.name == "citation-sim"
    assert sim.num_nodes == n and sim.num_train_edges == round(30_561_187 * SCALE) - 2 * q
    assert sim.graph.num_edges == 2 * sim.num_train_edges
    assert sim.graph.indices.dtype == torch.int32
    assert sim.features.shape == (n, 128) and sim.features.dtype == torch.float32
    assert sim.labels.dtype == torch.int64 and bool((sim.labels == -1).all())
    assert sim.num_classes == 0
    assert all(i.dtype == torch.int64 and i.numel() == 0
               for i in (sim.train_idx, sim.val_idx, sim.test_idx))
    for split in ("val", "test"):
        assert getattr(sim, f"{split}_src").shape == getattr(sim, f"{split}_dst").shape == (q,)
        assert getattr(sim, f"{split}_neg").shape == (q, 1000)
    for key in ("train_src", "train_dst", "val_src", "val_dst", "val_neg", "test_src",
                "test_dst", "test_neg"):
        t = getattr(sim, key)
        assert t.dtype == torch.int64 and 0 <= int(t.min()) and int(t.max()) < n, key
    assert sim.params == {"scale": SCALE, "seed": 0}
    assert sim.nbytes() == (sim.graph.nbytes() + sim.features.numel() * 4 + n * 8
                            + 8 * sim.graph.num_edges + 8 * 2 * sim.num_train_edges
                            + 8 * 2 * (2 * q + q * 1000))
    assert sim.summary()["num_train_edges"] == sim.num_train_edges
    assert sim.summary()["num_negatives"] == 1000


def test_edge_ids_name_training_edges_and_their_reverses(sim: LinkDataset) -> None:
    e = sim.num_train_edges
    eids = sim.graph.edge_ids
    assert torch.equal(eids.sort().values, torch.arange(2 * e))
    src_of = torch.cat([sim.train_src, sim.train_dst])  # by edge id
    dst_of = torch.cat([sim.train_dst, sim.train_src])
    csc_dst = torch.repeat_interleave(torch.arange(sim.num_nodes), sim.graph.in_degrees())
    assert torch.equal(src_of[eids], sim.graph.indices.to(torch.int64))
    assert torch.equal(dst_of[eids], csc_dst)
    rev = sim.reverse_eids
    assert rev.dtype == torch.int64 and torch.equal(rev[:e], torch.arange(e, 2 * e))
    assert torch.equal(rev[rev], torch.arange(2 * e))
    assert torch.equal(src_of[rev], dst_of) and torch.equal(dst_of[rev], src_of)


def test_training_edges_cite_older_papers_once(sim: LinkDataset) -> None:
    assert bool((sim.train_src > sim.train_dst).all())  # newer -> older: no loops, a DAG
    keys = _keys(sim.train_src, sim.train_dst, sim.num_nodes)
    assert np.unique(keys).size == keys.size
    degree = np.bincount(np.concatenate([sim.train_src, sim.train_dst]), minlength=sim.num_nodes)
    assert degree.max() > 20 * degree.mean()  # heavy-tailed, as citation counts are


def test_held_out_edges_are_ogbs_split(sim: LinkDataset) -> None:
    n = sim.num_nodes
    train = _keys(sim.train_src, sim.train_dst, n)
    val, test = (_keys(getattr(sim, f"{s}_src"), getattr(sim, f"{s}_dst"), n)
                 for s in ("val", "test"))
    assert not np.isin(val, train).any() and not np.isin(test, train).any()
    assert not np.isin(val, test).any()
    # One val and one test edge per source, as OGB: the same distinct sources, other targets.
    assert torch.unique(sim.val_src).numel() == sim.val_src.numel()
    assert torch.equal(sim.val_src, sim.test_src)
    assert bool((sim.val_dst != sim.test_dst).all())
    assert bool((sim.val_src > sim.val_dst).all()) and bool((sim.test_src > sim.test_dst).all())


def test_negatives_are_uniform_seeded_and_rarely_true(sim: LinkDataset) -> None:
    n = sim.num_nodes
    assert not torch.equal(sim.val_neg, sim.test_neg)
    assert abs(sim.val_neg.double().mean().item() / (n - 1) - 0.5) < 0.01
    all_true = np.concatenate([_keys(sim.train_src, sim.train_dst, n),
                               _keys(sim.val_src, sim.val_dst, n)])
    neg = (sim.val_src[:, None] * n + sim.val_neg).numpy()
    assert np.isin(neg, all_true).mean() < 1e-3  # OGB's convention: kept when it happens


def test_same_seed_same_arrays_other_seed_other_arrays(sim: LinkDataset) -> None:
    _assert_same(sim, generate(SCALE, 0))
    other = generate(SCALE, 1)
    for key in ("train_src", "val_src", "val_neg", "features"):
        assert not torch.equal(getattr(sim, key), getattr(other, key)), key


def test_cache_round_trip(tmp_path: Path, sim: LinkDataset) -> None:
    first = load("citation-sim", root=tmp_path, scale=SCALE)
    assert isinstance(first, LinkDataset) and first.graph.edge_ids is not None
    _assert_same(first, sim)
    entry = tmp_path / "citation-sim" / f"scale={SCALE}-seed=0"
    assert (entry / "edge_ids.npy").exists() and (entry / "test_neg.npy").exists()
    _assert_same(load("citation-sim", root=tmp_path, scale=SCALE), sim)  # mapped, not rebuilt
    (entry / "val_neg.npy").unlink()  # a damaged entry is rebuilt
    _assert_same(load("citation-sim", root=tmp_path, scale=SCALE), sim)


def test_dataset_checks_the_link_arrays(sim: LinkDataset) -> None:
    arrays = sim.arrays()
    _assert_same(LinkDataset.from_arrays(arrays, num_classes=0, name="x", params={}), sim)
    for key, bad in (("train_dst", sim.train_dst[1:]), ("val_neg", sim.val_neg[1:]),
                     ("test_neg", sim.test_neg[:, 0]), ("test_src", sim.test_src.int()),
                     ("edge_ids", sim.graph.edge_ids[1:])):
        with pytest.raises(ValueError, match=key):
            LinkDataset.from_arrays(arrays | {key: bad}, num_classes=0, name="x", params={})
    fields = {k: getattr(sim, k) for k in ("features", "labels", "train_idx", "val_idx",
                                           "test_idx", "train_src", "train_dst", "val_src",
                                           "val_dst", "val_neg", "test_src", "test_dst",
                                           "test_neg")}
    with pytest.raises(ValueError, match="edge_ids"):  # a graph that cannot name the edges
        LinkDataset(graph=CSCGraph(sim.graph.indptr, sim.graph.indices), num_classes=0,
                    name="x", **fields)
    with pytest.raises(ValueError, match="both directions"):  # one direction only
        LinkDataset(graph=sim.graph, num_classes=0, name="x",
                    **fields | {"train_src": sim.train_src[:5], "train_dst": sim.train_dst[:5]})


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
        load("citation-sim", root=tmp_path, **kwargs)


def test_smallest_scale_still_has_queries() -> None:
    d = generate(0.0004, 0)  # 1,171 nodes
    assert d.val_src.numel() == d.test_src.numel() == 35 and d.val_neg.shape == (35, 1000)


def test_features_and_structure_predict_links(sim: LinkDataset) -> None:
    """Features alone rank the true destination well above chance; adding the training graph's
    neighbours (what a GNN layer sees) ranks it much higher still (module docstring's MRRs)."""
    features = cosine_mrr(sim, sim.features)
    neighbours = cosine_mrr(sim, with_neighbour_mean(sim))
    assert features > 4 * RANDOM_MRR, features
    assert neighbours > 2 * features, (features, neighbours)


# --- ogbl-citation2 from a local OGB root -----------------------------------------------------

def _write_ogbl_citation2(root: Path, as_tensors: bool = False,
                          release: bool = True) -> dict[str, np.ndarray]:
    """A tiny ogbl-citation2 in OGB's on-disk layout (what citation-v2.zip unpacks to, as ogb
    1.3.6's LinkPropPredDataset reads it: raw CSVs, split/time/*.pt dicts of arrays); returns
    the arrays a loader must reproduce."""
    rng = np.random.default_rng(3)
    n, f, e, q, k = 50, 8, 200, 6, 20
    directory = root / "ogbl_citation2"
    src = rng.integers(1, n, e)
    dst = rng.integers(0, src)  # a citation: to an older (lower) id
    features = ((rng.integers(-800, 800, (n, f)) + 0.5) / 8).astype(np.float32)  # CSV-exact
    raw = directory / "raw"
    write_csv_gz(raw / "edge.csv.gz", np.stack([src, dst], 1))
    write_csv_gz(raw / "num-node-list.csv.gz", np.array([[n]]))
    write_csv_gz(raw / "num-edge-list.csv.gz", np.array([[e]]))
    write_csv_gz(raw / "node-feat.csv.gz", features)
    write_csv_gz(raw / "node_year.csv.gz", rng.integers(1990, 2020, (n, 1)))
    expected = {"features": features, "train_src": src, "train_dst": dst}
    split = {"train": {"source_node": src, "target_node": dst}}
    for key, part in (("val", "valid"), ("test", "test")):
        split[part] = {"source_node": rng.integers(0, n, q), "target_node": rng.integers(0, n, q),
                       "target_node_neg": rng.integers(0, n, (q, k))}
        expected |= {f"{key}_src": split[part]["source_node"],
                     f"{key}_dst": split[part]["target_node"],
                     f"{key}_neg": split[part]["target_node_neg"]}
    split_dir = directory / "split" / "time"
    split_dir.mkdir(parents=True)
    for part, arrays in split.items():
        torch.save({key: torch.from_numpy(a) if as_tensors else a for key, a in arrays.items()},
                   split_dir / f"{part}.pt")
    if release:
        (directory / "RELEASE_v1.txt").write_text("")
    return expected


def _assert_matches(d: LinkDataset, expected: dict[str, np.ndarray]) -> None:
    assert isinstance(d, LinkDataset) and d.name == "ogbl-citation2" and d.num_classes == 0
    assert torch.equal(d.features, torch.from_numpy(expected["features"]))
    assert bool((d.labels == -1).all()) and d.num_nodes == 50
    for key, value in expected.items():
        if key != "features":
            assert torch.equal(getattr(d, key), torch.from_numpy(value)), key
    e = d.num_train_edges
    src_of = torch.cat([d.train_src, d.train_dst])
    assert torch.equal(src_of[d.graph.edge_ids], d.graph.indices.to(torch.int64))
    assert torch.equal(src_of[d.reverse_eids][:e], d.train_dst)


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")  # ogb's imports
@pytest.mark.parametrize("as_tensors", [False, True])
def test_ogbl_citation2_through_ogbs_own_reader(tmp_path: Path, no_network: list,
                                                monkeypatch: pytest.MonkeyPatch,
                                                as_tensors: bool) -> None:
    pytest.importorskip("ogb")
    root = tmp_path / "ogb"
    expected = _write_ogbl_citation2(root, as_tensors)
    monkeypatch.setattr("builtins.input", lambda *_: pytest.fail("ogb prompted"))
    d = load("ogbl-citation2", root=root)
    assert d.params == {"source": str(root.resolve())}
    _assert_matches(d, expected)
    monkeypatch.setattr(ogbl_loader, "_convert", lambda *_: pytest.fail("rebuilt"))
    _assert_matches(load("ogbl-citation2", root=root), expected)  # from the cache


def test_missing_ogbl_citation2_names_the_expected_path(tmp_path: Path, no_network: list) -> None:
    with pytest.raises(FileNotFoundError, match=r"ogbl_citation2.*never downloads"):
        load("ogbl-citation2", root=tmp_path / "empty")
    with pytest.raises(FileNotFoundError, match="no-ogb-here"):  # $GNNREPRO_OGB_ROOT
        load("ogbl-citation2")
    assert not (tmp_path / "empty").exists()
    _write_ogbl_citation2(tmp_path / "partial")
    (tmp_path / "partial" / "ogbl_citation2" / "split" / "time" / "test.pt").unlink()
    with pytest.raises(FileNotFoundError, match=r"split/time/\{train,valid,test\}\.pt"):
        load("ogbl-citation2", root=tmp_path / "partial")
    _write_ogbl_citation2(tmp_path / "unreleased", release=False)
    with pytest.raises(FileNotFoundError, match="RELEASE_v1.txt"):
        load("ogbl-citation2", root=tmp_path / "unreleased")


@pytest.mark.parametrize("name, reason", [("ogbl-collab", "edge_neg"), ("ogbl-ppa", "edge_neg"),
                                          ("ogbl-wikikg2", "knowledge-graph")])
def test_other_ogbl_datasets_are_refused_with_the_reason(tmp_path: Path, name: str,
                                                         reason: str) -> None:
    with pytest.raises(NotImplementedError, match=reason):
        load(name, root=tmp_path)
    with pytest.raises(NotImplementedError, match=reason):
        ogbl_loader.load_ogbl(name, root=tmp_path)
