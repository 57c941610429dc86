"""Checkpoints that resume bit for bit: files written atomically, checked on reading, loaded
without unpickling code.

A checkpoint file is a header - MAGIC, the SHA-256 of the payload, the payload's length - then
the payload: `torch.save` of a dict of tensors and plain data (str, int, float, bool, None,
lists, dicts), read back with `torch.load(weights_only=True)`, which refuses any other object,
so a file from elsewhere cannot run code. A file that is cut short or altered fails its length
or digest and is refused by name; the previous valid one is used instead, with a line saying so.

Writes go to a temporary file in the same directory, are fsynced, then renamed over the final
name (and the directory fsynced), so a process killed while writing leaves the previous
checkpoints intact and at worst a temporary file, which the next Checkpointer removes. The last
`keep` checkpoints are kept. Each checkpoint says what it belongs to (`identity`: the dataset
and its parameters, the model, the world size and the run's settings); one of another identity
is refused with a message naming each difference.

For tests and the fault benchmark, GNNREPRO_FAULT makes a process kill itself (SIGKILL, as a
preemption would): "step:N" after its N-th optimizer step (counted over the whole run, from 1),
"write:N" half-way through writing its N-th checkpoint of this process; an "@R" suffix limits it
to rank R. With GNNREPRO_FAULT_MARK set to a path, the fault fires once: the first process to
reach it creates that file, and none fires while it exists (a restarted group goes on).
"""
from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import signal
import struct
import sys
from pathlib import Path
from typing import Any

import torch

from gnnrepro.checks import check_int

__all__ = ["CheckpointError", "Checkpointer", "fault_after_step", "read_checkpoint"]

MAGIC = b"GNNREPRO-CHECKPOINT-1\n"
_HEADER = struct.Struct("<32sQ")  # payload SHA-256, payload length
_NAME = re.compile(r"^step-(\d{10})\.ckpt$")
_TEMPORARY = re.compile(r"^\.step-\d{10}\.ckpt\.tmp-\d+$")


class CheckpointError(ValueError):
    """A checkpoint that cannot be used: cut short, altered, not a checkpoint, or another run's."""


def _fault(kind: str, count: int, rank: int) -> None:
    """SIGKILL this process if GNNREPRO_FAULT names this point (see the module doc)."""
    spec = os.environ.get("GNNREPRO_FAULT", "")
    if not spec:
        return
    point, _, only_rank = spec.partition("@")
    if point != f"{kind}:{count}" or (only_rank and int(only_rank) != rank):
        return
    mark = os.environ.get("GNNREPRO_FAULT_MARK")
    if mark:
        try:
            Path(mark).touch(exist_ok=False)
        except FileExistsError:
            return
    sys.stdout.flush()
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def fault_after_step(global_step: int, rank: int = 0) -> None:
    """The "step:N" fault point: called after each optimizer step (see the module doc)."""
    _fault("step", global_step, rank)


def _encode(state: dict[str, Any]) -> bytes:
    buffer = io.BytesIO()
    torch.save(state, buffer)
    payload = buffer.getvalue()
    return MAGIC + _HEADER.pack(hashlib.sha256(payload).digest(), len(payload)) + payload


def read_checkpoint(path: Path) -> dict[str, Any]:
    """The state saved in the checkpoint file `path`; CheckpointError naming it if the file is
    not a complete, unaltered checkpoint or holds anything but tensors and plain data."""
    data = Path(path).read_bytes()
    head = len(MAGIC) + _HEADER.size
    if not data.startswith(MAGIC):
        raise CheckpointError(f"{path} is not a gnnrepro checkpoint (no header)")
    if len(data) < head:
        raise CheckpointError(f"{path} is truncated ({len(data)} bytes, header incomplete)")
    digest, length = _HEADER.unpack_from(data, len(MAGIC))
    payload = data[head:]
    if len(payload) != length:
        raise CheckpointError(f"{path} is truncated: {len(payload)} of {length} payload bytes")
    if hashlib.sha256(payload).digest() != digest:
        raise CheckpointError(f"{path} is corrupted: its payload does not match its SHA-256")
    try:
        state = torch.load(io.BytesIO(payload), map_location="cpu", weights_only=True)
    except Exception as exc:  # refused by weights_only: an object that is not plain data
        raise CheckpointError(f"{path} holds something other than tensors and plain data, "
                              f"refused: {exc}") from exc
    if not isinstance(state, dict) or "identity" not in state:
        raise CheckpointError(f"{path} holds no gnnrepro training state")
    return state


