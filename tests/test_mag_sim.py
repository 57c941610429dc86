"""Tests for the heterogeneous datasets: mag-sim's shape, model and determinism, the typed cache,
and ogbn-mag read offline from OGB's raw layout."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from helpers import write_csv_gz

from gnnrepro.datasets import (KNOWN_DATASETS, SCALED_DATASETS, TYPED_DATASETS, TypedDataset,
                               load, load_scaled, mag_sim, ogb_loader, ogb_mag, typed_cache)
from gnnrepro.datasets.mag_schema import NODE_TYPES, RELATIONS, reverse
from gnnrepro.graph import CSCGraph
from gnnrepro.typed_graph import TypedGraph

SCALE = 0.01  # 7,364 papers, 11,346 authors, 87 institutions, 600 fields: built in ~0.3 s
SIGNAL_SCALE = 0.02  # enough training papers per venue for stable centroids
ENTRY = f"mag-sim/scale={SCALE}-seed=0"


@pytest.fixture(autouse=True)
def data_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test caches into its own tmp dir and has no default OGB data."""
    monkeypatch.setenv("GNNREPRO_DATA", str(tmp_path / "cache"))
    monkeypatch.setenv("GNNREPRO_OGB_ROOT", str(tmp_path / "no-ogb-here"))
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def sim() -> TypedDataset:
    return mag_sim.generate(SCALE, 0)


def _assert_same(a: TypedDataset, b: TypedDataset) -> None:
    assert (a.name, a.target, a.num_classes, a.params) == (b.name, b.target, b.num_classes,
                                                          b.params)
    assert a.graph.num_nodes == b.graph.num_nodes
    assert a.graph.canonical_relations == b.graph.canonical_relations
    for rel, csc in a.graph.relations.items():
        other = b.graph.relations[rel]
        for x, y in ((csc.indptr, other.indptr), (csc.indices, other.indices)):
            assert x.dtype == y.dtype and torch.equal(x, y), rel
    assert a.features.keys() == b.features.keys()
    for t in a.features:
        assert a.features[t].dtype == b.features[t].dtype
        assert torch.equal(a.features[t], b.features[t]), t
    for key in ("labels", "train_idx", "val_idx", "test_idx"):
        assert torch.equal(getattr(a, key), getattr(b, key)), key


def _pairs(csc: CSCGraph) -> np.ndarray:
    """[E, 2] (dst, src) of every edge, in CSC order."""
    dst = np.repeat(np.arange(csc.num_nodes), csc.in_degrees().numpy())
    return np.stack([dst, csc.indices.numpy().astype(np.int64)], 1)


# --- mag-sim ------------------------------------------------------------------------------

def test_mag_sim_has_the_scaled_ogbn_mag_counts(sim: TypedDataset) -> None:
    nodes, edges, (train, val, test) = mag_sim.counts(SCALE)
    assert nodes == {"paper": 7364, "author": 11346, "institution": 87, "field_of_study": 600}
    g = sim.graph
    assert g.num_nodes == nodes and g.node_types == list(NODE_TYPES)
    assert g.canonical_relations == [*RELATIONS, *map(reverse, RELATIONS)]
    assert g.num_edges == {**edges, **{reverse(rel): e for rel, e in edges.items()}}
    assert edges[("author", "writes", "paper")] == round(7_145_660 * SCALE)
    assert g.index_dtype == torch.int32
    assert all(csc.indptr.dtype == torch.int64 for csc in g.relations.values())
    assert sim.features.keys() == {"paper"} and sim.featureless_types == list(NODE_TYPES[1:])
    assert sim.features["paper"].shape == (nodes["paper"], 128)
    assert sim.features["paper"].dtype == torch.float32
    assert sim.target == "paper" and sim.num_classes == 349 and sim.name == "mag-sim"
    assert sim.labels.dtype == torch.int64 and 0 <= int(sim.labels.min())
    assert int(sim.labels.max()) < 349
    assert (sim.train_idx.numel(), sim.val_idx.numel(), sim.test_idx.numel()) == (train, val, test)
    everything = torch.cat([sim.train_idx, sim.val_idx, sim.test_idx]).sort().values
    assert torch.equal(everything, torch.arange(nodes["paper"]))
    assert sim.params == {"scale": SCALE, "seed": 0}


