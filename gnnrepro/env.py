"""The environment record every result carries: versions, hardware, threads, git commit and
the hash of the code that measured."""
from __future__ import annotations

import datetime
import functools
import hashlib
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path

import torch

from gnnrepro import _ops

_PACKAGES = ("torch", "numpy", "dgl", "ogb", "pandas", "papermill")


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


#: The commit a checkout without .git is (set by the GPU sessions, which are sent a copy of the
#: tree without its history).
COMMIT_ENV = "GNNREPRO_COMMIT"


def _git_state() -> tuple[str | None, list[str]]:
    """HEAD of the repository holding this package ('+dirty' if tracked files changed) and the
    changed tracked paths, so a result says exactly what code produced it; where the tree came
    without .git (a lent GPU machine), the commit COMMIT_ENV names."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                              text=True, timeout=10, check=True).stdout.strip()
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                                cwd=root, capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return os.environ.get(COMMIT_ENV) or None, []
    dirty = [line[3:] for line in status.splitlines() if line.strip()]
    return head + ("+dirty" if dirty else ""), dirty


@functools.cache
def source_hash() -> str:
    """SHA-256 (16 hex digits) of the code that measures: every file under gnnrepro/ (.py)
    and csrc/ (C++, CUDA), by path and content. Results are keyed by it, so a result made by
    other code is measured again, while commits that change no code (docs, figures) keep it."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    files = sorted(p for p in (root / "gnnrepro").rglob("*.py") if "__pycache__" not in p.parts)
    if (root / "csrc").is_dir():
        files += sorted(p for p in (root / "csrc").rglob("*")
                        if p.suffix in (".cpp", ".cu", ".h", ".cuh"))
    for path in files:
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def code_version() -> dict[str, str | None]:
    """What code made a result: the source hash (what results are keyed by) and the commit."""
    return {"source_hash": source_hash(), "git_commit": _git_state()[0]}


def environment() -> dict:
    """A JSON-ready description of where and with what a result was produced."""
    cuda = torch.cuda.is_available()
    commit, dirty = _git_state()
    return {
        "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "versions": {p: _version(p) for p in _PACKAGES} | {"gnnrepro": _version("gnnrepro")},
        "git_commit": commit,
        "git_dirty_files": dirty,
        "source_hash": source_hash(),
        "hostname": platform.node(),
        "platform": platform.platform(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "cuda": torch.version.cuda,
        "gnnrepro_cuda_kernels": _ops.cuda_compiled(),
        "gpu": torch.cuda.get_device_name() if cuda else None,
        "gpu_count": torch.cuda.device_count() if cuda else 0,
    }
