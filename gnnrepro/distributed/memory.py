"""Resident memory of a process tree, sampled once: RSS, USS and PSS per process and summed.

Why PSS: pages shared by k processes (the shared-memory dataset, libraries) count 1/k in each,
so the sum over every process of a run counts each physical page once - the machine's memory
that the run holds. USS (pages only that process maps) is what a process holds privately, e.g.
a per-rank copy of the graph. Reading /proc/<pid>/smaps costs tens of milliseconds per large
process, so it is sampled once at the end of training, never polled.

Why also `private_bytes`: a process's USS mixes its interpreter, torch and batch buffers with
any copy of the data it made. Counting, page by page, which of the dataset's pages a rank maps
alone isolates the one thing the shared store must avoid: a per-rank copy of the data.
"""
from __future__ import annotations

import os
import struct

import psutil
import torch

__all__ = ["private_bytes", "tree_memory"]


def tree_memory(pid: int | None = None) -> dict:
    """{"processes": [{pid, name, rss, uss, pss}], "rss_bytes", "uss_bytes", "pss_bytes"} of
    process `pid` (default: this one) and all its descendants; processes that exit meanwhile
    are skipped."""
    root = psutil.Process(pid)
    rows = []
    for proc in [root] + root.children(recursive=True):
        try:
            info = proc.memory_full_info()
            rows.append({"pid": proc.pid, "name": proc.name(), "rss": info.rss,
                         "uss": info.uss, "pss": info.pss})
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return {"processes": rows, **{f"{key}_bytes": sum(r[key] for r in rows)
                                  for key in ("rss", "uss", "pss")}}


_PAGE = os.sysconf("SC_PAGE_SIZE")
_PRESENT, _EXCLUSIVE = 1 << 63, 1 << 56  # /proc/<pid>/pagemap entry bits (Linux >= 4.2)


def private_bytes(tensors: list[torch.Tensor]) -> dict[str, int]:
    """Of the memory under `tensors` (CPU tensors of this process), how much is resident, and
    how much of that is mapped by this process alone: {"resident_bytes", "private_bytes"}.

    Read page by page from /proc/self/pagemap, so it counts exactly the tensors' pages, not the
    mappings around them. A page of a shared-memory dataset that another process (the launcher,
    another rank) also maps is not private; a per-process copy of the data is. Overlapping
    tensors (views) are counted once. Zero for both where pagemap cannot be read.
    """
    pages: set[int] = set()
    for t in tensors:
        if t.device.type != "cpu" or t.numel() == 0:
            continue
        start = t.data_ptr() // _PAGE
        end = -(-(t.data_ptr() + t.untyped_storage().nbytes()) // _PAGE)
        pages.update(range(start, end))
    resident = private = 0
    try:
        with open("/proc/self/pagemap", "rb") as pagemap:
            for first, count in _runs(sorted(pages)):
                pagemap.seek(first * 8)
                entries = struct.unpack(f"<{count}Q", pagemap.read(count * 8))
                resident += sum(1 for e in entries if e & _PRESENT)
                private += sum(1 for e in entries if e & _PRESENT and e & _EXCLUSIVE)
    except OSError:
        return {"resident_bytes": 0, "private_bytes": 0}
    return {"resident_bytes": resident * _PAGE, "private_bytes": private * _PAGE}


def _runs(pages: list[int]) -> list[tuple[int, int]]:
    """Sorted page numbers as (first, count) runs of consecutive pages."""
    runs: list[tuple[int, int]] = []
    for page in pages:
        if runs and runs[-1][0] + runs[-1][1] == page:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((page, 1))
    return runs
