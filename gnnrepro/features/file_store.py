"""The store side of feature files: converting a dataset's features.npy into one, once, and
FileFeatureStore, the base of the stores that read one (the file's format:
gnnrepro.feature_file).
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch

from gnnrepro.feature_file import DTYPES, FeatureFile, read_header, write_feature_file
from gnnrepro.features.store import FeatureStore

__all__ = ["FileFeatureStore", "ensure_feature_file"]


def ensure_feature_file(npy_path: str | os.PathLike, path: str | os.PathLike | None = None,
                        order: torch.Tensor | None = None,
                        pack_block: int | None = None) -> FeatureFile:
    """The feature file converted from `npy_path` (default: `features.gnnf` beside it, or
    `features.packed<block>.gnnf`), converting once; an existing file is reused when it holds
    the same shape, dtype and layout."""
    npy_path = Path(npy_path)
    default = "features.gnnf" if pack_block is None else f"features.packed{pack_block}.gnnf"
    path = npy_path.with_name(default) if path is None else Path(path)
    array = np.load(npy_path, mmap_mode="r")
    if path.exists():
        try:
            info = read_header(path)
            if (info.num_nodes, info.dim) == array.shape and \
                    info.dtype == DTYPES.get(str(array.dtype)) and \
                    (order is None) == (info.order_offset is None) and \
                    info.packed == (pack_block is not None):
                return info
        except ValueError:
            pass  # stale or corrupt: rewrite it
    return write_feature_file(path, array, order, pack_block)


class FileFeatureStore(FeatureStore):
    """A store whose rows live in a feature file: its shape, dtype and size come from the
    file's header, `self.info` (a FeatureFile), which a subclass sets in its __init__."""

    info: FeatureFile

    @property
    def num_nodes(self) -> int:
        return self.info.num_nodes

    @property
    def dim(self) -> int:
        return self.info.dim

    @property
    def dtype(self) -> torch.dtype:
        return self.info.dtype

    def nbytes(self) -> int:
        return self.info.data_bytes
