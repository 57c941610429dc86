"""Tests for igb-sim (gnnrepro.datasets.igb_sim) and the streaming feature-file writer it uses:
the streamed build equals the in-memory one, rows regenerate from (seed, id), an interrupted
build resumes (and says so), a full disk is refused before anything is written."""
from __future__ import annotations

import errno
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from gnnrepro import feature_file
from gnnrepro.datasets import cache, igb_sim, load, load_scaled
from gnnrepro.feature_file import FeatureFileWriter, read_header, write_feature_file
from gnnrepro.features import open_feature_store

SCALE = 0.0002  # 2,000 nodes x 1024 float32: an 8 MB feature file


@pytest.fixture(autouse=True)
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GNNREPRO_DATA", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _assert_same(a, b) -> None:
    for (key, x), y in zip(a.arrays().items(), b.arrays().values()):
        assert x.dtype == y.dtype and torch.equal(x, y), key


def test_streamed_build_equals_the_in_memory_one_and_maps_the_feature_file(data_dir) -> None:
    built = load("igb-sim", scale=SCALE, seed=4)
    _assert_same(built, igb_sim.generate(SCALE, 4))
    entry = cache.entry_dir(data_dir, "igb-sim", {"scale": SCALE, "seed": 4})
    names = sorted(p.name for p in entry.iterdir())
    assert "features.gnnf" in names and "features.npy" not in names  # one copy of the rows
    info = read_header(entry / "features.gnnf")
    assert (info.num_nodes, info.dim, info.row_bytes) == (2000, 1024, 4096)
    assert not (entry.parent / f"{entry.name}.partial").exists()
    # a second load maps the same entry and generates nothing
    again = load_scaled("igb-sim", None, SCALE)
    assert again.num_nodes == 2000


def test_counts_splits_and_labels_look_like_igb() -> None:
    d = igb_sim.generate(SCALE, 0)
    n = d.num_nodes
    assert n == round(igb_sim.FULL_NODES * SCALE) and d.num_classes == 19
    assert d.graph.num_edges == 2 * round(n * igb_sim.MEAN_DEGREE / 2)
    assert (d.train_idx.numel(), d.val_idx.numel()) == (round(0.6 * n), round(0.2 * n))
    splits = torch.cat([d.train_idx, d.val_idx, d.test_idx])
    assert torch.equal(splits.sort().values, torch.arange(n))
    assert d.labels.min() >= 0 and d.labels.max() < 19
    # labels follow the latent class except for the label noise
    agree = (d.labels.numpy() == igb_sim.latent_classes(np.arange(n), 0)).mean()
    assert 0.7 < agree < 0.9
    # most edges join nodes of one latent class (homophily), heavy-tailed degrees
    dst = np.repeat(np.arange(n), d.graph.in_degrees().numpy())
    cls = igb_sim.latent_classes(np.arange(n), 0)
    assert (cls[dst] == cls[d.graph.indices.numpy()]).mean() > 0.6
    deg = d.graph.in_degrees().float()
    assert deg.max() > 5 * deg.mean()


def test_rows_regenerate_from_seed_and_id_alone() -> None:
    d = igb_sim.generate(SCALE, 7)
    ids = np.array([1999, 0, 17, 17, 16, 1024, 5])
    assert np.array_equal(igb_sim.feature_rows(ids, 7), d.features[ids].numpy())
    assert not np.array_equal(igb_sim.feature_rows(ids, 8), d.features[ids].numpy())
    # the class signal is there: a row is closer to its class's centroid than to others'
    centroids = igb_sim._centroids(7)
    rows = d.features.numpy()
    nearest = np.argmax(rows @ centroids.T, axis=1)
    classes = igb_sim.latent_classes(np.arange(d.num_nodes), 7)
    largest = np.bincount(classes).max() / d.num_nodes  # ~0.08: the best a guess can do
    assert (nearest == classes).mean() > 3 * largest


def test_an_interrupted_build_resumes_and_says_so(data_dir, monkeypatch, capfd) -> None:
    monkeypatch.setattr(feature_file, "CHUNK_BYTES", 64 * 4096)  # 64 rows a chunk
    monkeypatch.setattr(igb_sim, "_CHECKPOINT_BYTES", 64 * 4096)  # a checkpoint each chunk
    calls = {"n": 0}
    real_append = FeatureFileWriter.append

    def failing_append(self, rows):
        calls["n"] += 1
        if calls["n"] == 6:
            raise KeyboardInterrupt  # killed mid-build
        real_append(self, rows)

    monkeypatch.setattr(FeatureFileWriter, "append", failing_append)
    with pytest.raises(KeyboardInterrupt):
        load("igb-sim", scale=SCALE, seed=1)
    entry = cache.entry_dir(data_dir, "igb-sim", {"scale": SCALE, "seed": 1})
    partial = entry.parent / f"{entry.name}.partial"
    assert not entry.exists() and partial.is_dir()  # nothing to mistake for a dataset
    assert cache.read_entry(entry, "igb-sim", {"scale": SCALE, "seed": 1}) is None
    assert (partial / "features.gnnf.partial.rows").read_text() == str(5 * 64)
    monkeypatch.setattr(FeatureFileWriter, "append", real_append)
    capfd.readouterr()
    resumed = load("igb-sim", scale=SCALE, seed=1)
    err = capfd.readouterr().err
    assert "resuming the interrupted build" in err and "resuming the features at row 320" in err
    _assert_same(resumed, igb_sim.generate(SCALE, 1))
    assert not partial.exists()


