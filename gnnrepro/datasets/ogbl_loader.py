"""OGB link datasets (ogbl-citation2) from a local copy; never downloaded.

The real `ogb.linkproppred.LinkPropPredDataset` reads OGB's on-disk layout once
(`<root>/ogbl_citation2/`: raw/edge.csv.gz, num-node-list, num-edge-list, node-feat and
node_year .csv.gz, or ogb's processed/data_processed pickle; split/time/{train,valid,test}.pt
or split_dict.pt; RELEASE_v1.txt), under ogb_loader's guards (no prompt, no download, no PyPI
check). The result becomes a LinkDataset: the split's training edges (source_node ->
target_node) make the graph, valid/test give the queries and their per-query negatives
(target_node_neg), and it is cached and memory-mapped like every dataset.

Only datasets whose val/test negatives are per query fit a LinkDataset; the other ogbl-* are
named in UNSUPPORTED_OGBL with the reason, and refused with NotImplementedError.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch

from gnnrepro.datasets import cache, ogb_loader
from gnnrepro.datasets.link_dataset import (LinkDataset, link_graph, no_node_labels,
                                            read_link_entry)
from gnnrepro.datasets.ogb_loader import default_root

__all__ = ["OGBL_DATASETS", "UNSUPPORTED_OGBL", "load_ogbl"]

_SPLIT = "time"  # ogb 1.3.6's master.csv: ogbl-citation2's split directory, release v1
_RELEASE = "RELEASE_v1.txt"
_RAW_FILES = ("edge", "num-node-list", "num-edge-list", "node-feat", "node_year")
OGBL_DATASETS: tuple[str, ...] = ("ogbl-citation2",)
_SHARED_NEGATIVES = ("its val/test negatives are one edge list shared by all queries "
                     "(edge_neg), while a LinkDataset ranks each query against its own")
_KG = "it is knowledge-graph completion (typed relations, head and tail negatives)"
#: The other OGB link datasets, with why they do not load as a LinkDataset (yet).
UNSUPPORTED_OGBL: dict[str, str] = {
    "ogbl-collab": _SHARED_NEGATIVES, "ogbl-ppa": _SHARED_NEGATIVES,
    "ogbl-ddi": _SHARED_NEGATIVES, "ogbl-vessel": _SHARED_NEGATIVES,
    "ogbl-wikikg2": _KG, "ogbl-biokg": _KG,
}


def refuse_unsupported(name: str) -> None:
    """NotImplementedError saying why, for the OGB link datasets that do not load yet."""
    if name in UNSUPPORTED_OGBL:
        raise NotImplementedError(f"{name} does not load as a LinkDataset yet: "
                                  f"{UNSUPPORTED_OGBL[name]}")


def load_ogbl(name: str, root: str | Path | None = None) -> LinkDataset:
    """OGB link dataset `name` from OGB root `root` (default `$GNNREPRO_OGB_ROOT` or
    `~/data/ogb`), converted and cached on the first call; FileNotFoundError naming what is
    missing, NotImplementedError for the UNSUPPORTED_OGBL."""
    refuse_unsupported(name)
    if name not in OGBL_DATASETS:
        raise ValueError(f"unknown OGB link dataset {name!r}; known: {', '.join(OGBL_DATASETS)}")
    source = Path(default_root() if root is None else root).expanduser().resolve()
    params = {"source": str(source)}
    return cache.load_or_build(name, params, lambda: _convert(name, source, params),
                               read=read_link_entry)


def _check_local_copy(name: str, root: Path) -> Path:
    """The dataset's directory under `root`; FileNotFoundError unless ogb can read it from
    there without any download or prompt."""
    directory = root / name.replace("-", "_")
    split_dir = directory / "split" / _SPLIT
    how = (f"Download it once on a machine with network (`python -c \"from ogb.linkproppred "
           f"import LinkPropPredDataset as D; D('{name}', root='ogb')\"`), then copy "
           f"ogb/{directory.name}/ into {root}, or point root= / $GNNREPRO_OGB_ROOT at it.")
    has_data = ((directory / "processed" / "data_processed").is_file()
                or all((directory / "raw" / f"{f}.csv.gz").is_file() for f in _RAW_FILES))
    has_split = ((split_dir / "split_dict.pt").is_file()
                 or all((split_dir / f"{s}.pt").is_file() for s in ("train", "valid", "test")))
    if not (has_data and has_split):
        raise FileNotFoundError(
            f"{name} not found: expected OGB's layout in {directory} (raw/{{"
            f"{','.join(_RAW_FILES)}}}.csv.gz or processed/data_processed, and "
            f"split/{_SPLIT}/{{train,valid,test}}.pt). gnnrepro never downloads datasets. {how}")
    if not (directory / _RELEASE).is_file():
        raise FileNotFoundError(
            f"{directory / _RELEASE} is missing, so ogb would ask interactively whether to "
            f"re-download {name}. If the copy in {directory} is the current OGB release, create "
            f"that empty file; otherwise replace the copy. {how}")
    return directory


def _convert(name: str, root: Path, params: dict[str, Any]) -> LinkDataset:
    """Read `name` through ogb and convert it to a LinkDataset."""
    directory = _check_local_copy(name, root)
    # ogb pickles its parsed copy into processed/ but never creates that directory itself.
    (directory / "processed").mkdir(exist_ok=True)
    dataset_class = _import_ogb_link()
    with ogb_loader._offline(sys.modules[dataset_class.__module__]):
        ogb_dataset = dataset_class(name=name, root=str(root))
        split = ogb_dataset.get_edge_split()
    graph_dict = ogb_dataset[0]
    del ogb_dataset
    n = int(graph_dict["num_nodes"])
    features = np.ascontiguousarray(graph_dict.pop("node_feat"), dtype=np.float32)
    del graph_dict
    arrays = {"train_src": split["train"]["source_node"],
              "train_dst": split["train"]["target_node"]}
    for key, part in (("val", "valid"), ("test", "test")):
        arrays |= {f"{key}_src": split[part]["source_node"],
                   f"{key}_dst": split[part]["target_node"],
                   f"{key}_neg": split[part]["target_node_neg"]}
    del split
    tensors = {key: _node_ids(f"{name} {key}", ids, n) for key, ids in arrays.items()}
    return LinkDataset(graph=link_graph(tensors["train_src"], tensors["train_dst"], n),
                       features=torch.from_numpy(features), **no_node_labels(n), name=name,
                       params=params, **tensors)


def _node_ids(what: str, ids: Any, num_nodes: int) -> torch.Tensor:
    """`ids` (a numpy array or tensor, as ogb's split files hold them) as int64, checked to
    lie in [0, num_nodes): a ValueError naming `what` otherwise."""
    out = np.array(ids, dtype=np.int64)
    if out.size and (out.min() < 0 or out.max() >= num_nodes):
        raise ValueError(f"{what} holds node ids outside [0, num_nodes={num_nodes})")
    return torch.from_numpy(out)


def _import_ogb_link() -> type:
    """`LinkPropPredDataset`, importing ogb without its PyPI version check (ogb_loader's)."""
    ogb_loader._import_ogb()
    from ogb.linkproppred import LinkPropPredDataset
    return LinkPropPredDataset
