"""The GPU session's runner: each step a process of its own against one deadline, its output
appended to session.log and its status to session.json the moment it ends, its measurement
packed into OUT's one archive (a session cut off still leaves what finished; a lent machine
returns at most 8 files, so the measurements travel as one); and the readers of what pytest
and compute-sanitizer print. Standard library only (it runs before the modules are
installed)."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from gnnrepro.atomic import write_text_atomic  # noqa: E402  (stdlib only)

__all__ = ["ARCHIVE", "ROOT", "WORK", "Session", "log_since", "pytest_counts",
           "sanitizer_findings", "sanitizer_refused", "stop_group"]

#: Where steps write before their results are kept.
WORK = ROOT / "build" / "gpu-session"
#: The measurements kept so far, each packed into OUT/ARCHIVE as it is kept.
KEPT = WORK / "kept"
#: OUT's one file of measurements (gnnrepro.experiments.gpu_results reads a stored session's
#: results from it).
ARCHIVE = "results.tar.gz"


class Session:
    """Runs steps against one deadline and keeps OUT up to date after each."""

    def __init__(self, out: Path, dry_run: bool, deadline_s: float, env: dict[str, str]):
        self.out, self.dry_run, self.env = out, dry_run, env
        self.start = time.monotonic()
        self.deadline = self.start + deadline_s
        out.mkdir(parents=True, exist_ok=True)
        WORK.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(KEPT, ignore_errors=True)  # an earlier session's measurements
        KEPT.mkdir()
        self.log = out / "session.log"
        self.log.write_text("")
        self.report: dict[str, Any] = {"dry_run": dry_run, "deadline_s": deadline_s,
                                       "steps": {}, "figures": {}}

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def note(self, text: str) -> None:
        line = f"[{time.monotonic() - self.start:6.1f} s] {text}"
        print(line, flush=True)
        with open(self.log, "a") as log:
            log.write(line + "\n")

    def save(self) -> None:
        self.report["elapsed_s"] = round(time.monotonic() - self.start, 1)
        # Not sorted: the steps stay in the order they ran.
        write_text_atomic(self.out / "session.json", json.dumps(self.report, indent=2) + "\n")

    def skip(self, name: str, why: str) -> None:
        self.report["steps"][name] = {"status": why, "ok": True, "seconds": 0.0}
        self.note(f"== {name}: {why}")
        self.save()

    def run(self, name: str, cmd: list[str], timeout_s: float, reserve_s: float = 0.0,
            env: dict[str, str] | None = None) -> dict[str, Any]:
        """Run `cmd` (its own process group), at most `timeout_s` and never past the deadline
        less `reserve_s`; append its output to session.log; record and return its step."""
        limit = min(timeout_s, self.left() - reserve_s)
        if limit < min(5.0, timeout_s):  # too little time left to be worth starting
            step = {"status": f"skipped: {max(0, round(self.left()))} s left of the session's "
                              f"deadline", "ok": False, "seconds": 0.0}
            self.report["steps"][name] = step
            self.note(f"== {name}: {step['status']}")
            self.save()
            return step
        self.note(f"== {name} (at most {limit:.0f} s): {' '.join(cmd)}")
        began = time.monotonic()
        with open(self.log, "a") as log:
            proc = subprocess.Popen(cmd, cwd=ROOT, env=env or self.env, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)
            try:
                rc: int | None = proc.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                stop_group(proc)
                rc = None
        seconds = round(time.monotonic() - began, 1)
        status = ("ok" if rc == 0 else f"failed (exit {rc})" if rc is not None
                  else f"timed out after {seconds:.0f} s")
        step = {"status": status, "ok": rc == 0, "seconds": seconds, "returncode": rc}
        self.report["steps"][name] = step
        self.note(f"   {name}: {status} in {seconds} s")
        self.save()
        return step

    def keep(self, name: str, produced: Path) -> dict[str, Any] | None:
        """Pack a step's JSON into OUT's archive (with every one kept before it) and return it
        (None if the step wrote none)."""
        if not produced.exists():
            return None
        result = json.loads(produced.read_text())
        shutil.copyfile(produced, KEPT / produced.name)
        partial = self.out / (ARCHIVE + ".part")
        with tarfile.open(partial, "w:gz") as tar:
            for path in sorted(KEPT.iterdir()):
                tar.add(path, arcname=path.name)
        os.replace(partial, self.out / ARCHIVE)  # whole or not at all, if the session is cut
        self.report["steps"][name]["result"] = f"{ARCHIVE}: {produced.name}"
        return result


def stop_group(proc: subprocess.Popen) -> None:
    """SIGTERM the step's process group, SIGKILL what is left after 5 s."""
    for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def log_since(session: Session, mark: int) -> str:
    """What session.log gained after byte `mark`."""
    return session.log.read_bytes()[mark:].decode(errors="replace")


def pytest_counts(text: str) -> dict[str, int]:
    """{'passed': n, 'failed': n, ...} from pytest's last summary line in `text` (the one
    that ends in its time, so a sanitizer's "ERROR SUMMARY: 0 errors" is not taken for it)."""
    summaries = [line for line in text.splitlines()
                 if re.search(r"\d+ (passed|failed|errors?|skipped|deselected)", line)
                 and re.search(r" in [\d.]+s( \([\d:]+\))?\W*$", line)]
    if not summaries:
        return {}
    return {kind: int(n) for n, kind in
            re.findall(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected)",
                       summaries[-1])}


def sanitizer_findings(text: str, tool: str) -> int | None:
    """Errors (memcheck) or hazards (racecheck) in the sanitizer's last summary, or None."""
    pattern = (r"ERROR SUMMARY: (\d+) error" if tool == "memcheck"
               else r"RACECHECK SUMMARY: (\d+) hazard")
    found = re.findall(pattern, text)
    return int(found[-1]) if found else None


def sanitizer_refused(text: str) -> bool:
    """What compute-sanitizer prints where the runtime does not let it attach (gVisor)."""
    return "Device not supported" in text or "error 999" in text.lower() or \
        "unknown error" in text.lower()