def test_scale_one_is_ogbn_mags_size() -> None:
    nodes, edges, splits = mag_sim.counts(1.0)
    assert nodes == {"paper": 736_389, "author": 1_134_649, "institution": 8_740,
                     "field_of_study": 59_965}
    assert sorted(edges.values()) == [1_043_998, 5_416_271, 7_145_660, 7_505_078]
    assert splits == (629_571, 64_879, 41_939)
    assert 0.55e9 < sum(mag_sim.array_bytes(1.0).values()) < 0.65e9


def test_relations_are_valid_simple_and_sorted(sim: TypedDataset) -> None:
    g = sim.graph
    TypedGraph(g.num_nodes, {rel: CSCGraph(c.indptr, c.indices, num_src_nodes=c.num_src_nodes)
                             for rel, c in g.relations.items()})  # validates every relation
    for rel, csc in g.relations.items():
        pairs = _pairs(csc)
        keys = pairs[:, 0] * csc.num_src_nodes + pairs[:, 1]
        assert np.all(np.diff(keys) > 0), f"{rel}: neighbours not strictly ascending"
    cites = _pairs(g.relations[("paper", "cites", "paper")])
    assert not np.any(cites[:, 0] == cites[:, 1]), "a paper cites itself"


def _sorted_rows(pairs: np.ndarray) -> np.ndarray:
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]


def test_reverses_are_exact_reverses(sim: TypedDataset) -> None:
    for rel in RELATIONS:
        forward = _pairs(sim.graph.relations[rel])
        backward = _pairs(sim.graph.relations[reverse(rel)])[:, ::-1]
        assert np.array_equal(_sorted_rows(forward), _sorted_rows(backward)), rel


def test_degrees_are_heavy_tailed(sim: TypedDataset) -> None:
    for name in ("writes", "rev_writes", "cites", "rev_has_topic", "has_topic"):
        degrees = sim.graph.relations[sim.graph.relation(name)].in_degrees().double()
        assert degrees.max() > 8 * degrees.mean(), name


def test_split_is_by_year(sim: TypedDataset) -> None:
    years = mag_sim.paper_years(SCALE, 0)
    assert years.shape == (sim.graph.num_nodes["paper"],) and years.min() >= 2010
    assert torch.equal(sim.train_idx, torch.from_numpy(np.flatnonzero(years < 2018)))
    assert torch.equal(sim.val_idx, torch.from_numpy(np.flatnonzero(years == 2018)))
    assert torch.equal(sim.test_idx, torch.from_numpy(np.flatnonzero(years == 2019)))
    assert len(np.unique(years[years < 2018])) == 8  # 2010..2017


def test_mag_sim_is_deterministic_per_seed(sim: TypedDataset) -> None:
    _assert_same(mag_sim.generate(SCALE, 0), sim)
    other = mag_sim.generate(SCALE, 1)
    assert not torch.equal(other.labels, sim.labels)
    rel = RELATIONS[0]
    assert not torch.equal(other.graph.relations[rel].indices, sim.graph.relations[rel].indices)


def _mean_over(csc: CSCGraph, x: torch.Tensor) -> torch.Tensor:
    """Per destination, the mean of its in-neighbours' rows of `x` (0 without any)."""
    degrees = csc.in_degrees()
    dst = torch.repeat_interleave(torch.arange(csc.num_nodes), degrees)
    out = torch.zeros(csc.num_nodes, x.shape[1]).index_add_(0, dst, x[csc.indices.long()])
    return out / degrees.clamp(min=1).unsqueeze(1)


def _centroid_accuracy(d: TypedDataset, z: torch.Tensor) -> float:
    """Test accuracy of the nearest training-class centroid on standardised `z`."""
    tr, te, y = d.train_idx, d.test_idx, d.labels
    z = (z - z[tr].mean(0)) / (z[tr].std(0) + 1e-6)
    sums = torch.zeros(d.num_classes, z.shape[1]).index_add_(0, y[tr], z[tr])
    centroids = sums / torch.bincount(y[tr], minlength=d.num_classes).clamp(min=1).unsqueeze(1)
    return (torch.cdist(z[te], centroids).argmin(1) == y[te]).double().mean().item()


