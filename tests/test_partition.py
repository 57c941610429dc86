"""The partition format: METIS parts cover the graph exactly, halos and local numbering are as
documented, and a directory that does not match its manifest is refused."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from gnnrepro.__main__ import main
from gnnrepro.datasets import Dataset, load
from gnnrepro.partition import PartitionError, load_partition, partition_dataset


@pytest.fixture(scope="module")
def data_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("data")


@pytest.fixture(scope="module")
def small(data_root: Path) -> Dataset:
    return load("products-sim", root=data_root, scale=0.003)


@pytest.fixture(scope="module")
def two_parts(small: Dataset, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("parts") / "p2"
    partition_dataset(small, 2, out)
    return out


@pytest.mark.parametrize("num_parts", [2, 3])
def test_parts_cover_the_graph(small: Dataset, tmp_path: Path, num_parts: int):
    manifest = partition_dataset(small, num_parts, tmp_path / "p")
    pt = load_partition(tmp_path / "p", dataset="products-sim", num_parts=num_parts)
    n = small.num_nodes
    assert torch.equal(torch.bincount(pt.node_part.long(), minlength=num_parts),
                       torch.tensor([p["num_owned"] for p in manifest["parts"]]))
    seen = torch.zeros(n, dtype=torch.int64)
    for p in range(num_parts):
        part = pt.part(p)
        owned = part.orig_ids[: part.num_owned]
        seen[owned] += 1
        assert bool((owned[1:] > owned[:-1]).all())  # contiguous local ids in global order
        assert torch.equal(pt.node_local[owned], torch.arange(part.num_owned))
        assert bool((pt.node_part[owned] == p).all())
        g = part.global_graph(n)
        deg = small.graph.indptr[1:] - small.graph.indptr[:-1]
        own_mask = pt.node_part == p
        assert torch.equal(g.indptr[1:] - g.indptr[:-1], torch.where(own_mask, deg, 0))
        rows = torch.cat([small.graph.indices[small.graph.indptr[v]:small.graph.indptr[v + 1]]
                          for v in owned.tolist()]).long()
        assert torch.equal(g.indices, rows)  # each owned node's neighbours, in order
        halo = part.orig_ids[part.num_owned:]
        assert torch.equal(halo, torch.unique(rows[pt.node_part[rows] != p]))
        assert torch.equal(part.features, small.features[owned])
        assert manifest["parts"][p]["num_train"] > 0
    assert bool((seen == 1).all())  # every node owned exactly once
    cut = int((pt.node_part[small.graph.indices.long()] != torch.repeat_interleave(
        pt.node_part, small.graph.indptr[1:] - small.graph.indptr[:-1])).sum())
    assert manifest["stats"]["edge_cut"] == cut
    assert manifest["stats"]["halo_fraction"] == pytest.approx(
        sum(p["num_halo"] for p in manifest["parts"]) / n)


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def test_mismatching_directories_are_refused(two_parts: Path, tmp_path: Path):
    load_partition(two_parts)  # intact
    with pytest.raises(PartitionError, match="not 'ogbn-products'"):
        load_partition(two_parts, dataset="ogbn-products")
    with pytest.raises(PartitionError, match="has 2 parts, but 3 machines"):
        load_partition(two_parts, num_parts=3)
    with pytest.raises(PartitionError, match="scale"):
        load_partition(two_parts, dataset_params={"scale": 0.5, "seed": 0})
    missing = _copy(two_parts, tmp_path / "missing")
    (missing / "part-1" / "features.npy").unlink()
    with pytest.raises(PartitionError, match="part-1/features.npy is missing"):
        load_partition(missing)
    load_partition(missing, verify_parts=[0])  # a machine holding part 0 only
    corrupt = _copy(two_parts, tmp_path / "corrupt")
    data = bytearray((corrupt / "part-0" / "indices.npy").read_bytes())
    data[-1] ^= 1
    (corrupt / "part-0" / "indices.npy").write_bytes(bytes(data))
    with pytest.raises(PartitionError, match="part-0/indices.npy does not match"):
        load_partition(corrupt)
    with pytest.raises(PartitionError, match="no manifest.json"):
        load_partition(tmp_path / "nowhere")
    bad = _copy(two_parts, tmp_path / "bad")
    manifest = json.loads((bad / "manifest.json").read_text())
    manifest["format_version"] = 99
    (bad / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(PartitionError, match="version 99"):
        load_partition(bad)


def test_writes_are_atomic_and_not_overwritten(small: Dataset, two_parts: Path):
    with pytest.raises(FileExistsError, match="overwrite"):
        partition_dataset(small, 2, two_parts)
    before = (two_parts / "manifest.json").read_text()
    partition_dataset(small, 2, two_parts, overwrite=True)
    load_partition(two_parts)
    assert json.loads(before)["checksums"] == json.loads(
        (two_parts / "manifest.json").read_text())["checksums"]  # METIS is deterministic
    assert [p.name for p in two_parts.parent.iterdir() if p.name.startswith(".")] == []


def test_bad_arguments(small: Dataset, tmp_path: Path):
    with pytest.raises(ValueError, match="num_parts"):
        partition_dataset(small, 0, tmp_path / "x")
    with pytest.raises(TypeError, match="num_parts"):
        partition_dataset(small, 2.0, tmp_path / "x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="num_parts"):
        partition_dataset(small, small.num_nodes + 1, tmp_path / "x")
    assert not (tmp_path / "x").exists()


def test_cli(data_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture):
    assert main(["partition", "--dataset", "products-sim", "--scale", "0.003",
                 "--root", str(data_root), "--parts", "2", "--out", str(tmp_path / "p")]) == 0
    table = capsys.readouterr().out.splitlines()
    manifest = json.loads((tmp_path / "p" / "manifest.json").read_text())
    assert table[0].startswith(f"2 part(s) in {tmp_path / 'p'}: METIS ")
    assert table[1].split() == ["part", "owned", "nodes", "halo", "nodes", "edges", "train",
                                "ids"]
    for index, part in enumerate(manifest["parts"]):
        assert table[2 + index].split() == [str(index), str(part["num_owned"]),
                                            str(part["num_halo"]), str(part["num_edges"]),
                                            str(part["num_train"])]
    assert table[-1].startswith(f"edge cut {manifest['stats']['edge_cut_fraction']:.1%}")
    assert load_partition(tmp_path / "p", dataset="products-sim",
                          dataset_params={"scale": 0.003, "seed": 0}).num_parts == 2
