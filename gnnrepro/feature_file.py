"""The on-disk feature-table format the disk-backed stores read: rows aligned for direct I/O.

Layout: a 4 KiB header (magic, then JSON: dtype, num_nodes, dim, data_offset, order_offset,
rows_per_unit, unit_bytes), the rows at `data_offset` (4 KiB), padded to a multiple of 4 KiB,
then - optionally - `order`, int64 [num_nodes]: order[slot] is the node stored in row slot
`slot` (rows read together can be stored near each other). Why 4 KiB: the largest logical
block size of common devices, so an O_DIRECT read of any aligned block range stays inside the
file on 512-byte and 4 KiB devices alike. Rows are dense (one after another) or block-packed:
units of `unit_bytes` (a block) holding `rows_per_unit` whole rows each, so a row never
straddles a block and reading one costs one block (400-byte rows on 512-byte sectors: 512
bytes per row instead of 896 on average, for a file 28% larger). A row of a whole number of
blocks (IGB's 1024 float32s: 4 KiB) is both dense and packed.

`FeatureFileWriter` writes a file chunk by chunk (memory bounded by a chunk, whatever the
table's size) into a partial file that is renamed into place only when complete, after a
disk-space check that fails with a clear error before anything is written; with a fixed
partial path it resumes an interrupted write. This module is the format alone (a bottom
layer): the datasets write and map feature files, the feature stores read them.
"""
from __future__ import annotations

import errno
import json
import os
import shutil
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

__all__ = ["DTYPES", "FeatureFile", "FeatureFileWriter", "block_size_of", "read_header",
           "write_feature_file", "ALIGN", "MAGIC"]

MAGIC = b"GNNRFEAT"
ALIGN = 4096
CHUNK_BYTES = 64 << 20  # rows written per call: bounded memory whatever the table's size
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
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

    def dense_rows(self) -> torch.Tensor:
        """The rows as a [num_nodes, dim] memory map of the file (dense files without an
        order only: row i is node i's). Read-only (never write to it): a private, writable
        map of a table larger than memory would be refused by the kernel's overcommit
        check."""
        if self.packed or self.order_offset is not None:
            raise ValueError(f"{self.path}: only a dense file in node order maps as a table")
        array = np.memmap(self.path, dtype=str(self.dtype).removeprefix("torch."), mode="r",
                          offset=self.data_offset, shape=(self.num_nodes, self.dim))
        with warnings.catch_warnings():  # torch warns that the array is not writable
            warnings.simplefilter("ignore", UserWarning)
            return torch.from_numpy(array)


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
        dtype = DTYPES[meta["dtype"]]
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


