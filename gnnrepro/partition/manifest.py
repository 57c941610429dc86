"""The on-disk partition format, and `load_partition`, which refuses a directory that does not
match its manifest.

Layout of a partition directory (every array a .npy file, memory-mapped on load like the
dataset cache, so the ranks of one machine share the page cache):

    manifest.json     format, dataset name and params, counts, parameters, statistics, and
                      the sha256 of every array file (written last)
    node_part.npy     int32 [N]  the part that owns each node (global ids: the dataset's own)
    node_local.npy    int64 [N]  each node's local id in its owner's part
    labels.npy, train_idx.npy, val_idx.npy, test_idx.npy   the dataset's, global ids
    part-<p>/orig_ids.npy   int64 [owned + halo]  local id -> global id; the owned nodes
                            come first, numbered 0..owned-1 in increasing global id, then the
                            1-hop halo (in-neighbours owned elsewhere), in increasing global id
    part-<p>/indptr.npy     int64 [owned + 1]  CSC of the owned nodes' in-edges, each node's
                            neighbours in the dataset's order
    part-<p>/indices.npy    int32/int64 local ids (into orig_ids)
    part-<p>/features.npy   float32 [owned, F]  the owned nodes' features

Global ids stay the dataset's, so the counter-based random numbers (keyed by global id) and
so the sampled blocks are the single machine's.
"""
from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from gnnrepro.graph import CSCGraph

__all__ = ["FORMAT", "FORMAT_VERSION", "GLOBAL_ARRAYS", "PART_ARRAYS", "PartData", "Partition",
           "PartitionError", "file_sha256", "load_partition", "part_dir"]

FORMAT = "gnnrepro-partition"
FORMAT_VERSION = 1
GLOBAL_ARRAYS = ("node_part", "node_local", "labels", "train_idx", "val_idx", "test_idx")
PART_ARRAYS = ("orig_ids", "indptr", "indices", "features")


class PartitionError(ValueError):
    """A partition directory that does not match its manifest, or not the one asked for."""


def part_dir(p: int) -> str:
    return f"part-{p}"


def file_sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


@dataclass(repr=False)
class PartData:
    """One part's arrays (memory-mapped tensors); see the module doc."""

    part: int
    num_owned: int
    orig_ids: torch.Tensor
    indptr: torch.Tensor
    indices: torch.Tensor
    features: torch.Tensor

    @property
    def num_halo(self) -> int:
        return self.orig_ids.numel() - self.num_owned

    def global_graph(self, num_nodes: int) -> CSCGraph:
        """A CSC graph over all `num_nodes` global ids holding this part's owned nodes' in-edges
        with global neighbour ids (every other node has none): what the fused op samples from,
        keyed by global id like on one machine. Costs one int64 per node of the whole graph."""
        owned = self.orig_ids[: self.num_owned]
        degree = torch.zeros(num_nodes, dtype=torch.int64)
        degree[owned] = self.indptr[1:] - self.indptr[:-1]
        indptr = torch.zeros(num_nodes + 1, dtype=torch.int64)
        torch.cumsum(degree, 0, out=indptr[1:])
        # owned nodes are numbered in increasing global id, so the edges are in global order
        return CSCGraph(indptr, self.orig_ids[self.indices.to(torch.int64)], validate=False)


@dataclass(repr=False)
class Partition:
    """A validated partition directory: its manifest and global arrays; `part(p)` maps a part."""

    path: Path
    manifest: dict[str, Any]
    node_part: torch.Tensor
    node_local: torch.Tensor
    labels: torch.Tensor
    train_idx: torch.Tensor
    val_idx: torch.Tensor
    test_idx: torch.Tensor

    @property
    def num_parts(self) -> int:
        return int(self.manifest["num_parts"])

    @property
    def num_nodes(self) -> int:
        return int(self.manifest["counts"]["num_nodes"])

    @property
    def num_features(self) -> int:
        return int(self.manifest["counts"]["num_features"])

    @property
    def num_classes(self) -> int:
        return int(self.manifest["counts"]["num_classes"])

    def part(self, p: int) -> PartData:
        if not 0 <= p < self.num_parts:
            raise ValueError(f"part must be in [0, {self.num_parts}), got {p}")
        arrays = {k: _map(self.path / part_dir(p) / f"{k}.npy") for k in PART_ARRAYS}
        return PartData(p, int(self.manifest["parts"][p]["num_owned"]), **arrays)

    def __repr__(self) -> str:
        return (f"Partition({str(self.path)!r}, dataset={self.manifest['dataset']!r}, "
                f"num_parts={self.num_parts}, num_nodes={self.num_nodes})")


