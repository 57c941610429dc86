"""OGB node datasets (ogbn-products, -arxiv, -papers100M) from a local copy; never downloaded.

The real `ogb.nodeproppred.NodePropPredDataset` reads OGB's on-disk layout once; the result is
converted to the cache layout (symmetric CSC graph, float32 features, int64 labels with -1 for
unlabeled nodes, int64 splits) so every later load is a memory map. ogb itself may prompt with
`input()`, download, or ping PyPI; this module checks the files first and blocks all three, so a
loader on an offline compute node either succeeds or fails fast with an actionable error.
"""
from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Any, Iterator, NamedTuple
from unittest import mock

import numpy as np
import torch

from gnnrepro.datasets import cache
from gnnrepro.datasets.dataset import Dataset, symmetric_csc

__all__ = ["OGB_DATASETS", "default_root", "load_ogb"]


class _Layout(NamedTuple):
    """What ogb 1.3.6's master.csv says about a dataset's directory."""

    binary: bool  # raw/data.npz + raw/node-label.npz instead of raw/*.csv.gz
    split: str  # split/<split>/ holds the train/valid/test indices
    version: int  # ogb asks interactively unless RELEASE_v<version>.txt exists
    num_classes: int


_LAYOUTS = {
    "ogbn-products": _Layout(binary=False, split="sales_ranking", version=1, num_classes=47),
    "ogbn-arxiv": _Layout(binary=False, split="time", version=1, num_classes=40),
    "ogbn-papers100M": _Layout(binary=True, split="time", version=1, num_classes=172),
}
OGB_DATASETS: tuple[str, ...] = tuple(_LAYOUTS)


def default_root() -> Path:
    """`$GNNREPRO_OGB_ROOT`, else `~/data/ogb`."""
    return Path(os.environ.get("GNNREPRO_OGB_ROOT") or "~/data/ogb").expanduser()


def load_ogb(name: str, root: str | Path | None = None) -> Dataset:
    """OGB dataset `name` from `root` (OGB's layout), converted and cached on the first call."""
    if name not in _LAYOUTS:
        raise ValueError(f"unknown OGB dataset {name!r}; known: {', '.join(OGB_DATASETS)}")
    source = Path(default_root() if root is None else root).expanduser().resolve()
    params = {"source": str(source)}
    return cache.load_or_build(name, params, lambda: _convert(name, source, params))


def _dataset_dir(name: str, root: Path) -> Path:
    """Where ogb keeps `name` under `root` (ogbn-arxiv -> root/ogbn_arxiv)."""
    return root / name.replace("-", "_")


def _check_local_copy(name: str, root: Path) -> None:
    """Raise FileNotFoundError unless ogb can read `name` from `root` without any download."""
    layout, directory = _LAYOUTS[name], _dataset_dir(name, root)
    raw = directory / "raw"
    raw_files = ([raw / "data.npz", raw / "node-label.npz"] if layout.binary
                 else [raw / "edge.csv.gz", raw / "node-feat.csv.gz", raw / "node-label.csv.gz"])
    split_dir = directory / "split" / layout.split
    split_files = [split_dir / f"{s}.csv.gz" for s in ("train", "valid", "test")]
    release = directory / f"RELEASE_v{layout.version}.txt"
    how = (f"Download it once on a machine with network (`python -c \"from ogb.nodeproppred "
           f"import NodePropPredDataset as D; D('{name}', root='ogb')\"`), then copy "
           f"ogb/{directory.name}/ into {root}, or point root= / $GNNREPRO_OGB_ROOT at it.")
    has_data = ((directory / "processed" / "data_processed").is_file()
                or all(f.is_file() for f in raw_files))
    has_split = (split_dir / "split_dict.pt").is_file() or all(f.is_file() for f in split_files)
    if not (has_data and has_split):
        raise FileNotFoundError(
            f"{name} not found: expected OGB's layout in {directory} (raw/ or processed/ data "
            f"and split/{layout.split}/). gnnrepro never downloads datasets. {how}")
    if not release.is_file():
        raise FileNotFoundError(
            f"{release} is missing, so ogb would ask interactively whether to re-download "
            f"{name}. If the copy in {directory} is the current OGB release, create that empty "
            f"file; otherwise replace the copy. {how}")


