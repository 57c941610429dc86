"""The on-disk feature file the disk-backed stores read: rows aligned for direct I/O.

Layout: a 4 KiB header (magic, then JSON: dtype, num_nodes, dim, data_offset, order_offset,
rows_per_unit, unit_bytes), the rows at `data_offset` (4 KiB), padded to a multiple of 4 KiB,
then - optionally - `order`, int64 [num_nodes]: order[slot] is the node stored in row slot
`slot` (rows read together can be stored near each other). Why 4 KiB: the largest logical
block size of common devices, so an O_DIRECT read of any aligned block range stays inside the
file on 512-byte and 4 KiB devices alike. Rows are dense (one after another) or block-packed:
units of `unit_bytes` (a block) holding `rows_per_unit` whole rows each, so a row never
straddles a block and reading one costs one block (400-byte rows on 512-byte sectors: 512
bytes per row instead of 896 on average, for a file 28% larger). The dataset cache's
`features.npy` is converted once (`ensure_feature_file`); writes go to a temporary file
renamed into place, after a disk-space check that fails with a clear error instead of a
half-written file.
"""
from __future__ import annotations

import errno
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from gnnrepro.features.store import FeatureStore

__all__ = ["FeatureFile", "FileFeatureStore", "block_size_of", "ensure_feature_file", "read_header",
           "write_feature_file", "ALIGN", "MAGIC"]

MAGIC = b"GNNRFEAT"
ALIGN = 4096
_CHUNK_BYTES = 64 << 20  # rows copied per write: bounded memory whatever the table's size
_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
           "float64": torch.float64}


def _round_up(x: int, a: int) -> int:
    return (x + a - 1) // a * a


