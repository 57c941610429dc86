"""On-disk cache of TypedDatasets (mag-sim, ogbn-mag): build once, memory-map on later loads.

The homogeneous cache's layout and guarantees (gnnrepro.datasets.cache: `<root>/<name>/<k=v>/`,
written under a temporary name and renamed into place, meta.json last, copy-on-write maps,
the sampler's arrays copied into anonymous memory where they fit), with one .npy per array:
per relation `rel-<src>__<name>__<dst>-indptr.npy` and `-indices.npy`, per featured node type
`feat-<type>.npy`, and `labels.npy`, `train_idx.npy`, `val_idx.npy`, `test_idx.npy`. meta.json
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

from gnnrepro.datasets.anonymous import anonymous_copy, fits_in_free_memory
from gnnrepro.datasets import cache
from gnnrepro.datasets.typed_dataset import TypedDataset
from gnnrepro.graph import CSCGraph
from gnnrepro.typed_graph import Relation, TypedGraph

__all__ = ["FORMAT_VERSION", "array_files", "load_or_build", "read_entry"]

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
        for t, (rows, width, dtype) in meta["features"].items():
            expected[f"feat:{t}"] = ((rows, width), dtype)
        expected["labels"] = ((num_nodes[meta["target"]],), "int64")
        expected.update({k: ((meta["counts"][k],), "int64") for k in SPLITS})
        files = array_files(list(num_nodes), rels, list(meta["features"]))
        arrays = {}
        for key, (shape, dtype) in expected.items():
            arrays[key] = np.load(directory / files[key], mmap_mode="c")
            if arrays[key].shape != tuple(shape) or arrays[key].dtype != np.dtype(dtype):
                return None
        relations = {}
        for rel in rels:
            indptr, indices = (_random_access(arrays[_relation_key(rel, p)])
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


def _relation_key(rel: Relation, part: str) -> str:
    return f"rel:{'|'.join(rel)}:{part}"


def _random_access(array: np.ndarray) -> np.ndarray:
    """The sampler's random reads: see gnnrepro.datasets.anonymous."""
    return anonymous_copy(array) if fits_in_free_memory(array.nbytes) else array


def _write(dataset: TypedDataset, directory: Path, params: dict[str, Any]) -> None:
    """Write `dataset` to a temporary sibling of `directory`, meta.json last, then rename it
    into place (a concurrent builder that wins the rename race is used instead)."""
    g = dataset.graph
    files = array_files(g.node_types, g.canonical_relations, list(dataset.features))
    tensors = {**{_relation_key(rel, "indptr"): csc.indptr for rel, csc in g.relations.items()},
               **{_relation_key(rel, "indices"): csc.indices for rel, csc in g.relations.items()},
               **{f"feat:{t}": x for t, x in dataset.features.items()},
               "labels": dataset.labels, "train_idx": dataset.train_idx,
               "val_idx": dataset.val_idx, "test_idx": dataset.test_idx}
    if any(csc.edge_ids is not None for csc in g.relations.values()):
        raise ValueError(f"{dataset.name}: relations with their own edge ids are not cached")
    def fill(tmp: Path) -> None:
        for key, tensor in tensors.items():
            np.save(tmp / files[key], np.ascontiguousarray(tensor.cpu().numpy()))
        meta = {"format_version": FORMAT_VERSION, "kind": "typed", "name": dataset.name,
                "num_classes": dataset.num_classes, "params": params, "target": dataset.target,
                "num_nodes": g.num_nodes, "relations": [list(r) for r in g.canonical_relations],
                "num_edges": list(g.num_edges.values()),
                "index_dtype": str(g.index_dtype).removeprefix("torch."),
                "features": {t: [*x.shape, str(x.dtype).removeprefix("torch.")]
                             for t, x in dataset.features.items()},
                "counts": {k: tensors[k].numel() for k in SPLITS}}
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    cache.write_atomically(directory, fill)
