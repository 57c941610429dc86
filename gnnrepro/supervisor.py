"""Supervisor: start child processes, talk to them, watch them, time them out, stop them.

One set of rules for every process gnnrepro starts (the Loader's sampling workers, the ranks
of gnnrepro.distributed.launch_ranks, the fresh process per run of the end-to-end benchmark):

* Each child has two pipes of its own (messages in, messages out), so a child that dies
  mid-message cannot corrupt another's channel; the parent waits on every pipe and process
  sentinel at once, so a death is seen within one wait, never waited for forever.
* A child reports an exception as ("error", text) and its final answer as ("ok", value)
  (`run_reporting` does both), after which it may exit. While it owes an answer it is expected
  to send something (a message, or a `Heartbeat`'s ("alive",)) at least every `timeout_s`;
  silence longer than that is a hang (`check_silence`).
* Every failure raises `ChildFailed` naming the child (name, pid) and the cause (its traceback,
  the signal that killed it, its exit code, or how long it was silent).
* Children die with their parent (PR_SET_PDEATHSIG on Linux), ignore Ctrl-C (the parent's to
  handle), and `stop()` terminates, then kills, and reaps every one: none is left behind.
"""
from __future__ import annotations

import ctypes
import fcntl
import multiprocessing as mp
import multiprocessing.connection
import signal
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["ChildFailed", "Heartbeat", "Supervisor", "run_reporting"]

_JOIN_S = 2.0  # how long a terminated child gets to exit before it is killed
_PR_SET_PDEATHSIG = 1
_ALIVE = ("alive",)
_STARTED = ("started",)
_MAIN_GUARD_HINT = (
    " while starting, before running its code. If you started this from a script: put the "
    "code that starts training under `if __name__ == \"__main__\":`, because child "
    "processes re-import the main module (multiprocessing's spawn and forkserver) and would "
    "otherwise run it again")


class ChildFailed(RuntimeError):
    """A child process raised, died or went silent; `died` is True unless it reported an
    error itself (a death is then the likelier first cause of a group's failures)."""

    def __init__(self, name: str, pid: int | None, cause: str, died: bool):
        super().__init__(f"{name} (pid {pid}) {cause}")
        self.name, self.pid, self.cause, self.died = name, pid, cause, died


class Heartbeat:
    """Called by a child as it makes progress: sends ("alive",) at most every `every_s`."""

    def __init__(self, outbox: multiprocessing.connection.Connection, every_s: float = 1.0):
        self.outbox, self.every_s = outbox, every_s
        self._last = 0.0

    def __call__(self) -> None:
        now = time.monotonic()
        if now - self._last >= self.every_s:
            self._last = now
            self.outbox.send(_ALIVE)


def run_reporting(body: Callable[[], Any], outbox: multiprocessing.connection.Connection) -> None:
    """Child side: send ("ok", body()) or, if it raises, ("error", traceback)."""
    try:
        message: tuple = ("ok", body())
    except BaseException:  # reported to the parent, which raises it there
        message = ("error", traceback.format_exc())
    try:
        outbox.send(message)
    except (BrokenPipeError, OSError):  # the parent is gone: nobody to tell
        pass


def _bootstrap(target: Callable[..., None], args: tuple,
               inbox: multiprocessing.connection.Connection,
               outbox: multiprocessing.connection.Connection) -> None:
    """The child's entry: die with the parent, leave Ctrl-C to it, then run target."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the pipes' EOF still ends workers
        pass
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    outbox.send(_STARTED)  # bootstrapping (main-module import, unpickling args) went well
    target(*args, inbox, outbox)


def _grow_pipe(conn: multiprocessing.connection.Connection, nbytes: int) -> None:
    """Raise a pipe's capacity where Linux allows it (else keep the default)."""
    if hasattr(fcntl, "F_SETPIPE_SZ"):
        try:
            fcntl.fcntl(conn.fileno(), fcntl.F_SETPIPE_SZ, nbytes)
        except OSError:  # above /proc/sys/fs/pipe-max-size
            pass


@dataclass
class _Child:
    name: str
    proc: mp.process.BaseProcess
    inbox: multiprocessing.connection.Connection  # parent -> child
    outbox: multiprocessing.connection.Connection  # child -> parent
    heard: float  # time.monotonic() of the last message (or the start)
    started: bool = False  # its bootstrap finished and its target began
    done: bool = False  # failed, or its final answer ("ok", ...) arrived: no longer watched