@dataclass(frozen=True)
class FeatureFile:
    """A validated feature file's header: where the rows are and what they hold."""

    path: Path
    dtype: torch.dtype
    num_nodes: int
    dim: int
    data_offset: int
    order_offset: int | None
    rows_per_unit: int = 1
    unit_bytes: int = 0  # 0: dense (unit = one row)

    @property
    def row_bytes(self) -> int:
        return self.dim * self.dtype.itemsize

    @property
    def data_bytes(self) -> int:
        """Bytes of row data (what a dense table of the features holds)."""
        return self.num_nodes * self.row_bytes

    @property
    def packed(self) -> bool:
        return self.unit_bytes not in (0, self.row_bytes)

    @property
    def span_bytes(self) -> int:
        """Bytes the rows occupy in the file, padding included."""
        units = -(-self.num_nodes // self.rows_per_unit)
        return units * (self.unit_bytes or self.row_bytes) if self.packed else self.data_bytes

    def order(self) -> torch.Tensor | None:
        """order[slot] = node stored in row `slot`, or None when slot == node."""
        if self.order_offset is None:
            return None
        arr = np.fromfile(self.path, dtype=np.int64, count=self.num_nodes,
                          offset=self.order_offset)
        order = torch.from_numpy(arr)
        if order.numel() != self.num_nodes or not torch.equal(
                torch.sort(order).values, torch.arange(self.num_nodes)):
            raise ValueError(f"{self.path}: its row order is not a permutation of the "
                             f"{self.num_nodes} nodes (corrupt file?)")
        return order


def read_header(path: str | os.PathLike) -> FeatureFile:
    """The header of feature file `path`, checked against the file's size; a missing,
    truncated or foreign file raises FileNotFoundError/ValueError naming it."""
    path = Path(path)
    with open(path, "rb") as f:
        head = f.read(ALIGN)
        size = os.fstat(f.fileno()).st_size
    if len(head) < ALIGN or not head.startswith(MAGIC):
        raise ValueError(f"{path} is not a gnnrepro feature file (no {MAGIC!r} header)")
    try:
        meta = json.loads(head[len(MAGIC):].rstrip(b"\0 ").decode())
        dtype = _DTYPES[meta["dtype"]]
        num_nodes, dim = int(meta["num_nodes"]), int(meta["dim"])
        data_offset, order_offset = int(meta["data_offset"]), meta.get("order_offset")
        per_unit, unit = int(meta.get("rows_per_unit", 1)), int(meta.get("unit_bytes", 0))
    except (ValueError, KeyError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: unreadable feature-file header ({exc})") from exc
    row_bytes = dim * dtype.itemsize if dim > 0 else 0
    if (num_nodes < 0 or dim < 1 or data_offset < ALIGN or data_offset % ALIGN or per_unit < 1
            or (unit and unit < per_unit * row_bytes)):
        raise ValueError(f"{path}: header describes an invalid layout ({meta})")
    info = FeatureFile(path, dtype, num_nodes, dim, data_offset,
                       None if order_offset is None else int(order_offset), per_unit, unit)
    need = _round_up(data_offset + info.span_bytes, ALIGN)
    if info.order_offset is not None:
        need = max(need, info.order_offset + 8 * num_nodes)
    if size < need:
        raise ValueError(f"{path} is {size} bytes but its header describes {need} "
                         f"({num_nodes} rows x {dim} {meta['dtype']}): truncated?")
    return info


def write_feature_file(path: str | os.PathLike, features: np.ndarray | torch.Tensor,
                       order: torch.Tensor | None = None,
                       pack_block: int | None = None) -> FeatureFile:
    """Write `features` [num_nodes, dim] (array, tensor or memmap) as a feature file at `path`.

    `order` (a permutation of the nodes) stores node order[s] in row slot s. `pack_block`
    (e.g. the device's logical block size) packs whole rows into blocks of that size (see the
    module doc); None writes them dense. Raises OSError (ENOSPC) before writing anything when
    the file system lacks the room.
    """
    if isinstance(features, torch.Tensor):
        features = features.numpy()
    if not isinstance(features, np.ndarray) or features.ndim != 2:
        raise ValueError("features must be a 2-D array [num_nodes, dim]")
    name = str(features.dtype)
    if name not in _DTYPES:
        raise TypeError(f"features must be float16/32/64, got {features.dtype}")
    num_nodes, dim = features.shape
    if dim < 1:
        raise ValueError("features must have at least one column")
    if order is not None:
        order = torch.as_tensor(order).to(torch.int64)
        if order.shape != (num_nodes,) or not torch.equal(torch.sort(order).values,
                                                          torch.arange(num_nodes)):
            raise ValueError(f"order must be a permutation of range({num_nodes})")
    path = Path(path)
    row_bytes = dim * features.dtype.itemsize
    per_unit, unit = 1, 0
    if pack_block is not None:
        if pack_block < 512 or pack_block & (pack_block - 1):
            raise ValueError(f"pack_block must be a power of two >= 512, got {pack_block}")
        per_unit = max(1, pack_block // row_bytes)
        unit = _round_up(per_unit * row_bytes, pack_block)
    span = -(-num_nodes // per_unit) * unit if unit else num_nodes * row_bytes
    data_end = _round_up(ALIGN + span, ALIGN)
    total = data_end + (8 * num_nodes if order is not None else 0)
    path.parent.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(path.parent).free
    if free < total:
        raise OSError(errno.ENOSPC, f"not enough disk space to write the feature file {path}: "
                                    f"it needs {total} bytes, {free} are free")
    meta = {"version": 1, "dtype": name, "num_nodes": num_nodes, "dim": dim,
            "data_offset": ALIGN, "order_offset": data_end if order is not None else None,
            "rows_per_unit": per_unit, "unit_bytes": unit}
    head = MAGIC + json.dumps(meta).encode()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(head.ljust(ALIGN, b"\0"))
            step = max(1, _CHUNK_BYTES // row_bytes) // per_unit * per_unit or per_unit
            for start in range(0, num_nodes, step):
                stop = min(start + step, num_nodes)
                rows = (features[order[start:stop].numpy()] if order is not None
                        else features[start:stop])
                f.write(_units(np.ascontiguousarray(rows), per_unit, unit))
            f.write(b"\0" * (data_end - f.tell()))
            if order is not None:
                f.write(order.numpy().tobytes())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        if exc.errno == errno.ENOSPC:
            raise OSError(errno.ENOSPC, f"ran out of disk space writing the feature file "
                                        f"{path} ({total} bytes)") from exc
        raise
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return read_header(path)


def _units(rows: np.ndarray, per_unit: int, unit: int) -> bytes:
    """`rows` as file bytes: dense (unit 0), or `per_unit` rows per zero-padded unit."""
    if not unit:
        return rows.tobytes()
    raw = rows.view(np.uint8).reshape(rows.shape[0], -1)
    units = -(-raw.shape[0] // per_unit)
    out = np.zeros((units, unit), dtype=np.uint8)
    full = np.zeros((units * per_unit, raw.shape[1]), dtype=np.uint8)
    full[: raw.shape[0]] = raw
    out[:, : per_unit * raw.shape[1]] = full.reshape(units, -1)
    return out.tobytes()


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
                    info.dtype == _DTYPES.get(str(array.dtype)) and \
                    (order is None) == (info.order_offset is None) and \
                    info.packed == (pack_block is not None):
                return info
        except ValueError:
            pass  # stale or corrupt: rewrite it
    return write_feature_file(path, array, order, pack_block)


def block_size_of(path: str | os.PathLike) -> int:
    """The logical block size of the device holding `path` (what O_DIRECT must align to), from
    sysfs; 4096 (right for every common device) when it cannot be found."""
    dev = os.stat(path).st_dev
    base = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
    for candidate in (base / "queue" / "logical_block_size",
                      base / ".." / "queue" / "logical_block_size"):  # a partition's disk
        try:
            size = int(candidate.read_text())
        except (OSError, ValueError):
            continue
        if size in (512, 1024, 2048, 4096):
            return size
    return ALIGN


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
