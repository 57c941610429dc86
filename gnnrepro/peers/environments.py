"""Where each peer's environment lives and what it is.

A peer's Python is `<peers dir>/<name>/bin/python`; the peers dir is `$GNNREPRO_PEERS`, by
default `.peers/` at the top of the checkout (the Makefile's `peers` target fills it).
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PEERS", "PEERS_DIR_ENV", "REPO_ROOT", "SETUP_COMMAND", "Peer", "check_peers",
           "peer_python",
           "peers_dir", "unavailable"]

#: The checkout this package runs from: a peer's process imports gnnrepro from here.
REPO_ROOT = Path(__file__).resolve().parents[2]
PEERS_DIR_ENV = "GNNREPRO_PEERS"
SETUP_COMMAND = "make peers"


@dataclass(frozen=True)
class Peer:
    """A peer stack: its name, what it is (for tables), and the module whose `Adapter` drives
    it inside its own environment (gnnrepro.peers.serve); `typed_adapter`, the one for the
    typed datasets (None: the peer is not run on them)."""

    name: str
    label: str
    adapter: str
    typed_adapter: str | None = None


PEERS: dict[str, Peer] = {
    "graphbolt": Peer("graphbolt", "GraphBolt (DGL 2.1.0 on torch 2.2.1): ItemSampler -> "
                                   "sample_neighbor -> fetch_feature, DGL's SAGEConv; on a "
                                   "typed graph HeteroGraphConv, one SAGEConv per relation",
                      "gnnrepro.peers.graphbolt_peer", "gnnrepro.peers.graphbolt_hetero_peer"),
    "pyg": Peer("pyg", "PyG 2.8.1 NeighborLoader + SAGEConv, sampling with torch-sparse 0.6.18 "
                       "(without pyg-lib, its faster sampler, which no registry here serves); "
                       "on a typed graph a HeteroData, one SAGEConv per relation",
                "gnnrepro.peers.pyg_peer", "gnnrepro.peers.pyg_hetero_peer"),
}


def check_peers(peers: Sequence[str]) -> list[str]:
    """`peers` as a list of PEERS names, else a ValueError naming the unknown ones."""
    unknown = [name for name in peers if name not in PEERS]
    if unknown:
        raise ValueError(f"peers must be a subset of {', '.join(PEERS)}, got {unknown}")
    return list(peers)


def peers_dir() -> Path:
    """The folder holding the peers' environments."""
    return Path(os.environ.get(PEERS_DIR_ENV) or REPO_ROOT / ".peers")


def peer_python(name: str) -> Path:
    """The Python of peer `name`'s environment (which may not exist)."""
    if name not in PEERS:
        raise ValueError(f"peer must be one of {', '.join(PEERS)}, got {name!r}")
    return peers_dir() / name / "bin" / "python"


def unavailable(name: str) -> str | None:
    """Why peer `name` cannot run here (with the command that sets it up), or None."""
    python = peer_python(name)
    if not python.exists():
        return f"not set up: no {python}; run `{SETUP_COMMAND}`"
    return None
