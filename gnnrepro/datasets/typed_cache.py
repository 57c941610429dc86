"""On-disk cache of TypedDatasets (mag-sim, ogbn-mag): build once, memory-map on later loads.

The homogeneous cache's layout and guarantees (gnnrepro.datasets.cache: `<root>/<name>/<k=v>/`,
written under a temporary name and renamed into place, meta.json last, copy-on-write maps,
the sampler's arrays copied into anonymous memory where they fit), with one .npy per array:
per relation `rel-<src>__<name>__<dst>-indptr.npy` and `-indices.npy`, per featured node type
`feat-<type>.npy` (or, for features larger than memory as igbh-sim's, a dense feature file
`feat-<type>.gnnf`, memory-mapped: meta.json's "feature_files"), and `labels.npy`, `train_idx.npy`, `val_idx.npy`, `test_idx.npy`. meta.json
(`"kind": "typed"`) records the node types and their counts, the relations and their edge
counts, the target type, the feature shapes and dtypes and the split sizes; a read checks every
array against it and validates the graph, so a stale, partial or corrupt entry is rebuilt.
"""
from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from gnnrepro.datasets.anonymous import random_access_copy
from gnnrepro.datasets import cache
from gnnrepro.datasets.typed_dataset import TypedDataset
from gnnrepro.feature_file import read_header
from gnnrepro.graph import CSCGraph
from gnnrepro.typed_graph import Relation, TypedGraph

__all__ = ["FORMAT_VERSION", "array_files", "feature_file_name", "load_or_build", "read_entry",
           "write_arrays", "write_meta"]

FORMAT_VERSION = 1  # bump when the layout or a typed generator changes: old entries get rebuilt
SPLITS = ("train_idx", "val_idx", "test_idx")
_SAFE_NAME = re.compile(r"[A-Za-z0-9_.-]+")
_log = logging.getLogger(__name__)


def load_or_build(name: str, params: dict[str, Any], build: Callable[[], TypedDataset],
                  root: str | Path | None = None) -> TypedDataset:
    """The cached (name, params) typed dataset, calling `build()` and caching it when absent,
    stale or corrupt; always returns the memory-mapped entry (gnnrepro.datasets.cache's rules)."""
    return cache.load_or_build(name, params, build, root, read=read_entry, write=_write)


def array_files(node_types: list[str], relations: list[Relation],
                featured: list[str]) -> dict[str, str]:
    """{array key: file name} of an entry: the graph's per relation, then features, labels,
    splits; ValueError for a type or relation name unfit for a file name."""
    names = [*node_types, *(rel[1] for rel in relations)]
    bad = [n for n in names if not _SAFE_NAME.fullmatch(n)]
    if bad:
        raise ValueError(f"node type and relation names must match {_SAFE_NAME.pattern} to be "
                         f"cached, got {bad}")
    files = {}
    for rel in relations:
        for part in ("indptr", "indices"):
            files[_relation_key(rel, part)] = f"rel-{'__'.join(rel)}-{part}.npy"
    if len(set(files.values())) != len(files):
        raise ValueError(f"relations {relations} give clashing file names")
    files.update({f"feat:{t}": f"feat-{t}.npy" for t in featured})
    files.update({k: f"{k}.npy" for k in ("labels", *SPLITS)})
    return files


def read_entry(directory: Path, name: str, params: dict[str, Any]) -> TypedDataset | None:
    """The typed dataset in `directory`, or None if it is missing, partial, stale or corrupt."""
    try:
        meta = json.loads((directory / "meta.json").read_text())
        if (meta.get("format_version") != FORMAT_VERSION or meta.get("kind") != "typed"
                or meta.get("name") != name
                or meta.get("params") != json.loads(json.dumps(params))):
            return None
        num_nodes = {t: int(n) for t, n in meta["num_nodes"].items()}
        rels = [tuple(r) for r in meta["relations"]]
        expected = {}  # key: (shape, dtype)
        for rel, edges in zip(rels, meta["num_edges"], strict=True):
            expected[_relation_key(rel, "indptr")] = ((num_nodes[rel[2]] + 1,), "int64")
            expected[_relation_key(rel, "indices")] = ((edges,), meta["index_dtype"])
        stored_as_file = set(meta.get("feature_files", ()))
        for t, (rows, width, dtype) in meta["features"].items():
            if t not in stored_as_file:
                expected[f"feat:{t}"] = ((rows, width), dtype)
        expected["labels"] = ((num_nodes[meta["target"]],), "int64")
        expected.update({k: ((meta["counts"][k],), "int64") for k in SPLITS})
        files = array_files(list(num_nodes), rels, list(meta["features"]))
        arrays = {f"feat:{t}": _feature_file_rows(directory / feature_file_name(t),
                                                  meta["features"][t]) for t in stored_as_file}
        for key, (shape, dtype) in expected.items():
            arrays[key] = np.load(directory / files[key], mmap_mode="c")
            if arrays[key].shape != tuple(shape) or arrays[key].dtype != np.dtype(dtype):
                return None
        relations = {}
        for rel in rels:
            indptr, indices = (random_access_copy(arrays[_relation_key(rel, p)])
                               for p in ("indptr", "indices"))
            relations[rel] = CSCGraph(torch.from_numpy(indptr), torch.from_numpy(indices),
                                      num_src_nodes=num_nodes[rel[0]])
        return TypedDataset(
            TypedGraph(num_nodes, relations),
            {t: torch.from_numpy(arrays[f"feat:{t}"]) for t in meta["features"]},
            torch.from_numpy(arrays["labels"]), meta["target"],
            *(torch.from_numpy(arrays[k]) for k in SPLITS), num_classes=int(meta["num_classes"]),
            name=name, params=meta["params"])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as err:
        _log.warning("ignoring corrupt cache entry %s: %s", directory, err)
        return None


