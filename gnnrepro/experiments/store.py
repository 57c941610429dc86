"""Results store: results/<experiment>/<hash>/ holds an experiment's tidy CSV (data.csv) and
run.json (parameters, metadata, code version, environment); the hash covers the parameters
and the code that measures (gnnrepro.env.source_hash), so identical parameters on identical
code reuse a result and anything else measures again. A redraw (make figures REDRAW=1) draws
from the newest result of identical parameters that other code measured, where this code has
none, so mended plotting needs no hour of re-measuring; its record names both commits. A
redraw also looks in the results committed beside the figures (`archive`:
gnnrepro.experiments.archive), so a fresh checkout redraws them too.

Benchmark runs behind the experiments are stored too, under results/_runs/<benchmark>/, so
notebooks that need the same run (01 and 03 share one training run; 05's sweeps share their
base point) measure it once, and an interrupted sweep resumes where it stopped. Every file is
written atomically, run.json last: a directory without run.json is an incomplete result and
is recomputed.
"""
from __future__ import annotations

import datetime
import hashlib
import json
import os
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from gnnrepro.atomic import write_atomic, write_json_atomic
from gnnrepro.env import code_version, environment, source_hash

__all__ = ["Store", "param_hash", "run_id"]

_RECORD_KEYS = ("experiment", "hash", "params", "env", "created", "duration_s",
                "columns", "code", "run_id")
_PROCESS_RUN = uuid.uuid4().hex


def param_hash(name: str, key: Mapping[str, Any], code: str | None = None) -> str:
    """A stable 16-hex-digit hash of (name, key, code): canonical JSON (sorted keys), SHA-256.
    `code` is the source hash of the code that measures (default: this checkout's,
    gnnrepro.env.source_hash), so a result from other code (another method, other output
    columns) is never reused."""
    content = {"name": name, "params": key, "code": source_hash() if code is None else code}
    payload = json.dumps(content, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def run_id() -> str:
    """This figures run: $GNNREPRO_FIGURES_RUN (make figures sets one for all its notebooks),
    else this process. force=True re-measures a result once per run id, so a run shared by
    several notebooks is measured once."""
    return os.environ.get("GNNREPRO_FIGURES_RUN") or _PROCESS_RUN


class Store:
    """Stored results under `root` (the results/ directory), keyed by their parameters and
    the code that made them (param_hash).

    `force=True` re-measures, but each key at most once per run id (run_id), so a run that
    several points or notebooks share is still measured once.
    """

    def __init__(self, root: Path | str, archive: Path | str | None = None):
        """`root`: the results/ directory. `archive`: a folder of results laid out the same
        way (the ones committed beside the figures) that only a redraw reads."""
        self.root = Path(root)
        self.archive = Path(archive) if archive is not None else None

    def directory(self, name: str, key: Mapping[str, Any]) -> Path:
        return self.root / name / param_hash(name, key)

    def cached(self, name: str, key: Mapping[str, Any],
               compute: Callable[[], tuple[pd.DataFrame, dict[str, Any]]],
               force: bool = False, redraw: bool = False
               ) -> tuple[pd.DataFrame, dict[str, Any]]:
        """(tidy data, record) of experiment `name` for parameters `key` on this code.

        Computed by `compute() -> (DataFrame, JSON-ready metadata)` unless stored (or forced).
        The record is run.json: the metadata plus experiment, hash, params, code (source hash
        and commit), run_id, env (versions, hardware), created, duration_s and the columns'
        dtypes; the returned copy
        adds reused (bool) and path. The data is always read back from the CSV, so a fresh
        result and a reused one are identical.

        `redraw=True` (not with force): where this code has no result, the newest one of the
        same parameters measured by other code (in root or the archive) is used instead of
        measuring; its record keeps the code that measured it and adds redrawn_by (this code).
        """
        if force and redraw:
            raise ValueError(f"{name}: force (measure again) and redraw (draw from what is "
                             f"stored) exclude each other")
        directory = self.directory(name, key)
        stale = self._stale(directory / "run.json", force)
        older = self.newest_other_code(name, key) if redraw and stale else None
        reused = older is not None or not stale
        if older is not None:
            directory = older
            measured = json.loads((older / "run.json").read_text()).get("code") or {}
            print(f"{name}: redrawing from {older}, measured at commit "
                  f"{str(measured.get('git_commit'))[:7]}")
        elif reused:
            print(f"{name}: reusing {directory}, measured by this code (force=True re-measures)")
        else:
            print(f"{name}: computing into {directory}"
                  + (" (nothing stored to redraw from)" if redraw else ""))
            start = time.perf_counter()
            data, meta = compute()
            clash = sorted(set(meta) & set(_RECORD_KEYS))
            if clash:
                raise ValueError(f"{name}: metadata must not use the record's keys {clash}")
            record = meta | {
                "experiment": name, "hash": directory.name,
                "params": dict(key), "code": code_version(), "run_id": run_id(),
                "env": environment(), "duration_s": time.perf_counter() - start,
                "created": datetime.datetime.now(datetime.timezone.utc).isoformat(
                    timespec="seconds"),
                "columns": {col: str(dtype) for col, dtype in data.dtypes.items()},
            }
            write_atomic(directory / "data.csv", lambda tmp: data.to_csv(tmp, index=False))
            write_json_atomic(directory / "run.json", record)
        record = json.loads((directory / "run.json").read_text())
        dtypes = {col: (str if dtype == "object" else dtype)
                  for col, dtype in record["columns"].items()}
        data = pd.read_csv(directory / "data.csv", dtype=dtypes)
        if older is not None:
            record["redrawn_by"] = code_version()
        return data, record | {"reused": reused, "path": str(directory)}

    def newest_other_code(self, name: str, key: Mapping[str, Any]) -> Path | None:
        """The directory of the newest complete result of `name` with parameters `key`
        measured by any code, in root or the archive (None if there is none): what a redraw
        draws from."""
        wanted = json.dumps(dict(key), sort_keys=True, default=str)
        found: list[tuple[str, Path]] = []
        roots = [self.root] + ([self.archive] if self.archive is not None else [])
        for record_file in (f for root in roots for f in (root / name).glob("*/run.json")):
            try:
                record = json.loads(record_file.read_text())
            except (OSError, ValueError):
                continue
            if json.dumps(record.get("params"), sort_keys=True, default=str) == wanted:
                found.append((str(record.get("created", "")), record_file.parent))
        return max(found)[1] if found else None

    def memo(self, benchmark: str, key: Mapping[str, Any], compute: Callable[[], Any],
             force: bool = False) -> Any:
        """The JSON result of `compute()` (a benchmark run with arguments `key`), stored in
        results/_runs/<benchmark>/<hash>.json with the key and reused unless forced."""
        path = self.root / "_runs" / benchmark / f"{param_hash(benchmark, key)}.json"
        if self._stale(path, force):
            print(f"{benchmark}: running {dict(key)}")
            write_json_atomic(path, {"benchmark": benchmark, "key": dict(key),
                                     "code": code_version(), "run_id": run_id(),
                                     "result": compute()})
        return json.loads(path.read_text())["result"]

    @staticmethod
    def _stale(path: Path, force: bool) -> bool:
        """Whether `path` must be (re)computed: missing, unreadable, or forced and not yet
        measured in this run."""
        try:
            stored_run = json.loads(path.read_text()).get("run_id")
        except (OSError, ValueError):
            return True
        return force and stored_run != run_id()
