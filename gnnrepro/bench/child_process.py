"""Each feature store measured in a child process of its own (`bench storage`,
`bench disk-training`), so that no store inherits another's memory or warm pages.

The parent drops the page cache of the files a store reads (`drop_page_cache`), then runs
`python -m <module> <settings as JSON>` (`run_child`); the child module's entry point is
`child_main(child)`, which prints the result as JSON on the last line of stdout. Before that a
child may report its progress (`progress`: one JSON line each, flushed), which is what the
parent has of it when the child runs past its time limit and is killed (`progress_lines`).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import json
import mmap
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["child_main", "drop_page_cache", "progress", "progress_lines", "resident_bytes",
           "run_child"]

#: What a parent makes of a child killed after `timeout` seconds: from its progress lines and
#: `timeout`, the store's result.
Stopped = Callable[[list[dict[str, Any]], float], dict[str, Any]]


def drop_page_cache(path: Path) -> None:
    """Evict `path`'s (clean) pages from the page cache."""
    files = [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else [path]
    for f in files:
        fd = os.open(f, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


_LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_LIBC.mmap.restype = ctypes.c_void_p
_LIBC.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_long]
_LIBC.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
_LIBC.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_MAP_FAILED = ctypes.c_void_p(-1).value


def resident_bytes(path: Path) -> int:
    """Bytes of file `path` in the page cache now (mincore over a mapping that touches
    nothing): what a store opening it would read at memory speed, whoever they are charged
    to. OSError if the file cannot be mapped."""
    size = os.path.getsize(path)
    if size == 0:
        return 0
    pages = -(-size // mmap.PAGESIZE)
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = _LIBC.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr in (None, _MAP_FAILED):
            raise OSError(ctypes.get_errno(), f"mmap of {path} failed")
        try:
            vec = (ctypes.c_ubyte * pages)()
            if _LIBC.mincore(addr, size, vec) != 0:
                raise OSError(ctypes.get_errno(), f"mincore of {path} failed")
            resident = sum(b & 1 for b in bytes(vec))
        finally:
            _LIBC.munmap(addr, size)
    finally:
        os.close(fd)
    return min(resident * mmap.PAGESIZE, size)


def run_child(module: str, bench: str, settings: dict[str, Any], timeout: float,
              stopped: Stopped | None = None) -> dict[str, Any]:
    """Run `python -m module` on `settings` (store `settings["store"]`) and return the result
    it prints; a child that exits with an error: the store's error. A child still running
    after `timeout` seconds is killed: then `stopped(its progress lines, timeout)`, or without
    `stopped` the error "timed out after N s"."""
    cmd = [sys.executable, "-m", module, json.dumps(settings)]
    print(f"bench {bench}: {settings['store']} ...", file=sys.stderr, flush=True)
    # A fixed malloc mmap threshold: large buffers freed go back to the system at once (glibc's
    # adaptive threshold would keep them in the heap, charged to a cap, after the first).
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="131072")
    try:
        done = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, timeout=timeout,
                              check=False, env=env)
    except subprocess.TimeoutExpired as exc:
        if stopped is None:
            return {"store": settings["store"], "error": f"timed out after {timeout:.0f} s"}
        return stopped(progress_lines(exc.stdout), timeout)
    if done.returncode != 0:  # its traceback went to our stderr
        why = (f"killed by signal {-done.returncode}, e.g. out of memory" if done.returncode < 0
               else "its error is on stderr")
        return {"store": settings["store"],
                "error": f"child exited with {done.returncode} ({why})"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def child_main(child: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """A child module's entry point: settings as JSON in argv[1], the result as JSON on the
    last line of stdout."""
    print(json.dumps(child(json.loads(sys.argv[1]))))


def progress(kind: str, **fields: Any) -> None:
    """Report progress to the parent: {"progress": kind, "time": the wall-clock time, **fields}
    as a line on stdout, flushed at once (the line is all the parent has if this process is
    killed before it prints its result)."""
    print(json.dumps({"progress": kind, "time": time.time(), **fields}), flush=True)


def progress_lines(output: bytes | str | None) -> list[dict[str, Any]]:
    """The whole progress lines in a killed child's output, oldest first (a line cut off by
    the kill, or any other output, is left out)."""
    if isinstance(output, bytes):
        output = output.decode(errors="replace")
    lines = []
    for line in (output or "").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and "progress" in entry:
            lines.append(entry)
    return lines
