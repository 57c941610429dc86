"""The peer side of PeerProcess: `python -m gnnrepro.peers.serve <adapter module>` in the peer's
own environment. Each stdin line is a request {"op", "args"}; each reply is one stdout line,
{"result": ...} or {"error": traceback}, after any number of {"beat": true} lines, which
long ops send (at most one a second) as proof of progress. Everything else the peer prints goes
to stderr.

An adapter module (e.g. gnnrepro.peers.graphbolt_peer) defines `Adapter`, whose methods are the ops:
`open(dataset, root, scale, fanouts, batch_size, threads, seed)` loads the dataset from the
shared cache and builds the peer's graph and features; then `sample(seeds_file)`,
`loader_epoch(epoch)` and `train(epochs, lr, hidden, dropout)` (gnnrepro.peers.adapter).
This module and the adapters import only gnnrepro's dataset layer, which runs on any torch.
"""
from __future__ import annotations

import importlib
import json
import os
import sys
import time
import traceback
from typing import TextIO

__all__ = ["OPS", "main"]

#: The requests a peer serves (the Adapter methods of the same names).
OPS = ("open", "sample", "loader_epoch", "train")


class _Beat:
    """Writes a {"beat": true} line to `replies`, at most once per `every_s` seconds."""

    def __init__(self, replies: TextIO, every_s: float = 1.0):
        self._replies, self._every_s, self._last = replies, every_s, 0.0

    def __call__(self) -> None:
        now = time.monotonic()
        if now - self._last >= self._every_s:
            self._replies.write('{"beat": true}\n')
            self._replies.flush()
            self._last = now


def main(adapter_name: str) -> int:
    """Serve requests until stdin closes; 0 on a clean end."""
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    sys.stdout = sys.stderr  # whatever the peer prints must not corrupt the replies
    adapter = importlib.import_module(adapter_name).Adapter()
    adapter.beat = _Beat(replies)
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
            if request.get("op") not in OPS:
                raise ValueError(f"op must be one of {', '.join(OPS)}, got {request.get('op')!r}")
            result = getattr(adapter, request["op"])(**request.get("args", {}))
            reply = {"result": result}
        except Exception:  # noqa: BLE001 - the traceback goes back to the benchmark
            reply = {"error": traceback.format_exc()}
        replies.write(json.dumps(reply) + "\n")
        replies.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
