"""Results store: results/<experiment>/<parameter-hash>/ holds an experiment's tidy CSV
(data.csv) and run.json (parameters, metadata, environment); identical parameters reuse it.

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
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from gnnrepro.atomic import write_atomic, write_json_atomic
from gnnrepro.env import environment

__all__ = ["Store", "param_hash"]

_RECORD_KEYS = ("experiment", "hash", "version", "params", "env", "created", "duration_s",
                "columns")


def param_hash(name: str, key: Mapping[str, Any], version: int = 1) -> str:
    """A stable 16-hex-digit hash of (name, key, version): canonical JSON (sorted keys),
    SHA-256. Version 1 hashes (name, key) alone, so results stored before versions existed
    keep their hash."""
    content = {"name": name, "params": key} | ({"version": version} if version != 1 else {})
    payload = json.dumps(content, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


class Store:
    """Stored results under `root` (the results/ directory).

    `force=True` recomputes, but each key at most once per Store, so a run that several
    points of one experiment share is still measured once.
    """

    def __init__(self, root: Path | str):
        self.root = Path(root)
        self._fresh: set[Path] = set()

    def directory(self, name: str, key: Mapping[str, Any], version: int = 1) -> Path:
        return self.root / name / param_hash(name, key, version)

    def cached(self, name: str, key: Mapping[str, Any],
               compute: Callable[[], tuple[pd.DataFrame, dict[str, Any]]],
               force: bool = False, version: int = 1) -> tuple[pd.DataFrame, dict[str, Any]]:
        """(tidy data, record) of experiment `name` for parameters `key`.

        `version` is the experiment's output format: bumping it (new columns, a changed
        method) makes results stored under an older version be computed again.

        Computed by `compute() -> (DataFrame, JSON-ready metadata)` unless stored (or forced).
        The record is run.json: the metadata plus experiment, hash, params, env (versions,
        hardware, git commit), created, duration_s and the columns' dtypes; the returned copy
        adds reused (bool) and path. The data is always read back from the CSV, so a fresh
        result and a reused one are identical.
        """
        directory = self.directory(name, key, version)
        record_file = directory / "run.json"
        reused = not self._stale(record_file, force)
        if reused:
            print(f"{name}: reusing {directory} (force=True recomputes)")
        else:
            print(f"{name}: computing into {directory}")
            start = time.perf_counter()
            data, meta = compute()
            clash = sorted(set(meta) & set(_RECORD_KEYS))
            if clash:
                raise ValueError(f"{name}: metadata must not use the record's keys {clash}")
            record = meta | {
                "experiment": name, "hash": directory.name, "version": version,
                "params": dict(key),
                "env": environment(), "duration_s": time.perf_counter() - start,
                "created": datetime.datetime.now(datetime.timezone.utc).isoformat(
                    timespec="seconds"),
                "columns": {col: str(dtype) for col, dtype in data.dtypes.items()},
            }
            write_atomic(directory / "data.csv", lambda tmp: data.to_csv(tmp, index=False))
            write_json_atomic(record_file, record)
        record = json.loads(record_file.read_text())
        dtypes = {col: (str if dtype == "object" else dtype)
                  for col, dtype in record["columns"].items()}
        data = pd.read_csv(directory / "data.csv", dtype=dtypes)
        return data, record | {"reused": reused, "path": str(directory)}

    def memo(self, benchmark: str, key: Mapping[str, Any], compute: Callable[[], Any],
             force: bool = False) -> Any:
        """The JSON result of `compute()` (a benchmark run with arguments `key`), stored in
        results/_runs/<benchmark>/<hash>.json with the key and reused unless forced."""
        path = self.root / "_runs" / benchmark / f"{param_hash(benchmark, key)}.json"
        if self._stale(path, force):
            print(f"{benchmark}: running {dict(key)}")
            write_json_atomic(path, {"benchmark": benchmark, "key": dict(key),
                                     "result": compute()})
        return json.loads(path.read_text())["result"]

    def _stale(self, path: Path, force: bool) -> bool:
        """Whether `path` must be (re)computed; marks it fresh for this Store if so."""
        stale = not path.exists() or (force and path not in self._fresh)
        if stale:
            self._fresh.add(path)
        return stale