def _convert(name: str, root: Path, params: dict[str, Any]) -> Dataset:
    """Read `name` through ogb and convert it to a Dataset (symmetric graph, -1 = unlabeled)."""
    _check_local_copy(name, root)
    # ogb pickles its parsed copy into processed/ but never creates that directory itself.
    (_dataset_dir(name, root) / "processed").mkdir(exist_ok=True)
    node_prop_pred_dataset = _import_ogb()
    with _offline(sys.modules[node_prop_pred_dataset.__module__]):
        ogb_dataset = node_prop_pred_dataset(name=name, root=str(root))
        split = ogb_dataset.get_idx_split()
    graph_dict, labels = ogb_dataset[0]
    del ogb_dataset
    edge_index = graph_dict.pop("edge_index")
    num_nodes = int(graph_dict["num_nodes"])
    graph = symmetric_csc(edge_index[0], edge_index[1], num_nodes)
    del edge_index
    features = np.ascontiguousarray(graph_dict.pop("node_feat"), dtype=np.float32)
    return Dataset(graph=graph, features=torch.from_numpy(features),
                   labels=torch.from_numpy(_int_labels(labels, num_nodes)),
                   train_idx=_index(split["train"]), val_idx=_index(split["valid"]),
                   test_idx=_index(split["test"]), num_classes=_LAYOUTS[name].num_classes,
                   name=name, params=params)


def _int_labels(labels: np.ndarray, num_nodes: int) -> np.ndarray:
    """int64 [N] labels; NaN (papers100M's unlabeled nodes) becomes -1."""
    labels = np.asarray(labels).reshape(num_nodes)
    if not np.issubdtype(labels.dtype, np.floating):
        return labels.astype(np.int64)
    out = np.full(num_nodes, -1, dtype=np.int64)
    known = ~np.isnan(labels)
    out[known] = labels[known]
    return out


def _index(idx: Any) -> torch.Tensor:
    """A split (numpy array or tensor, depending on ogb's file) as an int64 tensor."""
    return torch.from_numpy(np.array(idx, dtype=np.int64).reshape(-1))


def _import_ogb() -> type:
    """`NodePropPredDataset`, importing ogb without the PyPI version check its import starts.

    ogb's `__init__` runs `outdated.check_outdated` in a non-daemon thread (an HTTP request that
    can stall exit on a firewalled node); hiding `outdated` for the import makes ogb skip it.
    """
    saved = sys.modules.get("outdated")
    if "ogb" not in sys.modules:
        sys.modules["outdated"] = None  # type: ignore[assignment]  # its import raises ImportError
    try:
        from ogb.nodeproppred import NodePropPredDataset
    except ImportError as err:
        raise ImportError("OGB datasets need the ogb package: pip install 'gnnrepro[ogb]'") from err
    finally:
        if saved is None:
            sys.modules.pop("outdated", None)
        else:
            sys.modules["outdated"] = saved
    return NodePropPredDataset


class _FullUnpickleTorch:
    """`torch` as ogb's dataset module sees it, except that `load` unpickles fully.

    ogb 1.3.6 caches numpy arrays with `torch.save` and reads them back with `torch.load`, which
    torch >= 2.6 refuses by default (`weights_only=True`). The file is ogb's own local output.
    """

    def __getattr__(self, attr: str) -> Any:
        return getattr(torch, attr)

    @staticmethod
    def load(*args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("weights_only", False)
        return torch.load(*args, **kwargs)


@contextlib.contextmanager
def _offline(module: Any) -> Iterator[None]:
    """Within ogb's dataset `module` only: no prompt, no download, full unpickling."""

    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("ogb tried to prompt or download; gnnrepro only reads local copies")

    with contextlib.ExitStack() as stack:
        stack.enter_context(mock.patch.object(module, "input", refuse, create=True))
        stack.enter_context(mock.patch.object(module, "decide_download", refuse))
        stack.enter_context(mock.patch.object(module, "download_url", refuse))
        stack.enter_context(mock.patch.object(module, "torch", _FullUnpickleTorch()))
        yield
