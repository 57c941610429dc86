"""PeerProcess: a peer's long-lived child process, driven by JSON-line requests.

The child is `<peer python> -m gnnrepro.peers.serve <adapter>` with this checkout on its
PYTHONPATH; its stderr (progress, warnings) passes through, its stdout carries only replies.
Replies are read from the pipe's file descriptor into our own line buffer: a buffered file
object would read a beat and the reply after it in one go and leave the reply in its buffer,
where waiting for the descriptor to become readable never sees it.
"""
from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from gnnrepro.peers.environments import PEERS, REPO_ROOT, peer_python, unavailable

__all__ = ["NO_TYPED_PATH", "PeerFailed", "PeerProcess", "SILENCE_LIMIT_S", "open_peers"]

#: How long a peer may go without a line (a reply, or the beat its ops send at most once a
#: second, at every batch and between the stages of "open") before it is stopped and named.
SILENCE_LIMIT_S = 60.0
#: Why a peer without a typed adapter is not run on a typed dataset.
NO_TYPED_PATH = "has no heterogeneous path here (typed datasets: its adapter is homogeneous)"
#: After this much silence (or half the limit, if less) one line says whom we are waiting for.
_NOTICE_S = 10.0


class PeerFailed(RuntimeError):
    """A peer's process raised, died or went silent; the message names the peer."""


class PeerProcess:
    """One peer's serving process. `request(op, **args)` returns the reply's result dict;
    a failure raises PeerFailed with the peer's traceback. Close it (or use `with`)."""

    def __init__(self, name: str, timeout_s: float = SILENCE_LIMIT_S, typed: bool = False):
        reason = unavailable(name)
        if reason is not None:
            raise PeerFailed(f"peer {name!r} {reason}")
        adapter = PEERS[name].typed_adapter if typed else PEERS[name].adapter
        if adapter is None:
            raise PeerFailed(f"peer {name!r} {NO_TYPED_PATH}")
        self.name, self.timeout_s = name, timeout_s
        self.opened: dict[str, Any] = {}  # the reply to "open": the peer's versions, threads
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
        self._proc = subprocess.Popen(
            [str(peer_python(name)), "-m", "gnnrepro.peers.serve", adapter],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=str(REPO_ROOT))
        self._pending = b""  # bytes read from the peer's stdout after the last whole line

    def request(self, op: str, **args: Any) -> dict[str, Any]:
        """Send one request and wait for its reply: at most timeout_s without a line from the
        peer (a reply or a beat of progress)."""
        proc = self._proc
        if proc.poll() is not None:
            raise PeerFailed(f"peer {self.name!r} exited with status {proc.returncode}")
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write((json.dumps({"op": op, "args": args}) + "\n").encode())
            proc.stdin.flush()
        except BrokenPipeError:
            raise PeerFailed(f"peer {self.name!r} exited before {op!r}") from None
        while True:
            reply = json.loads(self._next_line(op))
            if "beat" not in reply:
                break
        if "error" in reply:
            raise PeerFailed(f"peer {self.name!r} failed in {op!r}:\n{reply['error']}")
        return reply["result"]

    def _next_line(self, op: str) -> bytes:
        """The peer's next line: from what was read already, else read from the descriptor,
        waiting at most timeout_s for each chunk (saying so once the wait gets long)."""
        proc = self._proc
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        notice_s = min(_NOTICE_S, self.timeout_s / 2)
        while b"\n" not in self._pending:
            with selectors.DefaultSelector() as selector:
                selector.register(fd, selectors.EVENT_READ)
                if not selector.select(notice_s):
                    print(f"waiting for peer {self.name!r} in {op!r}: silent for "
                          f"{notice_s:g} s (stopped after {self.timeout_s:g} s without a word)",
                          file=sys.stderr, flush=True)
                    if not selector.select(self.timeout_s - notice_s):
                        proc.kill()
                        self.close()
                        raise PeerFailed(f"peer {self.name!r} sent nothing for "
                                         f"{self.timeout_s:g} s during {op!r}; stopped")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                status = proc.wait()
                raise PeerFailed(f"peer {self.name!r} exited with status {status} during "
                                 f"{op!r}")
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line

    def close(self) -> None:
        """Ask the child to stop; kill it if it does not within 10 s."""
        proc = self._proc
        if proc.poll() is None:
            try:
                assert proc.stdin is not None
                proc.stdin.close()
                proc.wait(10)
            except (BrokenPipeError, subprocess.TimeoutExpired):
                proc.kill()
                proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()

    def __enter__(self) -> "PeerProcess":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextmanager
def open_peers(names: Sequence[str], setup: dict[str, Any],
               timeout_s: float = SILENCE_LIMIT_S) -> Iterator[tuple[dict[str, PeerProcess],
                                                             dict[str, str]]]:
    """Start each named peer and send it `setup` ("open"); yields ({name: process} of the
    peers that started, {name: why not run} of the rest). All are closed on exit. A typed
    dataset (TYPED_DATASETS) runs each peer's typed adapter."""
    from gnnrepro.datasets import TYPED_DATASETS
    typed = setup.get("dataset") in TYPED_DATASETS
    running: dict[str, PeerProcess] = {}
    not_run: dict[str, str] = {}
    try:
        for name in names:
            reason = unavailable(name) or (
                NO_TYPED_PATH if typed and PEERS[name].typed_adapter is None else None)
            if reason is not None:
                not_run[name] = reason
                continue
            peer = PeerProcess(name, timeout_s, typed)
            try:
                peer.opened = peer.request("open", **setup)
            except PeerFailed as exc:
                peer.close()
                not_run[name] = f"failed to start: {str(exc).splitlines()[-1]}"
                continue
            running[name] = peer
        yield running, not_run
    finally:
        for peer in running.values():
            peer.close()
