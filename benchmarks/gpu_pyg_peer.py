"""The GPU session's last step: a PyG user's own model (PyG's SAGEConv) on PyG's NeighborLoader
against the same model on our loader, on the GPU (issue 35's PyG figure).

PyG's NeighborLoader samples on the CPU with pyg-lib or torch-sparse; the lent GPU machines have
torch_geometric but neither, and no registry serves them a wheel for their torch. So the
session builds torch-sparse from its source distribution (carried in the wheels folder:
`make gpu-wheels` fetches it), CPU ops only, in the background from the start, into its own
folder; the peer's Python is the machine's own with that folder on its path. Where there is no
source distribution, or the build fails, the step says so and is skipped.
"""
from __future__ import annotations

import importlib.util
import os
import stat
import subprocess
from pathlib import Path
from typing import Protocol

ROOT = Path(__file__).resolve().parent.parent
#: Where torch-sparse is built to, and the peers folder whose pyg/bin/python uses it.
PEER_SITE = ROOT / "build" / "gpu-peer-site"
PEERS = ROOT / "build" / "gpu-peers"


class SessionLike(Protocol):
    """What of gpu_session.Session this step uses."""

    env: dict[str, str]

    def left(self) -> float: ...
    def note(self, text: str) -> None: ...


def start_torch_sparse(s: SessionLike, python: str, wheels: Path) -> subprocess.Popen | str:
    """Begin building torch-sparse (CPU ops) from the sdist in `wheels`, in the background;
    or where none is needed or possible, why: 'present' or 'skipped: ...'."""
    if importlib.util.find_spec("torch_sparse") is not None:
        return "present"
    sdists = sorted(wheels.glob("torch_sparse-*.tar.gz")) if wheels.is_dir() else []
    if not sdists:
        return (f"skipped: torch_sparse is not installed and {wheels} holds no "
                f"torch_sparse-*.tar.gz (make gpu-wheels fetches it)")
    env = dict(s.env, FORCE_ONLY_CPU="1", MAX_JOBS=str(os.cpu_count() or 4))
    if Path("/usr/bin/g++").exists():  # the compiler the extension's probe trusts
        env.update(CC="/usr/bin/gcc", CXX="/usr/bin/g++")
    s.note(f"== torch-sparse (background): building {sdists[-1].name} into {PEER_SITE}")
    return subprocess.Popen([python, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                             "--no-build-isolation", "--target", str(PEER_SITE),
                             str(sdists[-1])], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def pyg_peer_env(s: SessionLike, python: str, build: subprocess.Popen | str) -> dict | str:
    """The environment for a run with the PyG peer (GNNREPRO_PEERS set), once torch-sparse is
    there; or why not: the build's failure, or its still running at the deadline."""
    if isinstance(build, subprocess.Popen):
        try:
            output, _ = build.communicate(timeout=max(1.0, s.left() - 90))
        except subprocess.TimeoutExpired:
            build.kill()
            return "skipped: building torch-sparse did not finish in time"
        if build.returncode != 0:
            return f"skipped: building torch-sparse failed: {(output or '')[-600:]}"
    elif build != "present":
        return build
    wrapper = PEERS / "pyg" / "bin" / "python"
    wrapper.parent.mkdir(parents=True, exist_ok=True)
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH="{PEER_SITE}:$PYTHONPATH" exec {python} "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return dict(s.env, GNNREPRO_PEERS=str(PEERS))


def pyg_args(data: list[str], cuda: bool) -> list[str]:
    """`bench end-to-end`'s arguments: PyG's SAGEConv on our fused sampler with the sampler
    and the features on the GPU (on the CPU in the rehearsal), and on PyG's NeighborLoader."""
    placement = ["--sampler-device", "cuda", "--feature-source", "device"] if cuda else []
    return ["end-to-end", *data, "--pipelines", "fused", "--model", "pyg-sage", "--peers",
            "pyg", "--epochs", "2", "--device", "cuda" if cuda else "cpu", *placement]