def test_a_stale_partial_build_starts_over(data_dir, capfd) -> None:
    entry = cache.entry_dir(data_dir, "igb-sim", {"scale": SCALE, "seed": 2})
    partial = entry.parent / f"{entry.name}.partial"
    partial.mkdir(parents=True)
    (partial / "junk.npy").write_bytes(b"not a graph")
    d = load("igb-sim", scale=SCALE, seed=2)
    assert "starting over" in capfd.readouterr().err
    _assert_same(d, igb_sim.generate(SCALE, 2))


def test_too_little_disk_is_refused_before_writing(data_dir, monkeypatch) -> None:
    real = igb_sim.shutil.disk_usage
    monkeypatch.setattr(igb_sim.shutil, "disk_usage",
                        lambda p: real(p)._replace(free=1_000_000))
    with pytest.raises(OSError, match=r"needs \d+ more bytes of disk .* 1000000 are free") as e:
        load("igb-sim", scale=SCALE, seed=0)
    assert e.value.errno == errno.ENOSPC
    leftovers = [p for p in (data_dir / "igb-sim").iterdir() if not p.name.endswith(".lock")]
    assert leftovers == []


@pytest.mark.parametrize("bad, error", [({"scale": 0.0}, ValueError), ({"scale": "1"}, TypeError),
                                        ({"scale": 1e-6}, ValueError), ({"seed": -1}, ValueError),
                                        ({"seed": 1.5}, TypeError)])
def test_bad_parameters_name_the_argument(bad, error) -> None:
    with pytest.raises(error, match=next(iter(bad))):
        load("igb-sim", **{"scale": SCALE, **bad})


def test_the_disk_store_reads_the_generated_file_and_matches_regenerated_rows() -> None:
    d = load("igb-sim", scale=SCALE, seed=3)
    store = open_feature_store("disk", d, hot_bytes=100 * 4096, cache_bytes=100 * 4096,
                               direct=False)
    ids = torch.randint(0, d.num_nodes, (3000,), generator=torch.Generator().manual_seed(0))
    got = store.gather(ids)
    assert torch.equal(got, torch.from_numpy(igb_sim.feature_rows(ids.numpy(), 3)))
    assert store.path.name == "features.gnnf"  # the dataset's own file: no second copy
    store.close()


# --- the streaming writer ---------------------------------------------------------------------

@pytest.mark.parametrize("pack_block", [None, 512])
def test_writer_resumes_at_its_checkpoint_byte_for_byte(tmp_path: Path, pack_block) -> None:
    table = np.random.default_rng(0).standard_normal((203, 40)).astype(np.float32)
    reference = write_feature_file(tmp_path / "ref.gnnf", table, pack_block=pack_block)
    target, partial = tmp_path / "out.gnnf", tmp_path / "out.partial"
    first = FeatureFileWriter(target, 203, 40, pack_block=pack_block, partial=partial,
                              resume=True)
    step = 3 * first.per_unit
    first.append(table[:step])
    first.checkpoint()
    first.append(table[step:2 * step])  # written, not checkpointed: lost on resume
    first.close()
    second = FeatureFileWriter(target, 203, 40, pack_block=pack_block, partial=partial,
                               resume=True)
    assert second.rows_done == step
    second.append(table[step:])
    info = second.finish()
    assert target.read_bytes() == reference.path.read_bytes()
    assert info.num_nodes == 203 and not partial.exists()
    assert not Path(f"{partial}.rows").exists()


def test_writer_starts_over_on_another_layout_and_checks_its_input(tmp_path: Path) -> None:
    partial = tmp_path / "x.partial"
    w = FeatureFileWriter(tmp_path / "x.gnnf", 100, 8, partial=partial, resume=True)
    w.append(np.zeros((50, 8), np.float32))
    w.checkpoint()
    w.close()
    other = FeatureFileWriter(tmp_path / "x.gnnf", 100, 16, partial=partial, resume=True)
    assert other.rows_done == 0  # the header differs: nothing to resume
    with pytest.raises(ValueError, match="shape"):
        other.append(np.zeros((5, 8), np.float32))
    with pytest.raises(ValueError, match="num_nodes"):
        other.append(np.zeros((101, 16), np.float32))
    with pytest.raises(ValueError, match="0 of 100 rows"):
        other.finish()
    other.abort()
    assert not partial.exists()
    with pytest.raises(TypeError, match="features"):
        FeatureFileWriter(tmp_path / "y.gnnf", 10, 8, torch.int32)
