"""Peers: the other training stacks users run (GraphBolt, PyG), measured beside ours.

Each peer lives in an environment of its own (GraphBolt needs torch 2.2.1; PyG's samplers are
built against our torch), set up by `make peers` under `.peers/<name>/`. A peer runs as a
long-lived child process of that environment's Python (`PeerProcess`), serving requests over
JSON lines (`gnnrepro.peers.serve`), so a benchmark can interleave its rounds with ours on the
same dataset cache and the same seed ids. A peer whose environment is missing is reported as not
run, with the command that sets it up (`unavailable`).
"""
from gnnrepro.peers.environments import (PEERS, SETUP_COMMAND, check_peers, peer_python,
                                         unavailable)
from gnnrepro.peers.process import PeerFailed, PeerProcess, open_peers

__all__ = ["PEERS", "SETUP_COMMAND", "PeerFailed", "PeerProcess", "check_peers", "open_peers",
           "peer_python", "unavailable"]