#: np.load parses each file's header with ast.literal_eval, which CPython 3.11 cannot run in
#: two threads at once (SystemError: AST constructor recursion depth mismatch); machines
#: simulated by threads (ThreadExchange) open their parts concurrently.
_LOAD_LOCK = threading.Lock()


def _map(path: Path) -> torch.Tensor:
    with _LOAD_LOCK:
        return torch.from_numpy(np.load(path, mmap_mode="c"))


def _expected_shapes(manifest: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    """Relative file path -> the array shape the manifest's counts imply."""
    counts = manifest["counts"]
    n = counts["num_nodes"]
    shapes: dict[str, tuple[int, ...]] = {
        "node_part.npy": (n,), "node_local.npy": (n,), "labels.npy": (n,),
        **{f"{k}.npy": (counts[k],) for k in ("train_idx", "val_idx", "test_idx")}}
    for p, part in enumerate(manifest["parts"]):
        d = part_dir(p)
        shapes |= {f"{d}/orig_ids.npy": (part["num_owned"] + part["num_halo"],),
                   f"{d}/indptr.npy": (part["num_owned"] + 1,),
                   f"{d}/indices.npy": (part["num_edges"],),
                   f"{d}/features.npy": (part["num_owned"], counts["num_features"])}
    return shapes


def load_partition(path: str | Path, *, dataset: str | None = None,
                   dataset_params: dict[str, Any] | None = None, num_parts: int | None = None,
                   verify_parts: list[int] | None = None) -> Partition:
    """Open the partition at `path` after checking it against its manifest: the format, the
    expected `dataset` name, `dataset_params` and `num_parts` (when given), every file's
    presence, shape and sha256 - the global arrays and the parts in `verify_parts` (default:
    all; a machine that holds only its own part checks that one). Raises PartitionError
    (a ValueError) saying what does not match."""
    path = Path(path)
    try:
        manifest = json.loads((path / "manifest.json").read_text())
    except FileNotFoundError:
        raise PartitionError(f"{path} is not a partition directory: no manifest.json") from None
    except (OSError, ValueError) as err:
        raise PartitionError(f"{path}/manifest.json is unreadable: {err}") from None
    if manifest.get("format") != FORMAT or manifest.get("format_version") != FORMAT_VERSION:
        raise PartitionError(f"{path}: format {manifest.get('format')!r} version "
                             f"{manifest.get('format_version')!r}, expected {FORMAT!r} "
                             f"version {FORMAT_VERSION}")
    if dataset is not None and manifest["dataset"] != dataset:
        raise PartitionError(f"{path} partitions dataset {manifest['dataset']!r}, not "
                             f"{dataset!r}")
    if (dataset_params is not None
            and manifest["dataset_params"] != json.loads(json.dumps(dataset_params))):
        raise PartitionError(f"{path} partitions {manifest['dataset']} with parameters "
                             f"{manifest['dataset_params']}, not {dataset_params}")
    if num_parts is not None and manifest["num_parts"] != num_parts:
        raise PartitionError(f"{path} has {manifest['num_parts']} parts, but {num_parts} "
                             f"machines need {num_parts}")
    parts = range(manifest["num_parts"]) if verify_parts is None else verify_parts
    for p in parts:
        if not 0 <= p < manifest["num_parts"]:
            raise PartitionError(f"{path} has no part {p} (it has {manifest['num_parts']})")
    wanted = [f"{k}.npy" for k in GLOBAL_ARRAYS]
    wanted += [f"{part_dir(p)}/{k}.npy" for p in parts for k in PART_ARRAYS]
    shapes = _expected_shapes(manifest)
    for name in wanted:
        file = path / name
        if not file.exists():
            raise PartitionError(f"{path}: {name} is missing")
        if file_sha256(file) != manifest["checksums"].get(name):
            raise PartitionError(f"{path}: {name} does not match the manifest's checksum")
        shape = np.load(file, mmap_mode="r").shape
        if shape != shapes[name]:
            raise PartitionError(f"{path}: {name} has shape {shape}, the manifest says "
                                 f"{shapes[name]}")
    arrays = {k: _map(path / f"{k}.npy") for k in GLOBAL_ARRAYS}
    return Partition(path, manifest, **arrays)
