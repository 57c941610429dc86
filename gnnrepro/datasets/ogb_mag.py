"""ogbn-mag from a local copy of OGB's raw files; never downloaded.

Read straight from the files OGB's mag.zip unpacks to (`<root>/ogbn_mag/`, the directory the
ogb package keeps it in; its layout as ogb 1.3.6's `read_csv_heterograph_raw`,
`read_node_label_hetero` and `read_nodesplitidx_split_hetero` read it): `raw/num-node-dict.csv.gz`
(one column of counts per node type), `raw/relations/<src>___<name>___<dst>/edge.csv.gz` (one
"src,dst" row per edge), `raw/node-feat/paper/node-feat.csv.gz` (128 floats per paper),
`raw/node-label/paper/node-label.csv.gz` (the venue) and the official time split,
`split/time/paper/{train,valid,test}.csv.gz`. Reading them with pandas needs no ogb package,
cannot prompt or download, and leaves the root untouched (ogb would pickle a processed copy
into it). The result has mag-sim's schema (gnnrepro.datasets.mag_schema: the four relations and
their reverses) and is cached and memory-mapped like every dataset (typed_cache).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from gnnrepro.datasets import typed_cache
from gnnrepro.datasets.mag_schema import NODE_TYPES, RELATIONS, TARGET, mag_graph
from gnnrepro.datasets.ogb_loader import default_root
from gnnrepro.datasets.typed_dataset import TypedDataset

__all__ = ["NAME", "NUM_CLASSES", "expected_files", "load_ogbn_mag"]

NAME = "ogbn-mag"
NUM_CLASSES = 349
_SPLIT_FILES = {"train_idx": "train", "val_idx": "valid", "test_idx": "test"}


def load_ogbn_mag(root: str | Path | None = None) -> TypedDataset:
    """ogbn-mag from the OGB root `root` (default `$GNNREPRO_OGB_ROOT` or `~/data/ogb`),
    converted and cached on the first call; FileNotFoundError naming what is missing."""
    source = Path(default_root() if root is None else root).expanduser().resolve()
    params = {"source": str(source)}
    return typed_cache.load_or_build(NAME, params, lambda: _convert(source, params))


def expected_files(root: Path) -> dict[str, Path]:
    """The files read, by role, under OGB root `root`."""
    directory = root / "ogbn_mag"
    raw, split = directory / "raw", directory / "split" / "time" / TARGET
    return {"num_nodes": raw / "num-node-dict.csv.gz",
            **{rel: raw / "relations" / "___".join(rel) / "edge.csv.gz" for rel in RELATIONS},
            "features": raw / "node-feat" / TARGET / "node-feat.csv.gz",
            "labels": raw / "node-label" / TARGET / "node-label.csv.gz",
            **{key: split / f"{name}.csv.gz" for key, name in _SPLIT_FILES.items()}}


def _check_local_copy(root: Path) -> dict[str, Path]:
    files = expected_files(root)
    missing = [str(p.relative_to(root)) for p in files.values() if not p.is_file()]
    if missing:
        raise FileNotFoundError(
            f"{NAME} not found: expected OGB's raw files in {root / 'ogbn_mag'}, missing "
            f"{', '.join(missing[:3])}{' and more' if len(missing) > 3 else ''}. gnnrepro "
            f"never downloads datasets. Download it once on a machine with network (`python -c "
            f"\"from ogb.nodeproppred import NodePropPredDataset as D; D('{NAME}', "
            f"root='ogb')\"`), then copy ogb/ogbn_mag/ into {root}, or point root= / "
            f"$GNNREPRO_OGB_ROOT at it.")
    return files


def _convert(root: Path, params: dict[str, Any]) -> TypedDataset:
    """Read the raw files into a TypedDataset with mag_schema's relations (reverses added)."""
    import pandas as pd  # here: every process that imports gnnrepro.datasets would pay ~0.5 s

    files = _check_local_copy(root)
    counts = pd.read_csv(files["num_nodes"], compression="gzip")
    missing = [t for t in NODE_TYPES if t not in counts.columns]
    if missing:
        raise ValueError(f"{files['num_nodes']}: no count of node type(s) {missing}")
    num_nodes = {t: int(counts[t].iloc[0]) for t in NODE_TYPES}
    edges = {}
    for rel in RELATIONS:
        pairs = _int_table(files[rel])
        if pairs.ndim != 2 or pairs.shape[1] != 2:
            raise ValueError(f"{files[rel]}: expected two columns (src, dst), got shape "
                             f"{pairs.shape}")
        edges[rel] = (pairs[:, 0], pairs[:, 1])
    graph = mag_graph(num_nodes, edges)
    del edges
    n = num_nodes[TARGET]
    features = np.array(pd.read_csv(files["features"], compression="gzip", header=None,
                                    dtype=np.float32), order="C")  # rows contiguous
    labels = _int_table(files["labels"]).reshape(-1)
    if features.shape[0] != n or labels.shape != (n,):
        raise ValueError(f"{NAME}: {n} papers, but {features.shape[0]} feature rows and "
                         f"{labels.size} labels")
    splits = {key: torch.from_numpy(_int_table(files[key]).reshape(-1)) for key in _SPLIT_FILES}
    return TypedDataset(graph, {TARGET: torch.from_numpy(features)},
                        torch.from_numpy(labels), TARGET, **splits, num_classes=NUM_CLASSES,
                        name=NAME, params=params)


def _int_table(path: Path) -> np.ndarray:
    """The headerless gzip CSV at `path` as a writable, row-major int64 [rows, columns] array."""
    import pandas as pd

    return np.array(pd.read_csv(path, compression="gzip", header=None, dtype=np.int64), order="C")
