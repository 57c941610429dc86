"""What the GPU session finds on a lent machine: modules (installed from carried wheels where
missing, no network), nvcc, compute-sanitizer, the compilers, and the device with its runtime.
Standard library only until torch is asked for: it runs before the modules are installed."""
from __future__ import annotations

import importlib.util
import os
import platform
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["PY", "SITE", "compilers", "has_module", "install_lacking", "install_missing",
           "machine", "nvcc", "sanitizer"]

PY = sys.executable
#: Where modules missing here are installed from the carried wheels.
SITE = Path(__file__).resolve().parent.parent / "build" / "gpu-site"


def has_module(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


#: The distribution that provides a module, where their names differ.
DISTRIBUTIONS = {"yaml": "pyyaml"}


def _install_each(names: list[str], site: Path, arguments: Callable[[list[str]], list[str]]
                  ) -> None:
    """pip install (no network, into `site`) `names` in one call, what `arguments(names)`
    says to install; one at a time where that fails, so that one bad wheel costs only its own
    name. `site` then goes first on sys.path."""
    def pip(some: list[str]) -> int:
        return subprocess.run([PY, "-m", "pip", "install", "-q", "--no-index", "--target",
                               str(site), "--upgrade", *arguments(some)]).returncode

    if pip(names) != 0:
        for name in names:
            pip([name])
    if str(site) not in sys.path:
        sys.path.insert(0, str(site))
    importlib.invalidate_caches()


def install_missing(modules: list[str], wheels: Path, site: Path = SITE) -> dict[str, str]:
    """Each module: 'present', 'installed' (from the wheels in `wheels`, into `site`, no
    network) or 'missing'. One pip call for all (one at a time if that fails, so one missing
    wheel costs only its own module). `site` goes first on sys.path, for this process and its
    steps."""
    missing = [m for m in modules if not has_module(m)]
    if missing and wheels.is_dir() and any(wheels.glob("*.whl")):
        _install_each(missing, site, lambda names: [
            "--find-links", str(wheels), *[DISTRIBUTIONS.get(n, n) for n in names]])
    return {m: "present" if m not in missing else "installed" if has_module(m) else "missing"
            for m in modules}


def install_lacking(wheels: Path, site: Path = SITE) -> dict[str, str]:
    """Each distribution with a wheel in `wheels`: 'present' (this Python has it, any
    version), 'installed' (from its wheel into `site`, no network, no dependencies: those
    are among the wheels) or 'missing' (pip failed). Only what the machine lacks is
    installed; `site` goes first on sys.path."""
    from importlib import metadata

    def have(name: str) -> bool:
        try:
            metadata.version(name)
        except metadata.PackageNotFoundError:
            return False
        return True

    found = {re.sub(r"[-_.]+", "-", w.name.split("-")[0]).lower(): w
             for w in sorted(wheels.glob("*.whl"))} if wheels.is_dir() else {}
    lacking = [name for name in found if not have(name)]
    if lacking:
        _install_each(lacking, site, lambda names: ["--no-deps", *[str(found[n]) for n in names]])
    return {name: "present" if name not in lacking else "installed" if have(name) else "missing"
            for name in found}


def nvcc() -> str | None:
    """nvcc from $CUDA_HOME, the PATH or /usr/local/cuda, as torch's build finds it."""
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    for candidate in ([os.path.join(home, "bin", "nvcc")] if home else []) + [
            shutil.which("nvcc") or "", "/usr/local/cuda/bin/nvcc"]:
        if candidate and os.path.exists(candidate):
            return candidate
    return None


def sanitizer() -> str | None:
    home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    found = shutil.which("compute-sanitizer") or str(Path(home) / "bin" / "compute-sanitizer")
    return found if os.path.exists(found) else None


def machine() -> dict[str, Any]:
    """The device and its runtime, as a result must name them."""
    import torch
    info: dict[str, Any] = {"python": platform.python_version(), "torch": torch.__version__,
                            "cuda": torch.version.cuda, "kernel": platform.release(),
                            "cpu_count": os.cpu_count(), "gpu": None}
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        info.update(gpu=props.name, capability=f"{props.major}.{props.minor}",
                    gpu_memory_gib=round(props.total_memory / 2**30, 1),
                    multiprocessors=props.multi_processor_count)
        smi = shutil.which("nvidia-smi")
        if smi:
            out = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=30).stdout.strip()
            info["driver"] = out or None
    # Firecracker and gVisor, the two runtimes lent GPU machines run under, differ for the
    # sanitizer; the kernel release names them (gVisor reports 4.4.0).
    info["runtime"] = ("gVisor" if platform.release().startswith("4.4.0") else
                       "firecracker" if "-fc-" in platform.release() else "unknown")
    return info


def compilers() -> dict[str, str | None]:
    """The C++ compiler a build uses (CXX, else c++ on the PATH) and the system's, by version."""
    def version(cmd: str | None) -> str | None:
        if not cmd or not shutil.which(cmd):
            return None
        out = subprocess.run([cmd, "--version"], capture_output=True, text=True, timeout=30)
        return f"{shutil.which(cmd)}: {out.stdout.splitlines()[0] if out.stdout else '?'}"
    return {"default": version(os.environ.get("CXX") or "c++"),
            "system": version("/usr/bin/g++")}
