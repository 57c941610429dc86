"""Tests for papers-sim (gnnrepro.datasets.papers_sim), the ogbn-papers100M stand-in built
straight into its cache entry: papers100M's counts and dtypes scaled down, heavy-tailed
in-degrees, homophilous edges and class-signal rows that regenerate from (seed, id), the same
arrays whatever the roots or thread count, an interrupted build resumed, a full disk refused
with the bytes named, and the fused sampler running on the int32 graph."""
from __future__ import annotations

import errno
from pathlib import Path

import numpy as np
import pytest
import torch

from gnnrepro import feature_file
from gnnrepro.datasets import KNOWN_DATASETS, cache, load, load_scaled, papers_sim, streamed
from gnnrepro.feature_file import FeatureFileWriter
from gnnrepro.features import open_feature_store
from gnnrepro.sampling import FusedSampler

SCALE = 1e-4  # 11,106 nodes, 161,569 edges, 128 float32 features: a 5.7 MB feature file
PARAMS = {"scale": SCALE, "seed": 0}


@pytest.fixture(autouse=True)
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GNNREPRO_DATA", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory):
    return load("papers-sim", root=tmp_path_factory.mktemp("papers"), **PARAMS)


def _assert_same(a, b) -> None:
    for (key, x), y in zip(a.arrays().items(), b.arrays().values()):
        assert x.dtype == y.dtype and torch.equal(x, y), key


def _ends(d) -> tuple[np.ndarray, np.ndarray]:
    """(destination, source) of every edge, int64."""
    dst = np.repeat(np.arange(d.num_nodes), d.graph.in_degrees().numpy())
    return dst, d.graph.indices.numpy().astype(np.int64)


def test_counts_and_bytes_are_papers100m_scaled() -> None:
    assert papers_sim.counts(1.0) == (111_059_956, 1_615_685_872, 1_207_179, 125_265, 214_338)
    nodes, edges, train, val, test = papers_sim.counts(SCALE)
    assert nodes == 11_106 and abs(edges / nodes - 14.548) < 0.001
    assert (train, val, test) == (121, 13, 21)  # 1.4% labelled, as in papers100M
    gb = {k: v / 1e9 for k, v in papers_sim.array_bytes(1.0).items()}
    assert round(gb["indptr"], 2) == 0.89 and round(gb["indices"], 2) == 6.46
    assert round(gb["features"], 1) == 56.9 and 64 < sum(gb.values()) < 66
    assert "papers-sim" in KNOWN_DATASETS


def test_the_built_entry_has_papers100m_shapes_and_compact_dtypes(built) -> None:
    d = built
    nodes, edges, train, val, test = papers_sim.counts(SCALE)
    assert (d.num_nodes, d.graph.num_edges, d.num_features, d.num_classes) == (nodes, edges,
                                                                               128, 172)
    assert d.graph.indptr.dtype == torch.int64 and d.graph.indices.dtype == torch.int32
    assert d.features.dtype == torch.float32 and d.labels.dtype == torch.int64
    assert 0 <= int(d.labels.min()) and int(d.labels.max()) < 172
    assert [s.numel() for s in (d.train_idx, d.val_idx, d.test_idx)] == [train, val, test]
    splits = torch.cat([d.train_idx, d.val_idx, d.test_idx])
    assert splits.unique().numel() == splits.numel() and int(splits.max()) < nodes
    assert all(bool((s[1:] > s[:-1]).all()) for s in (d.train_idx, d.val_idx, d.test_idx))
    # directed, simple, neighbours ascending per destination
    dst, src = _ends(d)
    keys = dst * nodes + src
    assert np.all(np.diff(keys) > 0) and not np.any(dst == src)
    # the entry holds one copy of the rows (the feature file), and a second load maps it
    entry = cache.entry_dir(cache.default_root(), "papers-sim", PARAMS)
    first = load_scaled("papers-sim", None, SCALE)
    assert (entry / cache.FEATURE_FILE).exists() and not (entry / "features.npy").exists()
    assert not entry.with_name(entry.name + ".partial").exists()
    mtime = (entry / "meta.json").stat().st_mtime_ns
    _assert_same(load_scaled("papers-sim", None, SCALE), first)
    assert (entry / "meta.json").stat().st_mtime_ns == mtime