def test_relations_reveal_the_venue() -> None:
    """The planted structure: paper features alone are weakly informative, their per-relation
    1- and 2-hop neighbour means (R-GCN's aggregation, without learning) recover the venue far
    better, as on ogbn-mag (the issue asks an R-GCN for >= 10 points over an MLP)."""
    d = mag_sim.generate(SIGNAL_SCALE, 0)
    g, x = d.graph, d.features["paper"]
    rel = {r[1]: csc for r, csc in g.relations.items()}
    z = torch.cat([x, _mean_over(rel["cites"], x), _mean_over(rel["cited_by"], x),
                   _mean_over(rel["writes"], _mean_over(rel["rev_writes"], x)),
                   _mean_over(rel["rev_has_topic"], _mean_over(rel["has_topic"], x))], 1)
    alone, related = _centroid_accuracy(d, x), _centroid_accuracy(d, z)
    assert 0.05 < alone < 0.25 and related > alone + 0.3, (alone, related)


# --- the typed cache ----------------------------------------------------------------------

def _counting_generate(monkeypatch: pytest.MonkeyPatch) -> list[tuple[float, int]]:
    calls: list[tuple[float, int]] = []
    generate = mag_sim.generate

    def counted(scale: float, seed: int) -> TypedDataset:
        calls.append((scale, seed))
        return generate(scale, seed)

    monkeypatch.setattr(mag_sim, "generate", counted)
    return calls


def _mapped_files(entry: Path) -> set[str]:
    """The files of `entry` this process maps."""
    return {Path(line.split()[-1]).name for line in Path("/proc/self/maps").read_text()
            .splitlines() if line.split()[-1].startswith(str(entry))}