def _differences(saved: dict[str, Any], expected: dict[str, Any]) -> list[str]:
    return [f"{key}: checkpoint {saved.get(key)!r}, this run {expected.get(key)!r}"
            for key in sorted(set(saved) | set(expected)) if saved.get(key) != expected.get(key)]


class Checkpointer:
    """The checkpoints of one run in `directory`: `save` writes one atomically and keeps the
    last `keep`; `latest` reads the newest valid one. Only the writing rank (0) calls save;
    every rank may call latest."""

    def __init__(self, directory: str | os.PathLike, keep: int = 3, rank: int = 0):
        if not isinstance(directory, (str, os.PathLike)):
            raise TypeError(f"checkpoint_dir must be a path, got {type(directory).__name__}")
        self.keep = check_int("keep_checkpoints", keep, 1)
        self.directory = Path(directory)
        self.rank = rank
        self._writes = 0
        if rank == 0:
            self.directory.mkdir(parents=True, exist_ok=True)
            for leftover in self.directory.iterdir():  # a writer killed mid-write left it
                if _TEMPORARY.match(leftover.name):
                    leftover.unlink(missing_ok=True)

    def paths(self) -> list[Path]:
        """The checkpoint files, oldest first."""
        if not self.directory.is_dir():
            return []
        return sorted(p for p in self.directory.iterdir() if _NAME.match(p.name))

    def save(self, state: dict[str, Any], global_step: int) -> Path:
        """Write `state` (tensors and plain data, with an "identity") as the checkpoint of
        `global_step`; remove all but the last `keep`. OSError naming the path and the bytes
        needed and free when the disk cannot take it (the previous checkpoints stay valid)."""
        data = _encode(state)
        final = self.directory / f"step-{global_step:010d}.ckpt"
        temporary = self.directory / f".{final.name}.tmp-{os.getpid()}"
        self._writes += 1
        try:
            with open(temporary, "wb") as f:
                half = len(data) // 2
                f.write(data[:half])
                f.flush()
                _fault("write", self._writes, self.rank)
                f.write(data[half:])
                f.flush()
                os.fsync(f.fileno())
            os.replace(temporary, final)
        except OSError as exc:
            temporary.unlink(missing_ok=True)
            free = shutil.disk_usage(self.directory).free
            raise OSError(exc.errno, f"could not write checkpoint {final}: {len(data)} bytes "
                                     f"needed, {free} bytes free ({exc.strerror})") from exc
        _fsync_directory(self.directory)
        for old in self.paths()[:-self.keep]:
            old.unlink(missing_ok=True)
        return final

    def latest(self, identity: dict[str, Any]) -> tuple[dict[str, Any], Path] | None:
        """The newest valid checkpoint's state and path, None if there is none. A damaged one
        is skipped with a line on stderr naming it; one of another run (identity differs) is
        refused: CheckpointError naming each difference."""
        for path in reversed(self.paths()):
            try:
                state = read_checkpoint(path)
            except CheckpointError as exc:
                print(f"skipping checkpoint: {exc}; trying the one before it", file=sys.stderr)
                continue
            differences = _differences(state["identity"], identity)
            if differences:
                raise CheckpointError(f"{path} belongs to another run; it differs in "
                                      + "; ".join(differences))
            return state, path
        return None


def _fsync_directory(directory: Path) -> None:
    """Make a rename in `directory` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
