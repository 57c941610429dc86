"""`run_local_machines`: M "machines" on this host, each a torchrun agent (a Supervisor child)
told it is a different machine (GNNREPRO_MACHINE_ID) - how the tests and the benchmark run
partitioned training on one computer, over loopback (127.0.0.1) only.

Each agent runs `torchrun --nnodes M --node-rank i --nproc-per-node G --master-addr 127.0.0.1
--master-port P -m gnnrepro.distributed.partitioned ARGS` in-process (torch.distributed.run).
When one machine fails, the others are given a moment to report theirs, then all are stopped
(their ranks die with them: PR_SET_PDEATHSIG) and a RuntimeError names the first cause.
"""
from __future__ import annotations

import multiprocessing.connection
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path

from gnnrepro.checks import check_int, check_positive_float
from gnnrepro.supervisor import ChildFailed, Supervisor, run_reporting

__all__ = ["free_port", "run_local_machines"]

_GRACE_S = 15.0  # after a failure: how long the other machines may still report theirs


def free_port() -> int:
    """A TCP port of 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _machine_main(argv: list[str], machine_id: str,
                  inbox: multiprocessing.connection.Connection,
                  outbox: multiprocessing.connection.Connection) -> None:
    def body() -> int:
        from torch.distributed.run import main as torchrun

        os.environ["GNNREPRO_MACHINE_ID"] = machine_id
        # the ranks run the launcher's gnnrepro, wherever the current directory is
        root = str(Path(__file__).resolve().parents[3])  # the directory holding gnnrepro/
        os.environ["PYTHONPATH"] = os.pathsep.join(
            p for p in (root, os.environ.get("PYTHONPATH")) if p)
        torchrun(argv)
        return 0

    run_reporting(body, outbox)


def run_local_machines(machines: int, args: list[str], *, ranks_per_machine: int = 1,
                       timeout_s: float = 600.0,
                       started: Callable[[Supervisor], None] | None = None) -> None:
    """Run partitioned training (`args`: gnnrepro.distributed.partitioned's options) on
    `machines` local machines of `ranks_per_machine` ranks each; return when all succeeded.
    `started(supervisor)` is called once the agents run (supervisor.pids are the agents').
    Raises RuntimeError naming the machine that failed first, TimeoutError after
    `timeout_s`."""
    check_int("machines", machines, 1)
    check_int("ranks_per_machine", ranks_per_machine, 1)
    check_positive_float("timeout_s", timeout_s)
    port = free_port()
    supervisor = Supervisor("spawn")
    deadline = time.monotonic() + timeout_s
    done: set[int] = set()
    try:
        for i in range(machines):
            argv = ["--nnodes", str(machines), "--node-rank", str(i),
                    "--nproc-per-node", str(ranks_per_machine), "--master-addr", "127.0.0.1",
                    "--master-port", str(port), "--max-restarts", "0",
                    "-m", "gnnrepro.distributed.partitioned", *args]
            supervisor.start(f"machine {i}", _machine_main, (argv, f"local-machine-{i}"))
        if started is not None:
            started(supervisor)
        try:
            while len(done) < machines:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"partitioned training on {machines} local machines "
                                       f"took longer than {timeout_s} s")
                for i, message in supervisor.receive(1.0):
                    if message[0] == "ok":
                        done.add(i)
        except ChildFailed:
            grace = time.monotonic() + _GRACE_S
            while (time.monotonic() < grace
                   and len(done) + len(supervisor.failures) < machines):
                for i, message in supervisor.receive(max(0.0, grace - time.monotonic()),
                                                     raise_failure=False):
                    if message[0] == "ok":
                        done.add(i)
            raise RuntimeError("partitioned training failed: "
                               + " | ".join(str(f) for f in supervisor.failures)) from None
        for child in supervisor.children:  # answered: let each agent finish its own exit
            child.proc.join(max(0.0, min(10.0, deadline - time.monotonic())))
    finally:
        supervisor.stop()