def test_cache_round_trip_builds_once(sim: TypedDataset, data_dirs: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counting_generate(monkeypatch)
    first = load("mag-sim", scale=SCALE)
    second = load_scaled("mag-sim", None, SCALE)
    assert calls == [(SCALE, 0)]
    _assert_same(first, sim)
    _assert_same(second, sim)
    entry = data_dirs / ENTRY
    mapped = _mapped_files(entry)  # features stay memory-mapped, the graph is copied out
    assert "feat-paper.npy" in mapped and "rel-author__writes__paper-indices.npy" not in mapped
    assert (entry / "rel-author__writes__paper-indices.npy").is_file()
    assert (entry / "rel-paper__cited_by__paper-indptr.npy").is_file()
    meta = json.loads((entry / "meta.json").read_text())
    assert meta["kind"] == "typed" and meta["target"] == "paper"
    assert meta["num_nodes"] == sim.graph.num_nodes
    assert meta["relations"] == [list(r) for r in sim.graph.canonical_relations]
    second.features["paper"][0, 0] += 1.0  # copy-on-write: the cache file stays as built
    _assert_same(load("mag-sim", scale=SCALE), sim)


@pytest.mark.parametrize("damage", ["no_meta", "truncated_indices", "stale_format",
                                    "wrong_count", "index_out_of_range"])
def test_partial_or_corrupt_entry_is_rebuilt(sim: TypedDataset, data_dirs: Path, damage: str,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    load("mag-sim", scale=SCALE)
    entry = data_dirs / ENTRY
    indices = entry / "rel-paper__cites__paper-indices.npy"
    meta = json.loads((entry / "meta.json").read_text())
    if damage == "no_meta":
        (entry / "meta.json").unlink()
    elif damage == "truncated_indices":
        indices.write_bytes(indices.read_bytes()[:1000])
    elif damage == "index_out_of_range":
        array = np.load(indices)
        array[3] = sim.graph.num_nodes["paper"]
        np.save(indices, array)
    else:
        if damage == "stale_format":
            meta["format_version"] = typed_cache.FORMAT_VERSION - 1
        else:
            meta["num_edges"][1] += 1
        (entry / "meta.json").write_text(json.dumps(meta))
    calls = _counting_generate(monkeypatch)
    _assert_same(load("mag-sim", scale=SCALE), sim)
    assert calls == [(SCALE, 0)]


def test_typed_cache_keeps_fp16_features_and_refuses_unsafe_names(tmp_path: Path) -> None:
    g = TypedGraph.from_edges({"a": 3, "b": 2}, {("a", "to", "b"): (torch.tensor([0, 2]),
                                                                    torch.tensor([1, 1]))})
    d = TypedDataset(g, {"a": torch.rand(3, 4).half(), "b": torch.rand(2, 2)},
                     torch.tensor([0, 1]), "b", torch.tensor([0]), torch.tensor([1]),
                     torch.tensor([], dtype=torch.int64), 2, "tiny", {"v": 1})
    _assert_same(typed_cache.load_or_build("tiny", {"v": 1}, lambda: d, tmp_path), d)
    bad = TypedGraph.from_edges({"a/b": 1}, {("a/b", "e", "a/b"): (torch.tensor([0]),
                                                                   torch.tensor([0]))})
    with pytest.raises(ValueError, match="a/b"):
        typed_cache.load_or_build("bad", {}, lambda: TypedDataset(
            bad, {}, torch.tensor([0]), "a/b", *[torch.tensor([0])] * 3, 1, "bad"), tmp_path)


# --- arguments and registration -----------------------------------------------------------

@pytest.mark.parametrize("kwargs, error, word", [
    ({"scale": 0}, ValueError, "scale"),
    ({"scale": -0.5}, ValueError, "scale"),
    ({"scale": float("nan")}, ValueError, "scale"),
    ({"scale": 0.001}, ValueError, "scale"),
    ({"scale": "0.1"}, TypeError, "scale"),
    ({"scale": True}, TypeError, "scale"),
    ({"seed": True}, TypeError, "seed"),
    ({"seed": 1.5}, TypeError, "seed"),
    ({"seed": -1}, ValueError, "seed"),
    ({"scael": 0.1}, TypeError, "scael"),
])
def test_bad_mag_sim_arguments_are_named(kwargs: dict, error: type, word: str,
                                         data_dirs: Path) -> None:
    with pytest.raises(error, match=word):
        load("mag-sim", **kwargs)
    assert not data_dirs.exists()


def test_both_are_registered_as_typed_datasets() -> None:
    assert {"mag-sim", "ogbn-mag"} <= set(KNOWN_DATASETS)
    assert "mag-sim" in SCALED_DATASETS and "ogbn-mag" not in SCALED_DATASETS
    assert set(TYPED_DATASETS) == {"mag-sim", "igbh-sim", "ogbn-mag"}
    with pytest.raises(TypeError, match="scale"):
        load("ogbn-mag", scale=0.5)


# --- ogbn-mag from a local OGB root -------------------------------------------------------

def _write_ogbn_mag(root: Path) -> dict:
    """A tiny ogbn-mag in OGB's raw layout (every file its mag.zip has); returns what was
    written: num_nodes, edges per relation, features, labels, years, splits."""
    rng = np.random.default_rng(5)
    num_nodes = {"author": 40, "field_of_study": 9, "institution": 5, "paper": 30}
    directory, edges = root / "ogbn_mag", {}
    raw = directory / "raw"
    write_csv_gz(raw / "num-node-dict.csv.gz", pd.DataFrame({t: [n] for t, n in num_nodes.items()}),
               header=True)
    write_csv_gz(raw / "triplet-type-list.csv.gz", np.array(sorted(RELATIONS)))
    write_csv_gz(raw / "nodetype-has-label.csv.gz",
               pd.DataFrame({t: [t == "paper"] for t in num_nodes}), header=True)
    for i, rel in enumerate(sorted(RELATIONS)):
        e = 25 + 10 * i
        src, dst = rng.integers(0, num_nodes[rel[0]], e), rng.integers(0, num_nodes[rel[2]], e)
        edges[rel] = np.stack([src, dst], 1)  # repeats and loops kept, as OGB's lists have them
        sub = raw / "relations" / "___".join(rel)
        write_csv_gz(sub / "edge.csv.gz", edges[rel])
        write_csv_gz(sub / "num-edge-list.csv.gz", np.array([[e]]))
        write_csv_gz(sub / "edge_reltype.csv.gz", np.full((e, 1), i))
    n = num_nodes["paper"]
    features = ((rng.integers(-800, 800, (n, 128)) + 0.5) / 8).astype(np.float32)
    years = rng.integers(2010, 2020, n)
    labels = rng.integers(0, 349, n)
    write_csv_gz(raw / "node-feat" / "paper" / "node-feat.csv.gz", features)
    write_csv_gz(raw / "node-feat" / "paper" / "node_year.csv.gz", years[:, None])
    write_csv_gz(raw / "node-label" / "paper" / "node-label.csv.gz", labels[:, None])
    splits = {"train": np.flatnonzero(years < 2018), "valid": np.flatnonzero(years == 2018),
              "test": np.flatnonzero(years == 2019)}
    split = directory / "split" / "time"
    write_csv_gz(split / "nodetype-has-split.csv.gz",
               pd.DataFrame({t: [t == "paper"] for t in num_nodes}), header=True)
    for key, idx in splits.items():
        write_csv_gz(split / "paper" / f"{key}.csv.gz", idx[:, None])
    (directory / "RELEASE_v2.txt").write_text("")
    return {"num_nodes": num_nodes, "edges": edges, "features": features, "labels": labels,
            "splits": splits}


def _assert_matches_raw(d: TypedDataset, expected: dict) -> None:
    assert d.name == "ogbn-mag" and d.num_classes == 349 and d.target == "paper"
    assert d.graph.num_nodes == {t: expected["num_nodes"][t] for t in NODE_TYPES}
    assert d.graph.canonical_relations == [*RELATIONS, *map(reverse, RELATIONS)]
    for rel in RELATIONS:  # neighbours ascending per destination, repeats kept
        src_dst = expected["edges"][rel]
        assert np.array_equal(_pairs(d.graph.relations[rel]),
                              _sorted_rows(src_dst[:, ::-1])), rel
        assert np.array_equal(_pairs(d.graph.relations[reverse(rel)]),
                              _sorted_rows(src_dst)), reverse(rel)
    assert torch.equal(d.features["paper"], torch.from_numpy(expected["features"]))
    assert d.features["paper"].is_contiguous()  # rows, as the feature stores gather them
    assert torch.equal(d.labels, torch.from_numpy(expected["labels"]))
    for idx, key in ((d.train_idx, "train"), (d.val_idx, "valid"), (d.test_idx, "test")):
        assert torch.equal(idx, torch.from_numpy(expected["splits"][key]))


def test_ogbn_mag_from_a_local_root(tmp_path: Path, no_network: list,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "ogb"
    expected = _write_ogbn_mag(root)
    d = load("ogbn-mag", root=root)
    assert isinstance(d, TypedDataset) and d.params == {"source": str(root.resolve())}
    _assert_matches_raw(d, expected)
    assert not (root / "ogbn_mag" / "processed").exists()  # the root is only read
    monkeypatch.setattr(ogb_mag, "_convert", lambda *_: pytest.fail("rebuilt"))
    _assert_matches_raw(load("ogbn-mag", root=root), expected)  # from the cache


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")  # ogb's imports
def test_the_fake_ogbn_mag_is_what_ogbs_own_reader_reads(tmp_path: Path, no_network: list) -> None:
    """The layout the loader reads is OGB's: ogb 1.3.6's raw readers agree on the fake copy."""
    pytest.importorskip("ogb")
    ogb_loader._import_ogb()  # imports ogb without its PyPI version check
    from ogb.io.read_graph_raw import (read_csv_heterograph_raw, read_node_label_hetero,
                                       read_nodesplitidx_split_hetero)
    expected = _write_ogbn_mag(tmp_path)
    raw = tmp_path / "ogbn_mag" / "raw"
    graph = read_csv_heterograph_raw(str(raw), additional_node_files=["node_year"],
                                     additional_edge_files=["edge_reltype"])[0]
    assert graph["num_nodes_dict"] == expected["num_nodes"]
    for rel in RELATIONS:
        assert np.array_equal(graph["edge_index_dict"][rel], expected["edges"][rel].T)
    assert np.array_equal(graph["node_feat_dict"]["paper"], expected["features"])
    assert np.array_equal(read_node_label_hetero(str(raw))["paper"][:, 0], expected["labels"])
    splits = read_nodesplitidx_split_hetero(str(tmp_path / "ogbn_mag" / "split" / "time"))
    for split, key in zip(splits, ("train", "valid", "test")):
        assert np.array_equal(split["paper"], expected["splits"][key])
    ogb_version = sys.modules.get("ogb.version")
    if ogb_version is not None and hasattr(ogb_version, "thread"):
        ogb_version.thread.join()


def test_missing_ogbn_mag_names_the_expected_path(tmp_path: Path, no_network: list) -> None:
    with pytest.raises(FileNotFoundError, match=r"ogbn_mag.*num-node-dict.*never downloads"):
        load("ogbn-mag", root=tmp_path / "empty")
    with pytest.raises(FileNotFoundError, match="no-ogb-here"):  # $GNNREPRO_OGB_ROOT
        load("ogbn-mag")
    assert not (tmp_path / "empty").exists()
    _write_ogbn_mag(tmp_path / "partial")
    (tmp_path / "partial" / "ogbn_mag" / "split" / "time" / "paper" / "test.csv.gz").unlink()
    with pytest.raises(FileNotFoundError, match=r"split/time/paper/test\.csv\.gz"):
        load("ogbn-mag", root=tmp_path / "partial")
