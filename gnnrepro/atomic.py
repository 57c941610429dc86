"""Atomic file writes: a temp file beside the target, renamed over it only once complete, so an
interrupted run never leaves a half-written result, table or figure behind."""
from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["write_atomic", "write_json_atomic", "write_text_atomic"]


def write_atomic(path: Path, write: Callable[[Path], None]) -> Path:
    """Call `write(tmp)` on a fresh temp path in `path`'s directory, then rename it to `path`.

    The temp file is removed if `write` raises (KeyboardInterrupt included), so either the old
    file or the complete new one is there, never a partial one.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(Path(tmp))
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return path


def write_text_atomic(path: Path, text: str) -> Path:
    """Write `text` (UTF-8) to `path` atomically."""
    return write_atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_json_atomic(path: Path, payload: Any) -> Path:
    """Write `payload` as indented JSON to `path` atomically."""
    return write_text_atomic(path, json.dumps(payload, indent=2, sort_keys=True) + "\n")
