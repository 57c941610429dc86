"""igbh-sim (MLPerf's IGBH schema, float16 feature files per type) and typed datasets read
through the disk and mmap stores: the same rows and batches as from memory."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from gnnrepro.datasets import TypedDataset, igbh_sim, load, mag_sim, streamed
from gnnrepro.features.factory import open_feature_store, typed_feature_file
from gnnrepro.pipeline import Loader
from gnnrepro.sampling import FusedSampler

SCALE = 0.001  # 10,000 papers and 10,292 authors; 41 MB of float16 features


@pytest.fixture(autouse=True)
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GNNREPRO_DATA", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def sim() -> TypedDataset:
    return igbh_sim.generate(SCALE)


def test_schema_is_mlperfs(sim: TypedDataset) -> None:
    g = sim.graph
    assert g.node_types == list(igbh_sim.NODE_TYPES)
    assert set(g.canonical_relations) == set(igbh_sim.RELATIONS)
    assert {r[1] for r in g.canonical_relations} >= {
        "cites", "written_by", "affiliated_to", "topic", "published", "venue",
        "rev_written_by", "rev_affiliated_to", "rev_topic", "rev_published", "rev_venue"}
    assert sim.num_classes == 2983 and sim.target == "paper"
    assert all(x.dtype == torch.float16 and x.shape[1] == 1024 for x in sim.features.values())
    assert set(sim.features) == set(igbh_sim.NODE_TYPES)  # every type has features
    nodes, edges = igbh_sim.counts(SCALE)
    assert g.num_nodes == nodes
    for rel, n in edges.items():
        if rel == igbh_sim.CITES:  # symmetric with a self-loop per paper
            assert g.num_edges[rel] == 2 * n + nodes["paper"]
        else:
            assert g.num_edges[rel] == g.num_edges[(rel[2], f"rev_{rel[1]}", rel[0])] == n


def test_cites_is_symmetric_with_self_loops(sim: TypedDataset) -> None:
    csc = sim.graph.relations[igbh_sim.CITES]
    dst = np.repeat(np.arange(csc.num_nodes), csc.in_degrees().numpy())
    src = csc.indices.numpy().astype(np.int64)
    n = csc.num_nodes
    forward = np.sort(dst * n + src)
    assert np.array_equal(forward, np.sort(src * n + dst))
    assert np.count_nonzero(src == dst) == n


def test_reverses_mirror_their_relations(sim: TypedDataset) -> None:
    for rel in igbh_sim.PLANTED:
        if rel == igbh_sim.CITES:
            continue
        a, b = sim.graph.relations[rel], sim.graph.relations[(rel[2], f"rev_{rel[1]}", rel[0])]
        pairs_a = np.repeat(np.arange(a.num_nodes), a.in_degrees().numpy()) * a.num_src_nodes \
            + a.indices.numpy()
        pairs_b = b.indices.numpy().astype(np.int64) * a.num_src_nodes \
            + np.repeat(np.arange(b.num_nodes), b.in_degrees().numpy())
        assert np.array_equal(np.sort(pairs_a), np.sort(pairs_b)), rel


def test_rows_regenerate_and_relations_share_classes(sim: TypedDataset) -> None:
    for t in ("paper", "author", "conference"):
        ids = np.array([0, sim.graph.num_nodes[t] - 1])
        assert np.array_equal(igbh_sim.feature_rows(t, ids, 0), sim.features[t][ids].numpy())
    # written_by is planted: an edge joins a paper and an author of one class far more often
    # than chance (2,983 classes)
    csc = sim.graph.relations[("paper", "written_by", "author")]
    author = np.repeat(np.arange(csc.num_nodes), csc.in_degrees().numpy())
    same = (igbh_sim.latent_classes("paper", csc.indices.numpy(), 0)
            == igbh_sim.latent_classes("author", author, 0)).mean()
    assert same > 0.3


def test_splits_and_labels(sim: TypedDataset) -> None:
    n = sim.graph.num_nodes["paper"]
    sizes = [s.numel() for s in (sim.train_idx, sim.val_idx, sim.test_idx)]
    assert sizes == [round(n * 0.6), round(n * 0.005), round(n * 0.2)]
    assert torch.cat([sim.train_idx, sim.val_idx, sim.test_idx]).unique().numel() == sum(sizes)
    assert int(sim.labels.min()) >= 0 and int(sim.labels.max()) < 2983


def test_the_cached_entry_equals_the_generated_one_and_resumes(
        sim: TypedDataset, data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = streamed.write_features

    def fail_on_author(partial: Path, name: str, *args, **kwargs) -> None:
        calls.append(name)
        if name.endswith("author") and calls.count(name) == 1:
            raise KeyboardInterrupt
        real(partial, name, *args, **kwargs)

    monkeypatch.setattr(streamed, "write_features", fail_on_author)
    with pytest.raises(KeyboardInterrupt):
        load("igbh-sim", scale=SCALE)
    cached = load("igbh-sim", scale=SCALE)  # resumes: the graph and paper rows are kept
    assert calls.count("igbh-sim paper") == 1 and calls.count("igbh-sim author") == 2
    for t in sim.features:
        assert torch.equal(cached.features[t], sim.features[t]), t
    for rel, csc in sim.graph.relations.items():
        assert torch.equal(cached.graph.relations[rel].indices, csc.indices), rel
    assert torch.equal(cached.labels, sim.labels) and torch.equal(cached.test_idx, sim.test_idx)


@pytest.mark.parametrize("kind", ["disk", "mmap"])
def test_typed_disk_stores_read_the_rows_memory_holds(kind: str) -> None:
    data = load("igbh-sim", scale=SCALE)
    store = open_feature_store(kind, data, queue_depth=8) if kind == "disk" else \
        open_feature_store(kind, data)
    assert store.dtype == torch.float16 and set(store.node_types) == set(data.features)
    gen = torch.Generator().manual_seed(0)
    ids = {t: torch.randint(0, n, (300,), generator=gen)
           for t, n in data.graph.num_nodes.items()}
    rows = store.split_rows(store.gather(ids), ids)
    for t, x in rows.items():
        assert torch.equal(x, data.features[t][ids[t]]), t


def test_a_typed_loader_from_disk_gives_the_batches_of_memory() -> None:
    data = load("mag-sim", scale=0.01)  # float32 .npy features: converted to a feature file
    assert typed_feature_file(data, "paper").name == "feat-paper.gnnf"  # 512-byte rows: dense
    sampler = FusedSampler(data.graph, [3, 2], seed=1, target="paper")
    got = {}
    for kind in ("memory", "disk"):
        store = open_feature_store(kind, data)
        with Loader(data, sampler, "cpu", 256, seed=2, feature_store=store, prefetch=2) as loader:
            got[kind] = [(b.seeds["paper"], {t: x.clone() for t, x in b.x.items()})
                         for _, b in zip(range(3), loader)]
    for (s, x), (s2, x2) in zip(got["memory"], got["disk"]):
        assert torch.equal(s, s2) and x.keys() == x2.keys()
        assert all(torch.equal(x[t], x2[t]) for t in x)


def test_bad_requests_name_the_argument() -> None:
    data = mag_sim.generate(0.01)  # not cached: no files to read from disk
    with pytest.raises(ValueError, match="no cache entry"):
        open_feature_store("disk", data)
    with pytest.raises(ValueError, match="lmdb"):
        open_feature_store("lmdb", data)
    with pytest.raises(ValueError, match="hot_bytes"):
        open_feature_store("disk", data, hot_bytes=1 << 20)
    with pytest.raises(ValueError, match="scale"):
        load("igbh-sim", scale=1e-6)
