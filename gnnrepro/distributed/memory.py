"""Resident memory of a process tree, sampled once: RSS, USS and PSS per process and summed.

Why PSS: pages shared by k processes (the shared-memory dataset, libraries) count 1/k in each,
so the sum over every process of a run counts each physical page once - the machine's memory
that the run holds. USS (pages only that process maps) is what a process holds privately, e.g.
a per-rank copy of the graph. Reading /proc/<pid>/smaps costs tens of milliseconds per large
process, so it is sampled once at the end of training, never polled.

Why also `data_copies`: a process's USS mixes its interpreter, torch and batch buffers with
any copy of the data it made, and a copy a rank shares with its own sampling workers is not in
anyone's USS at all. Naming the memory behind each data array - which file or shared-memory
object, or which process's private heap - counts the machine's copies of the data directly:
the one thing the shared store must avoid is a second one.
"""
from __future__ import annotations

import bisect
import ctypes
import gc
import os
from typing import Any

import numpy as np
import psutil
import torch

from gnnrepro.distributed.machine_share import machine_id

__all__ = ["PSS_KINDS", "cuda_context_pss_bytes", "data_copies", "machine_data_bytes",
           "release_free_heap", "tree_memory"]


PSS_KINDS = ("anon", "file", "shmem")  # smaps_rollup's split of PSS by kind of page
_KINDS = ("rss", "uss", "pss", *(f"pss_{kind}" for kind in PSS_KINDS))


def cuda_context_pss_bytes() -> int:
    """The host memory (PSS) a CUDA context adds to a process that has imported torch: a fresh
    child process's PSS after its first CUDA allocation less its PSS before (each data-parallel
    GPU rank holds one context). Needs a CUDA device."""
    import subprocess
    import sys
    code = ("import psutil, torch; p = psutil.Process(); before = p.memory_full_info().pss; "
            "torch.empty(1, device='cuda'); torch.cuda.synchronize(); "
            "print(p.memory_full_info().pss - before)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True)
    return int(run.stdout.strip().splitlines()[-1])


def release_free_heap() -> None:
    """Collect garbage and hand the C heap's free pages back to the system (glibc's
    malloc_trim; nothing more off glibc), so that a sample of this process's memory counts
    what it holds, not what its allocator kept from the last batches (which moved one sample
    by 100-300 MB between runs)."""
    gc.collect()
    trim = getattr(ctypes.CDLL(None), "malloc_trim", None)
    if trim is not None:
        trim(ctypes.c_size_t(0))


def tree_memory(pid: int | None = None) -> dict:
    """{"processes": [{pid, ppid, name, cmdline, rss, uss, pss, pss_anon, pss_file, pss_shmem}],
    "rss_bytes", "uss_bytes", "pss_bytes", "pss_anon_bytes", ...} of process `pid` (default:
    this one) and all its descendants; processes that exit meanwhile are skipped.

    The PSS split (Linux smaps_rollup; zero where the kernel lacks it) says what a page is:
    anon is a process's own heap (interpreter, torch, batch buffers, a private data copy),
    file is libraries and mapped files, shmem is shared memory - where the dataset lives."""
    root = psutil.Process(pid)
    rows = []
    for proc in [root] + root.children(recursive=True):
        try:
            info = proc.memory_full_info()
            rows.append({"pid": proc.pid, "ppid": proc.ppid(), "name": proc.name(),
                         "cmdline": " ".join(proc.cmdline())[:160], "rss": info.rss,
                         "uss": info.uss, "pss": info.pss, **_pss_split(proc.pid)})
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return {"processes": rows, **{f"{key}_bytes": sum(r[key] for r in rows) for key in _KINDS}}


def _pss_split(pid: int) -> dict[str, int]:
    """{"pss_anon", "pss_file", "pss_shmem"} bytes of `pid` from /proc/<pid>/smaps_rollup."""
    split = {f"pss_{kind}": 0 for kind in PSS_KINDS}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            for line in rollup:
                key, _, value = line.partition(":")
                name = key.lower()
                if name in split:
                    split[name] = int(value.split()[0]) * 1024  # kB
    except (OSError, ValueError):
        pass
    return split


_PAGE = os.sysconf("SC_PAGE_SIZE")


def data_copies(named: dict[str, torch.Tensor]) -> list[dict[str, Any]]:
    """Which copy of its data each CPU tensor of this process reads:
    [{"name", "copy", "bytes", "resident_bytes"}], one row per distinct copy.

    `copy` names the memory behind the tensor's storage: for a file or shared-memory mapping
    the file's device and inode and the storage's offset in it, the same string in every
    process of the machine that maps those pages; for private (anonymous) memory this
    process's pid and address, which no other process shares; prefixed by the machine. So the
    distinct `copy` strings over all ranks are the machines' copies of the data (see
    machine_data_bytes), whichever process made them. `resident_bytes`: how much of it this process has touched (/proc/self/pagemap,
    bit 63). A copy-on-write file mapping counts as the file's one copy: right for data that
    is only read, which is all the pipelines do with it.
    """
    machine, maps = machine_id(), _mappings()
    starts = [m[0] for m in maps]
    rows: dict[str, dict[str, Any]] = {}
    for name, tensor in named.items():
        storage = tensor.untyped_storage()
        if tensor.device.type != "cpu" or storage.nbytes() == 0:
            continue
        address = storage.data_ptr()
        # the mapping that holds a live storage: the last one starting at or below it
        begin, _, offset, device, inode = maps[bisect.bisect_right(starts, address) - 1]
        copy = (f"{machine}/file:{device}:{inode}:{offset + address - begin}" if inode
                else f"{machine}/private:{os.getpid()}:{address:x}")
        if copy not in rows:
            rows[copy] = {"name": name, "copy": copy, "bytes": storage.nbytes(),
                          "resident_bytes": _resident(address, storage.nbytes())}
    return list(rows.values())


def machine_data_bytes(ranks: list[list[dict[str, Any]]]) -> int:
    """Bytes of data held on the machine by the ranks whose data_copies are `ranks`: every
    distinct copy once. One shared copy: the dataset's size however many ranks map it; a
    copy per rank: that size times the ranks."""
    sizes = {row["copy"]: row["bytes"] for rows in ranks for row in rows}
    return sum(sizes.values())


def _mappings() -> list[tuple[int, int, int, str, int]]:
    """(start, end, file offset, device, inode) of this process's mappings, by start."""
    rows = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            begin, end = (int(x, 16) for x in fields[0].split("-"))
            rows.append((begin, end, int(fields[2], 16), fields[3], int(fields[4])))
    return sorted(rows)


def _resident(address: int, nbytes: int) -> int:
    """Bytes of [address, address + nbytes) resident in this process (0 if unreadable)."""
    first, last = address // _PAGE, -(-(address + nbytes) // _PAGE)
    try:
        with open("/proc/self/pagemap", "rb") as pagemap:
            pagemap.seek(first * 8)
            entries = np.frombuffer(pagemap.read((last - first) * 8), dtype="<u8")
    except OSError:
        return 0
    return int(np.count_nonzero(entries >> np.uint64(63))) * _PAGE