def test_in_degrees_average_papers100m_and_are_heavy_tailed(built) -> None:
    deg = built.graph.in_degrees().numpy()
    assert abs(deg.mean() - 14.55) < 0.01  # exact by construction
    assert deg.max() > 50 * deg.mean() and np.percentile(deg, 99) > 5 * deg.mean()
    assert np.median(deg) < deg.mean()  # skewed: most nodes below the mean
    popularity = np.bincount(built.graph.indices.numpy(), minlength=built.num_nodes)
    assert popularity.max() > 10 * popularity.mean()  # popular sources too


def test_edges_are_homophilous_and_rows_carry_the_class(built) -> None:
    dst, src = _ends(built)
    classes = papers_sim.latent_classes(np.arange(built.num_nodes), 0)
    assert (classes[dst] == classes[src]).mean() > 0.4  # vs ~0.01 for random edges
    labels = built.labels.numpy()
    assert (labels[dst] == labels[src]).mean() > 0.2 > 20 / 172
    assert 0.75 < (labels == classes).mean() < 0.9  # label noise
    nearest = np.argmax(built.features.numpy() @ papers_sim.ROWS.centroids(0).T, axis=1)
    largest = np.bincount(classes).max() / built.num_nodes  # ~0.034: the best a guess does
    assert (nearest == classes).mean() > 10 * largest


def test_rows_regenerate_from_seed_and_id_alone(built) -> None:
    ids = np.array([11_105, 0, 63, 64, 64, 5000, 17])
    rows = built.features[torch.from_numpy(ids)].numpy()
    assert np.array_equal(papers_sim.feature_rows(ids, 0), rows)
    assert not np.array_equal(papers_sim.feature_rows(ids, 1), rows)
    every = papers_sim.feature_rows(np.arange(built.num_nodes), 0)
    assert np.array_equal(every, built.features.numpy())