class Supervisor:
    """Children started with `start(name, target, args)`; `target(*args, inbox, outbox)` runs
    in the child, reading the parent's messages from `inbox` and sending its own to `outbox`.

    `context` is a multiprocessing start method ("spawn", "forkserver"); `preload` modules are
    imported once by the forkserver; `pipe_bytes` enlarges the child-to-parent pipes.
    """

    def __init__(self, context: str = "spawn", *, preload: list[str] | None = None,
                 pipe_bytes: int | None = None):
        self._ctx = mp.get_context(context)
        if preload:
            self._ctx.set_forkserver_preload(preload)
        self._pipe_bytes = pipe_bytes
        self.children: list[_Child] = []
        self.failures: list[ChildFailed] = []

    def start(self, name: str, target: Callable[..., None], args: tuple = (), *,
              daemon: bool = False) -> int:
        """Start a child; returns its index (0, 1, ... in start order)."""
        to_child_r, to_child_w = self._ctx.Pipe(duplex=False)
        from_child_r, from_child_w = self._ctx.Pipe(duplex=False)
        if self._pipe_bytes:
            _grow_pipe(from_child_r, self._pipe_bytes)
        proc = self._ctx.Process(target=_bootstrap, name=name, daemon=daemon,
                                 args=(target, args, to_child_r, from_child_w))
        try:
            proc.start()
        except BaseException:
            for conn in (to_child_r, to_child_w, from_child_r, from_child_w):
                conn.close()
            raise
        # Drop our copies of the child's ends: its death then reads as EOF / EPIPE here.
        to_child_r.close()
        from_child_w.close()
        self.children.append(_Child(name, proc, to_child_w, from_child_r, time.monotonic()))
        return len(self.children) - 1

    @property
    def pids(self) -> list[int | None]:
        return [c.proc.pid for c in self.children]

    def send(self, index: int, message: Any) -> None:
        """Send `message` to child `index`; a dead child raises ChildFailed."""
        try:
            self.children[index].inbox.send(message)
        except (BrokenPipeError, OSError):
            self._fail(index, self._exit_cause(index), died=True)
            raise self.failures[-1] from None

    def receive(self, timeout: float, *, raise_failure: bool = True) -> list[tuple[int, Any]]:
        """(child index, message) pairs that arrive within `timeout` s from watched children,
        heartbeats excepted. A child's ("error", text), its death, or EOF is recorded in
        `failures`; the first new one is raised unless `raise_failure` is False."""
        before = len(self.failures)
        watched = {c.outbox: i for i, c in enumerate(self.children) if not c.done}
        sentinels = {self.children[i].proc.sentinel: i for i in watched.values()}
        ready = multiprocessing.connection.wait(list(watched) + list(sentinels), timeout)
        out = []
        for conn, i in watched.items():
            if conn not in ready:
                continue
            while not self.children[i].done and conn.poll():
                try:
                    message = conn.recv()
                except (EOFError, OSError):
                    self._fail(i, self._exit_cause(i), died=True)
                    break
                self.children[i].heard = time.monotonic()
                if message == _STARTED:
                    self.children[i].started = True
                    continue
                if message == _ALIVE:
                    continue
                if isinstance(message, tuple) and message and message[0] == "error":
                    self._fail(i, f"raised: {message[1]}", died=False)
                    break
                if isinstance(message, tuple) and message and message[0] == "ok":
                    self.children[i].done = True  # its final answer: it may exit now
                out.append((i, message))
        for sentinel, i in sentinels.items():
            if sentinel in ready and not self.children[i].done:
                if not self.children[i].outbox.poll():  # its last message is read first
                    self._fail(i, self._exit_cause(i), died=True)
        if raise_failure and len(self.failures) > before:
            raise self.failures[before]
        return out

    def check_silence(self, indices: Iterable[int], limit_s: float) -> None:
        """Raise ChildFailed for the first of `indices` (children that owe an answer) that
        has sent nothing for more than `limit_s` seconds."""
        now = time.monotonic()
        for i in indices:
            child = self.children[i]
            if not child.done and now - child.heard > limit_s:
                self._fail(i, f"sent nothing for {now - child.heard:.0f} s (limit {limit_s:g} "
                              f"s): hung, or too slow for the timeout", died=False)
                raise self.failures[-1]

    def first_cause(self) -> ChildFailed:
        """The failure to report for a group: a child that died before children that then
        failed because it was gone."""
        first = sorted(self.failures, key=lambda f: not f.died)[0]
        others = [f.name for f in self.failures if f is not first]
        if not others:
            return first
        return ChildFailed(first.name, first.pid,
                           f"{first.cause} (then {', '.join(others)} failed too)", first.died)

    def _fail(self, index: int, cause: str, died: bool) -> None:
        child = self.children[index]
        if not child.done:
            child.done = True
            self.failures.append(ChildFailed(child.name, child.proc.pid, cause, died))

    def _exit_cause(self, index: int) -> str:
        child = self.children[index]
        child.proc.join(_JOIN_S)  # let the exit code settle
        code = child.proc.exitcode
        if code is not None and code < 0:
            return f"was killed by signal {signal.Signals(-code).name}"
        if code is not None and not child.started:
            return f"exited with exit code {code}" + _MAIN_GUARD_HINT
        if code is not None:
            return f"exited unexpectedly with exit code {code} without a result"
        return "closed its pipe without a result"

    def stop(self) -> None:
        """Terminate every child still running (SIGKILL if SIGTERM does not do), reap them,
        close the pipes. Idempotent."""
        for how in ("terminate", "kill"):
            live = [c.proc for c in self.children if c.proc.is_alive()]
            for proc in live:
                getattr(proc, how)()
            deadline = time.monotonic() + _JOIN_S
            for proc in live:
                proc.join(max(0.0, deadline - time.monotonic()))
        for child in self.children:
            child.proc.join(0)
            child.inbox.close()
            child.outbox.close()
            child.done = True