def feature_file_name(node_type: str) -> str:
    """The feature file of a node type whose features an entry stores as one (igbh-sim)."""
    return f"feat-{node_type}.gnnf"


def _feature_file_rows(path: Path, shape_and_dtype: list) -> np.ndarray:
    """The rows of a dense feature file, memory-mapped copy-on-write; ValueError when its
    header disagrees with meta.json."""
    rows, width, dtype = shape_and_dtype
    info = read_header(path)
    if (info.num_nodes, info.dim) != (rows, width) or info.packed or \
            str(info.dtype).removeprefix("torch.") != dtype:
        raise ValueError(f"{path}: header {info.num_nodes} x {info.dim} {info.dtype} does not "
                         f"match meta.json's {rows} x {width} {dtype}")
    return np.memmap(path, dtype=np.dtype(dtype), mode="c", offset=info.data_offset,
                     shape=(rows, width))


def _relation_key(rel: Relation, part: str) -> str:
    return f"rel:{'|'.join(rel)}:{part}"




def _write(dataset: TypedDataset, directory: Path, params: dict[str, Any]) -> None:
    """Write `dataset` to a temporary sibling of `directory`, meta.json last, then rename it
    into place (a concurrent builder that wins the rename race is used instead)."""
    def fill(tmp: Path) -> None:
        write_arrays(tmp, dataset.graph, dataset.labels,
                     {k: getattr(dataset, k) for k in SPLITS}, dataset.features)
        write_meta(tmp, dataset.name, dataset.num_classes, params, dataset.graph,
                   dataset.target, {t: (x.shape[0], x.shape[1], x.dtype)
                                    for t, x in dataset.features.items()},
                   {k: getattr(dataset, k).numel() for k in SPLITS})
    cache.write_atomically(directory, fill)


def write_arrays(directory: Path, graph: TypedGraph, labels: torch.Tensor,
                 splits: dict[str, torch.Tensor],
                 features: dict[str, torch.Tensor] | None = None) -> None:
    """The entry's .npy files: every relation's CSC, labels, splits and `features` (the node
    types whose features are not written as feature files)."""
    if any(csc.edge_ids is not None for csc in graph.relations.values()):
        raise ValueError("relations with their own edge ids are not cached")
    features = features or {}
    files = array_files(graph.node_types, graph.canonical_relations, list(features))
    tensors = {**{_relation_key(r, "indptr"): c.indptr for r, c in graph.relations.items()},
               **{_relation_key(r, "indices"): c.indices for r, c in graph.relations.items()},
               **{f"feat:{t}": x for t, x in features.items()},
               "labels": labels, **splits}
    for key, tensor in tensors.items():
        np.save(directory / files[key], np.ascontiguousarray(tensor.cpu().numpy()))


def write_meta(directory: Path, name: str, num_classes: int, params: dict[str, Any],
               graph: TypedGraph, target: str,
               features: dict[str, tuple[int, int, torch.dtype]], counts: dict[str, int],
               feature_files: tuple[str, ...] = ()) -> None:
    """The entry's meta.json, written last (an entry without it is incomplete): `features`
    {type: (rows, width, dtype)}, `counts` the split sizes, `feature_files` the types whose
    features are feature files (feature_file_name) rather than .npy."""
    meta = {"format_version": FORMAT_VERSION, "kind": "typed", "name": name,
            "num_classes": num_classes, "params": params, "target": target,
            "num_nodes": graph.num_nodes, "relations": [list(r) for r in graph.canonical_relations],
            "num_edges": list(graph.num_edges.values()),
            "index_dtype": str(graph.index_dtype).removeprefix("torch."),
            "features": {t: [rows, width, str(dtype).removeprefix("torch.")]
                         for t, (rows, width, dtype) in features.items()},
            "feature_files": list(feature_files), "counts": counts}
    (directory / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
