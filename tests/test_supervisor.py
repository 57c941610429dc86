"""The one process supervisor: answers arrive, and every failure - a child that raises, dies,
or goes silent - raises ChildFailed naming it and the cause; stop() leaves no process."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from gnnrepro.supervisor import ChildFailed, Heartbeat, Supervisor, run_reporting


def _answer(value: int, inbox, outbox) -> None:
    run_reporting(lambda: value * 2, outbox)


def _raise(inbox, outbox) -> None:
    def body() -> None:
        raise ValueError("child exploded")
    run_reporting(body, outbox)


def _echo_forever(inbox, outbox) -> None:
    while True:
        message = inbox.recv()
        outbox.send(("echo", message))


def _sleep(seconds: float, beat: bool, inbox, outbox) -> None:
    heartbeat = Heartbeat(outbox, every_s=0.05)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if beat:
            heartbeat()
        time.sleep(0.01)
    run_reporting(lambda: "slept", outbox)


def _wait_for(supervisor: Supervisor, timeout: float = 30.0) -> list:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = supervisor.receive(0.2)
        if got:
            return got
    raise AssertionError("no message")


@pytest.fixture
def supervisor():
    sup = Supervisor("spawn")
    yield sup
    sup.stop()
    for pid in sup.pids:
        assert not psutil.pid_exists(pid) or \
            psutil.Process(pid).status() == psutil.STATUS_ZOMBIE, pid


def test_answers_arrive_and_the_child_may_exit(supervisor) -> None:
    supervisor.start("doubler", _answer, (21,))
    assert _wait_for(supervisor) == [(0, ("ok", 42))]
    time.sleep(0.5)  # it exits after answering: not a failure
    assert supervisor.receive(0.2) == [] and supervisor.failures == []


def test_a_child_that_raises_is_named_with_its_traceback(supervisor) -> None:
    supervisor.start("bad child", _raise)
    with pytest.raises(ChildFailed, match=r"(?s)bad child \(pid \d+\) raised: Traceback.*"
                                          r"ValueError: child exploded") as caught:
        _wait_for(supervisor)
    assert not caught.value.died


def test_a_killed_child_is_named_with_the_signal(supervisor) -> None:
    supervisor.start("victim", _echo_forever)
    supervisor.send(0, "hello")
    assert _wait_for(supervisor) == [(0, ("echo", "hello"))]
    os.kill(supervisor.pids[0], signal.SIGKILL)
    with pytest.raises(ChildFailed, match=r"victim \(pid \d+\) was killed by signal SIGKILL"):
        _wait_for(supervisor)
    with pytest.raises(ChildFailed, match="victim"):
        supervisor.send(0, "anyone?")


def test_silence_is_a_hang_and_heartbeats_are_progress(supervisor) -> None:
    supervisor.start("sleeper", _sleep, (60.0, False))
    supervisor.start("beater", _sleep, (8.0, True))
    while not all(child.started for child in supervisor.children):  # both are up
        supervisor.receive(0.1)
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:
        supervisor.receive(0.1)
        supervisor.check_silence([1], limit_s=2.0)  # the beating child is never silent
    with pytest.raises(ChildFailed, match=r"sleeper \(pid \d+\) sent nothing for \d+ s"):
        supervisor.check_silence([0, 1], limit_s=2.0)
    assert _wait_for(supervisor) == [(1, ("ok", "slept"))]


def test_first_cause_prefers_the_child_that_died(supervisor) -> None:
    supervisor.start("raiser", _raise)
    supervisor.start("dead", _echo_forever)
    os.kill(supervisor.pids[1], signal.SIGKILL)
    deadline = time.monotonic() + 30
    while len(supervisor.failures) < 2 and time.monotonic() < deadline:
        supervisor.receive(0.2, raise_failure=False)
    cause = supervisor.first_cause()
    assert cause.name == "dead" and "then raiser failed too" in str(cause)


def test_stop_kills_children_that_ignore_sigterm(supervisor) -> None:
    supervisor.start("stubborn", _echo_forever)
    pid = supervisor.pids[0]
    supervisor.send(0, "up?")
    _wait_for(supervisor)
    proc = psutil.Process(pid)
    supervisor.stop()
    assert not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE
    supervisor.stop()  # idempotent


def test_a_script_without_a_main_guard_gets_told_what_to_do(tmp_path) -> None:
    """A script that starts workers at import time: its children re-import it and die while
    bootstrapping; the error says so and shows the fix, instead of a bare exit code."""
    script = tmp_path / "train_script.py"
    script.write_text(textwrap.dedent("""
        import time
        from gnnrepro.supervisor import Supervisor, run_reporting

        def work(inbox, outbox):
            run_reporting(lambda: 1, outbox)

        sup = Supervisor("spawn")
        sup.start("worker 0", work)
        deadline = time.monotonic() + 60
        try:
            while time.monotonic() < deadline and not sup.receive(0.2):
                pass
        finally:
            sup.stop()
    """))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert out.returncode != 0
    assert "worker 0" in out.stderr and 'if __name__ == "__main__":' in out.stderr, out.stderr
