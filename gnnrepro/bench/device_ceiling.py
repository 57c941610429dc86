"""The device's ceiling, measured in the same run as the feature stores it bounds (`bench
storage`, `bench disk-training`): random direct reads of a feature file with fio, or with our
own reader where fio is not installed; and the device's read-ahead, what an mmap fault reads
around the page.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import torch

__all__ = ["fio_random_read", "read_ahead_kb", "reader_random_read"]


def fio_random_read(path: Path, block: int, depth: int, seconds: float = 2.0) -> dict | None:
    """fio random O_DIRECT reads of `block` bytes at queue depth `depth` on `path` (read only);
    None without fio."""
    if shutil.which("fio") is None:
        return reader_random_read(path, block, depth, seconds)
    cmd = ["fio", "--name=ceiling", f"--filename={path}", "--readonly", "--rw=randread",
           f"--bs={block}", f"--iodepth={depth}", "--direct=1", "--ioengine=io_uring",
           "--time_based", f"--runtime={seconds}", "--output-format=json",
           "--randrepeat=0", "--norandommap"]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        cmd[cmd.index("--ioengine=io_uring")] = "--ioengine=psync"
        cmd[cmd.index(f"--iodepth={depth}")] = f"--numjobs={depth}"
        cmd += ["--group_reporting"]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            return None
    job = json.loads(done.stdout)["jobs"][0]["read"]
    return {"block": block, "depth": depth, "iops": job["iops"],
            "bytes_per_s": job["bw_bytes"], "tool": "fio"}


def reader_random_read(path: Path, block: int, depth: int, seconds: float = 2.0) -> dict:
    """The same measurement with our own reader (where fio is not installed): random distinct
    `block`-sized O_DIRECT reads, `depth` in flight, for about `seconds`."""
    from gnnrepro import _ops
    blocks = os.path.getsize(path) // block
    reader = _ops._C.DiskReader(str(path), 0, block, blocks, min(block, 4096), depth, depth, 0,
                                max(block, 4096), "auto", True)
    gen = torch.Generator().manual_seed(0)
    n = max(depth * 64, 1024)
    buf = torch.empty((n, block), dtype=torch.uint8)
    done = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        pos = torch.unique(torch.randint(0, blocks, (n,), generator=gen))
        requests, _ = reader.submit(pos, buf).wait()
        done += requests
    elapsed = time.perf_counter() - start
    tool = f"gnnrepro DiskReader ({reader.engine})"
    reader.close()
    return {"block": block, "depth": depth, "iops": done / elapsed,
            "bytes_per_s": done * block / elapsed, "tool": tool}


def read_ahead_kb(path: Path) -> int | None:
    """The read-ahead of the device holding `path` (what an mmap fault reads around the
    page), from sysfs; None where it cannot be found."""
    dev = os.stat(path).st_dev
    base = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
    for candidate in (base / "queue" / "read_ahead_kb", base / ".." / "queue" / "read_ahead_kb"):
        try:
            return int(candidate.read_text())
        except (OSError, ValueError):
            continue
    return None
