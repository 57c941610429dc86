"""The GPU session's last step: a PyG user's own model (PyG's SAGEConv) on PyG's NeighborLoader
against the same model on our loader, on the GPU (issue 35's PyG figure).

PyG's NeighborLoader samples on the CPU with pyg-lib or torch-sparse; the lent GPU machines have
torch_geometric but neither, and no registry serves them a wheel for their torch. Building
torch-sparse there does not fit a session: its 12 extensions compile one after another (more
than 195 s on the lent machine's 16 cores, and beside the session it starved the timed steps).
So `make gpu-pyg-wheels` builds its wheel here, CPU ops only, against the lent machines' torch,
with torch-scatter's (which torch-sparse imports), and puts them with scipy's (imported too) in a
folder carried along; this step installs them into a folder of its own in seconds. The peer's
Python is the machine's own with that folder on its path. Where there is no wheel, or it does
not load, the step says why and is skipped.
"""
from __future__ import annotations

import importlib.util
import os
import stat
import subprocess
from pathlib import Path
from typing import Protocol

ROOT = Path(__file__).resolve().parent.parent
#: Where torch-sparse is installed to, and the peers folder whose pyg/bin/python uses it.
PEER_SITE = ROOT / "build" / "gpu-peer-site"
PEERS = ROOT / "build" / "gpu-peers"
#: The folder `make gpu-pyg-wheels` fills: torch-sparse's and torch-scatter's wheels, scipy's.
PYG_WHEELS = ROOT / "build" / "gpu-pyg-wheels"
#: Val and test ids both sides evaluate (the same seeded subsets, named in the result): all
#: products' test ids did not fit the step (NOTES: "The PyG step: both sides on the same
#: evaluation ids"); PyG's products example scores a sampled subset too.
EVAL_IDS = 20_000
#: Built here for the lent machines' torch: torch-sparse, and torch-scatter, which it imports.
COMPILED = ("torch_sparse", "torch_scatter")


class SessionLike(Protocol):
    """What of gpu_runner.Session this step uses."""

    env: dict[str, str]

    def note(self, text: str) -> None: ...


def install_torch_sparse(s: SessionLike, python: str, wheels: Path) -> str:
    """'present' or 'installed' (torch-sparse, and what of torch-scatter and scipy this Python
    lacks, from the wheels in `wheels` into PEER_SITE, no network), or why not: 'skipped: ...'."""
    if importlib.util.find_spec("torch_sparse") is not None:
        return "present"
    wanted = []
    for module in COMPILED:
        if importlib.util.find_spec(module) is not None:
            continue
        found = sorted(wheels.glob(f"{module}-*.whl")) if wheels.is_dir() else []
        if not found:
            return (f"skipped: {module} is not installed and {wheels} holds no "
                    f"{module}-*.whl (make gpu-pyg-wheels builds it)")
        wanted.append(str(found[-1]))
    wanted += ["scipy"] if importlib.util.find_spec("scipy") is None else []
    s.note(f"== torch-sparse: installing {', '.join(Path(w).name for w in wanted)} "
           f"into {PEER_SITE}")
    try:
        pip = subprocess.run([python, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                              "--find-links", str(wheels), "--target", str(PEER_SITE),
                              "--upgrade", *wanted], cwd=ROOT, env=s.env, capture_output=True,
                             text=True, timeout=120)
        if pip.returncode != 0:
            return f"skipped: installing torch-sparse failed: {(pip.stdout + pip.stderr)[-600:]}"
        probe = subprocess.run([python, "-c", "import torch, torch_sparse; "
                                "torch.ops.torch_sparse.neighbor_sample"], cwd=ROOT,
                               env=dict(s.env, PYTHONPATH=os.pathsep.join(
                                   [str(PEER_SITE), s.env.get("PYTHONPATH", "")])),
                               capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired as timeout:
        return f"skipped: installing torch-sparse: {timeout}"
    if probe.returncode != 0:
        return (f"skipped: the torch-sparse wheel does not load with this torch (built for "
                f"another?): {probe.stderr[-600:]}")
    return "installed"


def pyg_peer_env(s: SessionLike, python: str, torch_sparse: str) -> dict | str:
    """The environment for a run with the PyG peer (GNNREPRO_PEERS set), once torch-sparse is
    there (`torch_sparse` is install_torch_sparse's answer); or why not."""
    if torch_sparse not in ("present", "installed"):
        return torch_sparse
    wrapper = PEERS / "pyg" / "bin" / "python"
    wrapper.parent.mkdir(parents=True, exist_ok=True)
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH="{PEER_SITE}:$PYTHONPATH" exec {python} "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return dict(s.env, GNNREPRO_PEERS=str(PEERS))


def pyg_args(data: list[str], cuda: bool) -> list[str]:
    """`bench end-to-end`'s arguments: PyG's SAGEConv on our fused sampler with the sampler
    and the features on the GPU (on the CPU in the rehearsal), and on PyG's NeighborLoader,
    both evaluated on the same EVAL_IDS val and test ids."""
    placement = ["--sampler-device", "cuda", "--feature-source", "device"] if cuda else []
    return ["end-to-end", *data, "--pipelines", "fused", "--model", "pyg-sage", "--peers",
            "pyg", "--epochs", "2", "--device", "cuda" if cuda else "cpu",
            "--eval-ids", str(EVAL_IDS if cuda else 64), *placement]
