"""Resident memory of a process tree, sampled once: RSS, USS and PSS per process and summed.

Why PSS: pages shared by k processes (the shared-memory dataset, libraries) count 1/k in each,
so the sum over every process of a run counts each physical page once - the machine's memory
that the run holds. USS (pages only that process maps) is what a process holds privately, e.g.
a per-rank copy of the graph. Reading /proc/<pid>/smaps costs tens of milliseconds per large
process, so it is sampled once at the end of training, never polled.
"""
from __future__ import annotations

import psutil

__all__ = ["tree_memory"]


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