def test_same_arrays_in_two_roots_whatever_the_thread_count(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(papers_sim, "CHUNK_NODES", 2048)  # 6 edge chunks
    many = load("papers-sim", root=tmp_path / "a", scale=SCALE, seed=5)
    monkeypatch.setattr(streamed, "worker_count", lambda cap=None: 1)
    one = load("papers-sim", root=tmp_path / "b", scale=SCALE, seed=5)
    _assert_same(many, one)
    other = load("papers-sim", root=tmp_path / "b", scale=SCALE, seed=6)
    assert not torch.equal(other.graph.indices, one.graph.indices)


def test_an_interrupted_build_resumes_its_edges_then_its_features(
        tmp_path, monkeypatch, capfd) -> None:
    monkeypatch.setattr(papers_sim, "CHUNK_NODES", 1024)  # 11 edge chunks
    monkeypatch.setattr(papers_sim, "_CHECKPOINT_BYTES", 1)  # progress after every chunk
    monkeypatch.setattr(feature_file, "CHUNK_BYTES", 64 * 512)  # 64 rows a feature chunk
    reference = load("papers-sim", root=tmp_path / "ref", scale=SCALE, seed=1)
    real_chunk, real_append = papers_sim._chunk_indices, FeatureFileWriter.append
    calls = {"edges": 0, "rows": 0}

    def failing_chunk(*args):
        calls["edges"] += 1
        if calls["edges"] == 5:
            raise KeyboardInterrupt  # killed mid-graph
        return real_chunk(*args)

    def failing_append(self, rows):
        calls["rows"] += 1
        if calls["rows"] == 6:
            raise KeyboardInterrupt  # killed mid-features
        real_append(self, rows)

    monkeypatch.setattr(papers_sim, "_chunk_indices", failing_chunk)
    with pytest.raises(KeyboardInterrupt):
        load("papers-sim", scale=SCALE, seed=1)
    entry = cache.entry_dir(cache.default_root(), "papers-sim", {"scale": SCALE, "seed": 1})
    partial = entry.with_name(entry.name + ".partial")
    assert not entry.exists()  # nothing to mistake for a dataset
    assert streamed.read_progress(partial, {"scale": SCALE, "seed": 1})["chunks_done"] == 4
    monkeypatch.setattr(papers_sim, "_chunk_indices", real_chunk)
    monkeypatch.setattr(FeatureFileWriter, "append", failing_append)
    capfd.readouterr()
    with pytest.raises(KeyboardInterrupt):
        load("papers-sim", scale=SCALE, seed=1)
    err = capfd.readouterr().err
    assert "resuming the interrupted build" in err and "at edge chunk 4 of 11" in err
    assert (partial / "features.gnnf.partial.rows").read_text() == str(5 * 64)
    monkeypatch.setattr(FeatureFileWriter, "append", real_append)
    resumed = load("papers-sim", scale=SCALE, seed=1)
    err = capfd.readouterr().err
    assert "(graph already written)" in err and "resuming the features at row 320" in err
    _assert_same(resumed, reference)
    assert not partial.exists()


def test_too_little_disk_is_refused_with_the_bytes_named(data_dir, monkeypatch) -> None:
    real = streamed.shutil.disk_usage
    monkeypatch.setattr(streamed.shutil, "disk_usage",
                        lambda p: real(p)._replace(free=1_000_000))
    need = sum(papers_sim.array_bytes(SCALE).values())
    with pytest.raises(OSError, match=r"needs \d+ more bytes of disk .* 1000000 are free.*"
                                      r"igb-sim") as e:
        load("papers-sim", scale=SCALE, seed=0)
    assert e.value.errno == errno.ENOSPC and str(need + 1024) in str(e.value)
    leftovers = [p for p in (data_dir / "papers-sim").iterdir() if not p.name.endswith(".lock")]
    assert leftovers == []


@pytest.mark.parametrize("bad, error", [({"scale": 0.0}, ValueError), ({"scale": "1"}, TypeError),
                                        ({"scale": 1e-6}, ValueError), ({"seed": -1}, ValueError),
                                        ({"seed": 1.5}, TypeError)])
def test_bad_parameters_name_the_argument(bad, error) -> None:
    with pytest.raises(error, match=next(iter(bad))):
        load("papers-sim", **{**PARAMS, **bad})


def test_the_fused_sampler_samples_the_int32_graph(built) -> None:
    g = built.graph
    batch = FusedSampler(g, [10, 5], seed=0).sample(built.train_idx)
    assert len(batch.blocks) == 2
    seeds_block = batch.blocks[-1]
    assert torch.equal(seeds_block.src_nodes[:built.train_idx.numel()], built.train_idx)
    # every sampled edge is an in-edge of the graph, at most `fanout` per seed
    deg = seeds_block.indptr[1:] - seeds_block.indptr[:-1]
    assert bool((deg == torch.clamp(g.in_degrees()[built.train_idx], max=5)).all())
    src = seeds_block.src_nodes[seeds_block.indices.long()]
    dst = torch.repeat_interleave(built.train_idx, deg)
    for s, t in zip(src.tolist()[:200], dst.tolist()[:200]):
        assert s in g.indices[g.indptr[t]:g.indptr[t + 1]].tolist()


def test_a_stale_partial_build_starts_over(data_dir, capfd) -> None:
    entry = cache.entry_dir(data_dir, "papers-sim", PARAMS)
    partial = entry.with_name(entry.name + ".partial")
    partial.mkdir(parents=True)
    (partial / "indices.npy").write_bytes(b"not a graph")
    d = load("papers-sim", **PARAMS)
    assert "starting over" in capfd.readouterr().err
    assert d.graph.num_edges == papers_sim.counts(SCALE)[1]


def test_the_disk_store_reads_the_generated_file() -> None:
    d = load("papers-sim", scale=SCALE, seed=3)
    store = open_feature_store("disk", d, hot_bytes=100 * 512, cache_bytes=100 * 512,
                               direct=False)
    ids = torch.randint(0, d.num_nodes, (3000,), generator=torch.Generator().manual_seed(0))
    assert torch.equal(store.gather(ids),
                       torch.from_numpy(papers_sim.feature_rows(ids.numpy(), 3)))
    assert store.path.name == "features.gnnf"  # the dataset's own file: no second copy
    store.close()
