"""Tests for gnnrepro.datasets: products-sim's statistics, the cache, and OGB loading offline."""
from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch

from helpers import write_csv_gz

from gnnrepro.datasets import Dataset, cache, load, ogb_loader, products_sim
from gnnrepro.datasets.dataset import symmetric_csc
from gnnrepro.datasets.products_sim import generate

SCALE = 0.005  # 12,245 nodes, 618,592 directed edges: builds in ~0.1 s
SIGNAL_SCALE = 0.01  # enough train nodes per class for stable centroids


@pytest.fixture(autouse=True)
def data_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test caches into its own tmp dir and has no default OGB data."""
    monkeypatch.setenv("GNNREPRO_DATA", str(tmp_path / "cache"))
    monkeypatch.setenv("GNNREPRO_OGB_ROOT", str(tmp_path / "no-ogb-here"))
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def sim() -> Dataset:
    return generate(SCALE, 0)


def _assert_same(a: Dataset, b: Dataset) -> None:
    for (key, x), y in zip(a.arrays().items(), b.arrays().values()):
        assert x.dtype == y.dtype and torch.equal(x, y), key


def _edge_keys(d: Dataset) -> tuple[np.ndarray, np.ndarray]:
    """(dst * N + src, src * N + dst) for every stored edge, as int64."""
    n = d.num_nodes
    dst = np.repeat(np.arange(n, dtype=np.int64), d.graph.in_degrees().numpy())
    src = d.graph.indices.numpy().astype(np.int64)
    return dst * n + src, src * n + dst


# --- products-sim ---------------------------------------------------------------------------

def test_products_sim_has_the_scaled_ogbn_products_counts(sim: Dataset) -> None:
    n = round(2_449_029 * SCALE)
    assert sim.num_nodes == n
    assert sim.graph.num_edges == 2 * round(61_859_140 * SCALE)
    assert sim.train_idx.numel() == round(196_615 * SCALE)
    assert sim.val_idx.numel() == round(39_323 * SCALE)
    assert sim.test_idx.numel() == n - sim.train_idx.numel() - sim.val_idx.numel()
    assert sim.features.shape == (n, 100) and sim.features.dtype == torch.float32
    assert sim.num_classes == 47 and sim.name == "products-sim"
    assert sim.labels.dtype == torch.int64
    assert 0 <= int(sim.labels.min()) and int(sim.labels.max()) < 47
    assert sim.graph.indptr.dtype == torch.int64 and sim.graph.indices.dtype == torch.int32
    assert sim.params == {"scale": SCALE, "seed": 0}
    assert sim.nbytes() == (sim.graph.nbytes() + sim.features.numel() * 4
                            + sim.labels.numel() * 8)


def test_products_sim_splits_are_disjoint_and_cover_all_nodes(sim: Dataset) -> None:
    everything = torch.cat([sim.train_idx, sim.val_idx, sim.test_idx])
    assert torch.equal(everything.sort().values, torch.arange(sim.num_nodes))
    for idx in (sim.train_idx, sim.val_idx, sim.test_idx):
        assert idx.dtype == torch.int64


def test_products_sim_graph_is_symmetric_simple_and_sorted(sim: Dataset) -> None:
    forward, backward = _edge_keys(sim)
    n = sim.num_nodes
    assert not np.any(forward // n == forward % n), "self loop"
    assert np.all(np.diff(forward) > 0), "neighbours not strictly ascending (or duplicate edge)"
    assert np.array_equal(forward, np.sort(backward)), "edge u->v without v->u"


def test_products_sim_degrees_are_heavy_tailed(sim: Dataset) -> None:
    degrees = sim.graph.in_degrees().double()
    assert degrees.mean().item() == pytest.approx(50.52, abs=0.01)
    assert degrees.max().item() > 10 * degrees.mean().item()
    assert (degrees <= 5).float().mean().item() > 0.01
    assert degrees.median().item() < degrees.mean().item()


def test_products_sim_is_deterministic_per_seed(sim: Dataset) -> None:
    _assert_same(generate(SCALE, 0), sim)
    other = generate(SCALE, 1)
    assert not torch.equal(other.graph.indices, sim.graph.indices)
    assert not torch.equal(other.features, sim.features)


def test_labels_carry_feature_and_neighbourhood_signal() -> None:
    """Nearest class centroid (fit on train): neighbour-averaged features beat raw ones."""
    sp = pytest.importorskip("scipy.sparse")
    d = generate(SIGNAL_SCALE, 0)
    n, x, y = d.num_nodes, d.features.numpy(), d.labels.numpy()
    adj = sp.csr_matrix((np.ones(d.graph.num_edges, np.float32), d.graph.indices.numpy(),
                         d.graph.indptr.numpy()), shape=(n, n))
    averaged = (adj @ x + x) / (d.graph.in_degrees().numpy() + 1.0)[:, None]

    def centroid_accuracy(z: np.ndarray) -> float:
        train, test = d.train_idx.numpy(), d.test_idx.numpy()
        centroids = np.stack([z[train][y[train] == c].mean(0) for c in range(d.num_classes)])
        dist = ((z[test, None, :] - centroids[None]) ** 2).sum(-1)
        return float((dist.argmin(1) == y[test]).mean())

    raw, neigh = centroid_accuracy(x), centroid_accuracy(averaged)
    assert raw > 0.3, raw  # chance is 1/47
    assert neigh > raw + 0.15, (raw, neigh)


# --- cache ----------------------------------------------------------------------------------

def _counting_generate(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    calls: list[tuple] = []

    def counted(scale: float, seed: int) -> Dataset:
        calls.append((scale, seed))
        return generate(scale, seed)

    monkeypatch.setattr(products_sim, "generate", counted)
    return calls


def test_cache_round_trip_builds_once(sim: Dataset, data_dirs: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counting_generate(monkeypatch)
    first = load("products-sim", scale=SCALE)
    second = load("products-sim", scale=SCALE, seed=0)
    assert calls == [(SCALE, 0)]
    _assert_same(first, sim)
    _assert_same(second, sim)
    entry = data_dirs / "products-sim" / f"scale={SCALE}-seed=0"
    meta = json.loads((entry / "meta.json").read_text())
    assert meta["params"] == {"scale": SCALE, "seed": 0} and meta["num_classes"] == 47
    assert meta["counts"]["num_edges"] == sim.graph.num_edges
    assert second.params == {"scale": SCALE, "seed": 0}
    second.features[0, 0] += 1.0  # copy-on-write: the cache file stays as built
    _assert_same(load("products-sim", scale=SCALE), sim)


def test_graph_arrays_leave_the_file_mapping_when_they_fit(sim: Dataset, data_dirs: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """indptr and indices are read at random by the sampler: a cached load copies them into
    anonymous memory (not the .npy file's pages); the features stay mapped; a graph too large
    for free memory stays mapped too. The values are the same either way."""
    from gnnrepro.datasets import anonymous

    entry = data_dirs / "products-sim" / f"scale={SCALE}-seed=0"

    def mapped_files() -> set[str]:  # this entry's files this process maps
        return {Path(line.split()[-1]).name
                for line in Path("/proc/self/maps").read_text().splitlines()
                if line.split()[-1].startswith(str(entry))}

    load("products-sim", scale=SCALE)  # builds the entry
    loaded = load("products-sim", scale=SCALE)
    _assert_same(loaded, sim)
    names = mapped_files()
    assert "features.npy" in names and "indices.npy" not in names
    loaded.graph.indices[0] += 0  # writable, like the mapping it replaces
    del loaded
    monkeypatch.setattr(anonymous, "fits_in_free_memory", lambda nbytes, fraction=0.25: False)
    kept = load("products-sim", scale=SCALE)
    _assert_same(kept, sim)
    assert "indices.npy" in mapped_files()
    assert not anonymous.fits_in_free_memory(1 << 62)
    array = np.arange(10, dtype=np.int32).reshape(2, 5)
    copy = anonymous.anonymous_copy(array)
    assert copy.dtype == array.dtype and np.array_equal(copy, array)
    assert anonymous.anonymous_copy(np.empty(0, dtype=np.int64)).shape == (0,)


def test_root_argument_overrides_the_cache_dir(tmp_path: Path, data_dirs: Path) -> None:
    load("products-sim", root=tmp_path / "elsewhere", scale=SCALE, seed=3)
    entry = tmp_path / "elsewhere" / "products-sim" / f"scale={SCALE}-seed=3"
    assert (entry / "meta.json").is_file()
    assert not data_dirs.exists()


@pytest.mark.parametrize("damage", ["no_meta", "truncated_array", "stale_format"])
def test_partial_or_corrupt_entry_is_rebuilt(sim: Dataset, data_dirs: Path, damage: str,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    entry = data_dirs / "products-sim" / f"scale={SCALE}-seed=0"
    load("products-sim", scale=SCALE)
    leftover = entry.parent / f".{entry.name}.tmp-interrupted"
    leftover.mkdir()
    (leftover / "indices.npy").write_bytes(b"half a file")
    if damage == "no_meta":
        (entry / "meta.json").unlink()
    elif damage == "truncated_array":
        path = entry / "indices.npy"
        path.write_bytes(path.read_bytes()[:1000])
    else:
        meta = json.loads((entry / "meta.json").read_text())
        meta["format_version"] = cache.FORMAT_VERSION - 1
        (entry / "meta.json").write_text(json.dumps(meta))
    calls = _counting_generate(monkeypatch)
    _assert_same(load("products-sim", scale=SCALE), sim)
    assert calls == [(SCALE, 0)]
    assert leftover.is_dir()  # ignored, not mistaken for the entry


def test_interrupted_write_leaves_no_entry(data_dirs: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    real_save = np.save
    saved: list[str] = []

    def crash_on_third(path: Path, arr: np.ndarray) -> None:
        if len(saved) == 2:
            raise KeyboardInterrupt
        saved.append(str(path))
        real_save(path, arr)

    monkeypatch.setattr(np, "save", crash_on_third)
    with pytest.raises(KeyboardInterrupt):
        load("products-sim", scale=SCALE)
    assert saved and not list((data_dirs / "products-sim").iterdir())


def test_builder_that_loses_the_race_uses_the_winners_entry(sim: Dataset) -> None:
    params = {"scale": SCALE, "seed": 0}

    def slow_builder() -> Dataset:
        # Another process finishes the same entry while this one is still building.
        cache.load_or_build("products-sim", params, lambda: sim)
        return generate(SCALE, 1)

    _assert_same(cache.load_or_build("products-sim", params, slow_builder), sim)


# --- arguments ------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, error, word", [
    ({"scale": 0}, ValueError, "scale"),
    ({"scale": -0.5}, ValueError, "scale"),
    ({"scale": float("nan")}, ValueError, "scale"),
    ({"scale": 1e-6}, ValueError, "scale"),
    ({"scale": "0.1"}, TypeError, "scale"),
    ({"seed": 1.5}, TypeError, "seed"),
    ({"seed": True}, TypeError, "seed"),
    ({"seed": -1}, ValueError, "seed"),
    ({"scael": 0.1}, TypeError, "scael"),
])
def test_bad_products_sim_arguments_are_named(kwargs: dict, error: type, word: str) -> None:
    with pytest.raises(error, match=word):
        load("products-sim", **kwargs)


def test_unknown_dataset_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="products-sim.*ogbn-arxiv"):
        load("ogbn-prodcts")
    with pytest.raises(TypeError, match="scale"):
        load("ogbn-arxiv", scale=0.5)


def test_symmetric_csc_adds_reverse_edges_and_dedupes() -> None:
    src, dst = np.array([0, 0, 1, 2, 3, 3]), np.array([1, 1, 0, 2, 1, 0])
    g = symmetric_csc(src, dst, 5)
    assert g.indptr.tolist() == [0, 2, 4, 5, 7, 7]
    assert g.indices.tolist() == [1, 3, 0, 3, 2, 0, 1]  # 2->2 kept once, node 4 isolated
    assert g.indices.dtype == torch.int32
    with pytest.raises(ValueError, match="num_nodes"):
        symmetric_csc(src, dst, 3)


# --- OGB ------------------------------------------------------------------------------------

def _write_ogb_raw(root: Path, name: str, release: bool = True) -> dict[str, np.ndarray]:
    """A tiny `name` in OGB's raw on-disk layout; returns what a loader must reproduce."""
    rng = np.random.default_rng(7)
    n, f = 40, 6
    directory = root / name.replace("-", "_")
    layout = ogb_loader._LAYOUTS[name]
    src = rng.integers(0, n, 150)
    dst = (src + rng.integers(1, n, 150)) % n  # no self loops
    if name == "ogbn-products":  # stored once per undirected pair; ogb adds the reverse
        src, dst = np.unique(np.sort(np.stack([src, dst]), axis=0), axis=1)
    else:  # directed, with a repeated edge and a reciprocated one to dedupe
        src = np.concatenate([src, src[:1], dst[1:2]])
        dst = np.concatenate([dst, dst[:1], src[1:2]])
    features = (rng.integers(-800, 800, (n, f)) + 0.5) / 8  # exact in float32 and in CSV
    labels = rng.integers(0, layout.num_classes, n).astype(np.float64)
    perm = rng.permutation(n)
    split = {"train": np.sort(perm[:20]), "valid": np.sort(perm[20:28]),
             "test": np.sort(perm[28:])}
    raw = directory / "raw"
    raw.mkdir(parents=True)
    if layout.binary:
        labels[rng.random(n) < 0.3] = np.nan
        np.savez_compressed(raw / "data.npz", edge_index=np.stack([src, dst]),
                            node_feat=features.astype(np.float32),
                            node_year=rng.integers(2000, 2020, (n, 1)),
                            num_nodes_list=np.array([n]), num_edges_list=np.array([src.size]))
        np.savez_compressed(raw / "node-label.npz", node_label=labels[:, None])
    else:
        write_csv_gz(raw / "edge.csv.gz", np.stack([src, dst], axis=1))
        write_csv_gz(raw / "num-node-list.csv.gz", np.array([[n]]))
        write_csv_gz(raw / "num-edge-list.csv.gz", np.array([[src.size]]))
        write_csv_gz(raw / "node-feat.csv.gz", features)
        write_csv_gz(raw / "node-label.csv.gz", labels.astype(np.int64)[:, None])
        write_csv_gz(raw / "node_year.csv.gz", rng.integers(2000, 2020, (n, 1)))
    for key, idx in split.items():
        write_csv_gz(directory / "split" / layout.split / f"{key}.csv.gz", idx[:, None])
    if release:
        (directory / f"RELEASE_v{layout.version}.txt").write_text("")
    pairs = np.unique(np.concatenate([np.stack([dst, src], 1), np.stack([src, dst], 1)]), axis=0)
    return {"edges": pairs, "features": features.astype(np.float32),
            "labels": np.where(np.isnan(labels), -1, labels).astype(np.int64), **split}


def _assert_matches_raw(d: Dataset, expected: dict[str, np.ndarray], name: str) -> None:
    assert d.name == name and d.num_classes == ogb_loader._LAYOUTS[name].num_classes
    assert d.graph.indices.dtype == torch.int32
    forward, _ = _edge_keys(d)
    n = d.num_nodes
    edges = np.stack([forward // n, forward % n], 1)  # (dst, src), sorted
    assert np.array_equal(edges, expected["edges"])
    assert torch.equal(d.features, torch.from_numpy(expected["features"]))
    assert torch.equal(d.labels, torch.from_numpy(expected["labels"]))
    for split, key in ((d.train_idx, "train"), (d.val_idx, "valid"), (d.test_idx, "test")):
        assert torch.equal(split, torch.from_numpy(expected[key]))


@pytest.mark.parametrize("name", ["ogbn-arxiv", "ogbn-products", "ogbn-papers100M"])
def test_ogb_round_trip_through_the_real_ogb_reader(name: str, tmp_path: Path, no_network: list,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "ogb"
    expected = _write_ogb_raw(root, name)
    monkeypatch.setattr("builtins.input", lambda *_: pytest.fail("ogb prompted"))
    d = load(name, root=root)
    _assert_matches_raw(d, expected, name)
    assert d.params == {"source": str(root.resolve())}
    if name == "ogbn-papers100M":
        assert (d.labels == -1).any()

    # Second load: served by the cache, ogb is not consulted.
    monkeypatch.setattr(ogb_loader, "_convert", lambda *_: pytest.fail("rebuilt"))
    _assert_matches_raw(load(name, root=root), expected, name)


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
def test_ogb_processed_pickle_loads_under_weights_only_default(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_network: list) -> None:
    """ogb re-reads its processed pickle with torch.load, which torch >= 2.6 refuses by default."""
    root = tmp_path / "ogb"
    expected = _write_ogb_raw(root, "ogbn-arxiv")
    load("ogbn-arxiv", root=root)
    processed = root / "ogbn_arxiv" / "processed" / "data_processed"
    assert processed.is_file()
    if tuple(int(p) for p in torch.__version__.split(".")[:2]) >= (2, 6):
        with pytest.raises(pickle.UnpicklingError):
            torch.load(processed)
    (root / "ogbn_arxiv" / "raw" / "edge.csv.gz").unlink()  # only the pickle is left to read
    monkeypatch.setenv("GNNREPRO_DATA", str(tmp_path / "fresh-cache"))
    _assert_matches_raw(load("ogbn-arxiv", root=root), expected, "ogbn-arxiv")


def test_missing_ogb_dataset_raises_without_network(tmp_path: Path, no_network: list) -> None:
    with pytest.raises(FileNotFoundError, match="ogbn_arxiv.*never downloads"):
        load("ogbn-arxiv", root=tmp_path / "empty")
    with pytest.raises(FileNotFoundError, match="no-ogb-here"):  # $GNNREPRO_OGB_ROOT
        load("ogbn-papers100M")
    assert not (tmp_path / "empty").exists()


def test_ogb_copy_without_release_file_raises_instead_of_prompting(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_network: list) -> None:
    _write_ogb_raw(tmp_path / "ogb", "ogbn-products", release=False)
    monkeypatch.setattr("builtins.input", lambda *_: pytest.fail("ogb prompted"))
    with pytest.raises(FileNotFoundError, match="RELEASE_v1.txt"):
        load("ogbn-products", root=tmp_path / "ogb")
