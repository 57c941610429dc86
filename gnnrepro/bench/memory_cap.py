"""A memory cgroup for one child process of `bench storage`: found under cgroup v1 or v2,
made, joined, capped, read and removed; or, where none can be made, why.

v1 (also the "hybrid" layout, v1 controllers beside a v2 hierarchy): the memory controller's
own hierarchy, `<fs>/memory`, with memory.limit_in_bytes, memory.usage_in_bytes and
memory.max_usage_in_bytes. v2 (unified): `<fs>` (or the hybrid layout's `<fs>/unified`) if
its cgroup.controllers include memory, with memory.max, memory.current and memory.peak; the
memory controller is enabled for its children first where it is not (cgroup.subtree_control).
As root both work; otherwise only a delegated hierarchy does. `<fs>` is /sys/fs/cgroup.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

__all__ = ["CGROUP_FS", "find_hierarchy", "join", "make_cgroup", "peak", "reached",
           "remove_cgroup", "reset_peak", "set_limit", "usage"]

#: Where the kernel's cgroup file systems are mounted.
CGROUP_FS = Path("/sys/fs/cgroup")
_FILES = {"v1": {"limit": "memory.limit_in_bytes", "usage": "memory.usage_in_bytes",
                 "peak": "memory.max_usage_in_bytes"},
          "v2": {"limit": "memory.max", "usage": "memory.current", "peak": "memory.peak"}}


def find_hierarchy(fs: Path | None = None) -> tuple[Path, str] | str:
    """Where memory cgroups can be made under the cgroup mount point `fs` (default
    CGROUP_FS), and which version: (the directory, "v1" | "v2"); or, where there is none,
    why."""
    fs = CGROUP_FS if fs is None else fs
    v1 = fs / "memory"
    if (v1 / _FILES["v1"]["limit"]).exists():
        return v1, "v1"
    reasons = []
    for root in (fs, fs / "unified"):
        controllers = root / "cgroup.controllers"
        if not controllers.exists():
            continue
        try:
            available = controllers.read_text().split()
        except OSError as exc:
            reasons.append(f"{controllers} cannot be read: {exc}")
            continue
        if "memory" in available:
            return root, "v2"
        reasons.append(f"cgroup v2 at {root} without the memory controller ({controllers}: "
                       f"{' '.join(available) or 'empty'})")
    return "; ".join(reasons) or (f"no memory cgroup: neither {v1 / _FILES['v1']['limit']} "
                                  f"(v1) nor {fs / 'cgroup.controllers'} (v2)")


def make_cgroup(fs: Path | None = None) -> tuple[Path, str] | str:
    """A fresh memory cgroup this process may fill and cap: (its directory, "v1" | "v2"); or,
    where none can be made, why (for the result: the store then runs uncapped)."""
    found = find_hierarchy(fs)
    if isinstance(found, str):
        return found
    root, kind = found
    if kind == "v2":
        why = _enable_memory(root)
        if why is not None:
            return why
    path = root / f"gnnrepro-storage-{os.getpid()}-{time.monotonic_ns()}"
    whom = "" if os.geteuid() == 0 else f", not root (uid {os.geteuid()})"
    try:
        path.mkdir()
    except OSError as exc:
        return f"cannot make a memory cgroup in {root} (cgroup {kind}{whom}): {exc}"
    if _file(path, kind, "limit").exists():
        return path, kind
    remove_cgroup(path)
    return (f"the cgroup made in {root} (cgroup {kind}{whom}) has no "
            f"{_FILES[kind]['limit']}")


def _enable_memory(root: Path) -> str | None:
    """Enable the memory controller for the children of the v2 cgroup `root` where it is not
    (the kernel refuses in a cgroup that holds processes, unless it is the root cgroup); None,
    or why it cannot be."""
    control = root / "cgroup.subtree_control"
    try:
        if "memory" in control.read_text().split():
            return None
        control.write_text("+memory")
    except OSError as exc:
        return (f"cgroup v2: the memory controller is not enabled for the children of {root} "
                f"and cannot be ({control}: {exc})")
    return None


def remove_cgroup(cgroup: Path) -> None:
    """Remove an (empty) cgroup; one still in use is left."""
    try:
        cgroup.rmdir()
    except OSError:
        pass


def _file(cgroup: Path, kind: str, what: str) -> Path:
    return cgroup / _FILES[kind][what]


def join(cgroup: Path) -> None:
    """Move this process into `cgroup`."""
    (cgroup / "cgroup.procs").write_text(str(os.getpid()))


def set_limit(cgroup: Path, kind: str, limit: int) -> None:
    _file(cgroup, kind, "limit").write_text(str(limit))


def usage(cgroup: Path, kind: str) -> int:
    return int(_file(cgroup, kind, "usage").read_text())


def reset_peak(cgroup: Path, kind: str) -> None:
    """Restart the cgroup's peak-usage counter (v2 kernels before 6.12 cannot: then the peak
    since the cgroup was made, which is all this child's life, is what counts)."""
    try:
        _file(cgroup, kind, "peak").write_text("0")
    except OSError:
        pass


def peak(cgroup: Path, kind: str) -> int:
    try:
        return int(_file(cgroup, kind, "peak").read_text())
    except (OSError, ValueError):
        return 0


def reached(cap: dict) -> bool | None:
    """Whether a capped store's memory reached its limit: its peak within 5% of its
    allowance (limit - baseline; at least 1 MiB) of the limit. None where `cap` holds no
    limit and peak (uncapped, or a result from before peaks were kept).

    A cap a store never reached did not constrain it: mmap reading a file whose pages were
    cached outside its cgroup (charged where they were first read) runs at memory speed
    under any limit, and its rows/s are then no capped measurement."""
    if "limit_bytes" not in cap or "peak_bytes" not in cap:
        return None
    slack = max(2**20, 0.05 * (cap["limit_bytes"] - cap.get("baseline_bytes", 0)))
    return cap["limit_bytes"] - cap["peak_bytes"] <= slack