def _units(rows: np.ndarray, per_unit: int, unit: int) -> bytes | np.ndarray:
    """`rows` as file bytes: dense (unit 0), or `per_unit` rows per zero-padded unit."""
    if not unit:
        return rows
    raw = rows.view(np.uint8).reshape(rows.shape[0], -1)
    units = -(-raw.shape[0] // per_unit)
    out = np.zeros((units, unit), dtype=np.uint8)
    full = np.zeros((units * per_unit, raw.shape[1]), dtype=np.uint8)
    full[: raw.shape[0]] = raw
    out[:, : per_unit * raw.shape[1]] = full.reshape(units, -1)
    return out


class FeatureFileWriter:
    """Writes the feature file `path` of `num_nodes` x `dim` `dtype` rows in order, a chunk
    at a time (`append`), into `partial` (default: a fresh hidden file beside `path`), renamed
    to `path` by `finish`.

    `pack_block` packs rows into blocks of that size (module doc); `with_order` reserves room
    for a row order given to `finish`. With `resume=True` and a partial file (plus its
    `.rows` record, written by `checkpoint`) of the same layout, writing continues after the
    rows recorded (`rows_done`); anything else starts over. Raises OSError(ENOSPC) naming the
    bytes needed and free before writing when the file system lacks the room.
    """

    def __init__(self, path: str | os.PathLike, num_nodes: int, dim: int,
                 dtype: torch.dtype = torch.float32, *, pack_block: int | None = None,
                 with_order: bool = False, partial: str | os.PathLike | None = None,
                 resume: bool = False):
        name = str(dtype).removeprefix("torch.")
        if name not in DTYPES:
            raise TypeError(f"features must be float16/32/64 or bfloat16, got {dtype}")
        if num_nodes < 0:
            raise ValueError(f"num_nodes must be >= 0, got {num_nodes}")
        if dim < 1:
            raise ValueError("features must have at least one column")
        self.path = Path(path)
        self.num_nodes, self.dim, self.dtype = num_nodes, dim, dtype
        self.row_bytes = dim * dtype.itemsize
        self.per_unit, self.unit = 1, 0
        if pack_block is not None:
            if pack_block < 512 or pack_block & (pack_block - 1):
                raise ValueError(f"pack_block must be a power of two >= 512, got {pack_block}")
            self.per_unit = max(1, pack_block // self.row_bytes)
            self.unit = _round_up(self.per_unit * self.row_bytes, pack_block)
        span = (-(-num_nodes // self.per_unit) * self.unit if self.unit
                else num_nodes * self.row_bytes)
        self.data_end = _round_up(ALIGN + span, ALIGN)
        self.total_bytes = self.data_end + (8 * num_nodes if with_order else 0)
        meta = {"version": 1, "dtype": name, "num_nodes": num_nodes, "dim": dim,
                "data_offset": ALIGN, "order_offset": self.data_end if with_order else None,
                "rows_per_unit": self.per_unit, "unit_bytes": self.unit}
        self._head = (MAGIC + json.dumps(meta).encode()).ljust(ALIGN, b"\0")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.partial = None if partial is None else Path(partial)
        self.rows_done = self._resumable_rows() if resume and self.partial else 0
        have = self.partial.stat().st_size if self.rows_done else 0
        free = shutil.disk_usage(self.path.parent).free
        if free < self.total_bytes - have:
            raise OSError(errno.ENOSPC, f"not enough disk space for the feature file "
                                        f"{self.path}: it needs {self.total_bytes - have} more "
                                        f"bytes ({self.total_bytes} in all), {free} are free")
        if self.partial is None:
            fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.tmp-", dir=self.path.parent)
            os.close(fd)
            self.partial = Path(tmp)
        self._file = open(self.partial, "r+b" if self.rows_done else "wb")
        if self.rows_done:
            self._file.truncate(self._offset(self.rows_done))
            self._file.seek(self._offset(self.rows_done))
        else:
            self._file.write(self._head)

    @property
    def _record(self) -> Path:
        """Where `checkpoint` records the rows written so far."""
        return self.partial.with_name(self.partial.name + ".rows")

    def _offset(self, rows: int) -> int:
        """File offset of row `rows` (a unit boundary)."""
        return ALIGN + (rows // self.per_unit * self.unit if self.unit else rows * self.row_bytes)

    def _resumable_rows(self) -> int:
        """Rows recorded as written in a partial file of this layout, else 0."""
        try:
            done = int(self._record.read_text())
            with open(self.partial, "rb") as f:
                head = f.read(ALIGN)
                size = os.fstat(f.fileno()).st_size
        except (OSError, ValueError):
            return 0
        ok = (head == self._head and 0 < done <= self.num_nodes and size >= self._offset(done)
              and (done % self.per_unit == 0 or done == self.num_nodes))
        return done if ok else 0

    @property
    def chunk_rows(self) -> int:
        """A good number of rows per `append`: about CHUNK_BYTES, whole units."""
        step = max(1, CHUNK_BYTES // self.row_bytes)
        return max(self.per_unit, step // self.per_unit * self.per_unit)

    def append(self, rows: np.ndarray) -> None:
        """Write the next rows (a [k, dim] array of the file's dtype); every call but the
        last must hold whole units (a multiple of rows_per_unit)."""
        if rows.ndim != 2 or rows.shape[1] != self.dim:
            raise ValueError(f"rows must have shape [k, {self.dim}], got {rows.shape}")
        if self.rows_done % self.per_unit:
            raise ValueError("rows were appended after a partial unit (only the last call "
                             "may end inside a unit)")
        if self.rows_done + rows.shape[0] > self.num_nodes:
            raise ValueError(f"more rows than num_nodes={self.num_nodes}")
        try:
            self._file.write(_units(np.ascontiguousarray(rows), self.per_unit, self.unit))
        except OSError as exc:
            raise self._explain(exc) from exc
        self.rows_done += rows.shape[0]

    def checkpoint(self) -> None:
        """Make the rows so far durable and record them, so `resume` can continue here."""
        self._file.flush()
        os.fsync(self._file.fileno())
        tmp = self._record.with_name(self._record.name + ".tmp")
        tmp.write_text(str(self.rows_done))
        os.replace(tmp, self._record)

    def finish(self, order: torch.Tensor | None = None) -> FeatureFile:
        """Pad, write `order` (if reserved), sync and rename into place: the finished file."""
        if self.rows_done != self.num_nodes:
            raise ValueError(f"{self.rows_done} of {self.num_nodes} rows written")
        try:
            self._file.write(b"\0" * (self.data_end - self._file.tell()))
            if self.total_bytes > self.data_end:
                if order is None:
                    raise ValueError("this file reserved room for a row order: pass order=")
                self._file.write(order.to(torch.int64).numpy().tobytes())
            self._file.flush()
            os.fsync(self._file.fileno())
        except OSError as exc:
            raise self._explain(exc) from exc
        self._file.close()
        os.replace(self.partial, self.path)
        self._record.unlink(missing_ok=True)
        return read_header(self.path)

    def close(self) -> None:
        """Close the partial file, keeping it (and its checkpoint) for a resumed write."""
        self._file.close()

    def abort(self) -> None:
        """Close and delete the partial file (a write that cannot be resumed)."""
        self._file.close()
        self.partial.unlink(missing_ok=True)
        self._record.unlink(missing_ok=True)

    def _explain(self, exc: OSError) -> OSError:
        if exc.errno == errno.ENOSPC:
            return OSError(errno.ENOSPC, f"ran out of disk space writing the feature file "
                                         f"{self.path} ({self.total_bytes} bytes)")
        return exc


def write_feature_file(path: str | os.PathLike, features: np.ndarray | torch.Tensor,
                       order: torch.Tensor | None = None,
                       pack_block: int | None = None) -> FeatureFile:
    """Write `features` [num_nodes, dim] (array, tensor or memmap) as a feature file at `path`.

    `order` (a permutation of the nodes) stores node order[s] in row slot s. `pack_block`
    (e.g. the device's logical block size) packs whole rows into blocks of that size (see the
    module doc); None writes them dense. Raises OSError (ENOSPC) before writing anything when
    the file system lacks the room; nothing is left behind on failure.
    """
    if isinstance(features, torch.Tensor):
        features = features.numpy()
    if not isinstance(features, np.ndarray) or features.ndim != 2:
        raise ValueError("features must be a 2-D array [num_nodes, dim]")
    if str(features.dtype) not in DTYPES:
        raise TypeError(f"features must be float16/32/64, got {features.dtype}")
    num_nodes, dim = features.shape
    if order is not None:
        order = torch.as_tensor(order).to(torch.int64)
        if order.shape != (num_nodes,) or not torch.equal(torch.sort(order).values,
                                                          torch.arange(num_nodes)):
            raise ValueError(f"order must be a permutation of range({num_nodes})")
    writer = FeatureFileWriter(path, num_nodes, dim, DTYPES[str(features.dtype)],
                               pack_block=pack_block, with_order=order is not None)
    try:
        step = writer.chunk_rows
        for start in range(0, num_nodes, step):
            stop = min(start + step, num_nodes)
            writer.append(features[order[start:stop].numpy()] if order is not None
                          else features[start:stop])
        return writer.finish(order)
    except BaseException:
        writer.abort()
        raise


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
