"""The code a stored result ran, file by file, so that a later change elsewhere in the package
does not outdate it on the results page.

`env.source_hash` keys a result by every file of gnnrepro/ and csrc/: any change anywhere marks
every result as measured by older code. A result's *code path* is narrower: the files its entry
(a bench module, a script) reaches by imports, every `import` counted (also inside functions),
the packages' `__init__` files they run, modules run by name (`-m gnnrepro.x`, an adapter's
module) and, once the path reaches the extension, every C++/CUDA source. A peer's adapter is on
the path only of a result that ran that peer. The path is over-inclusive by design: a file on
it may not run for this result, never the other way round.

RECORD (benchmarks/code_paths.json) holds, per result, the SHA-256 (12 hex digits) of each file
on its path as it was when the result was measured, read with git from the result's commit, or
from the working tree when the result's source hash is today's. The page then compares them with
today's files without git.

    python tools/code_paths.py          # record the results that have no (or an outdated) entry
    python tools/code_paths.py --check  # exit 1 naming those
"""
from __future__ import annotations

import ast
import functools
import hashlib
import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
ROOT = TOOLS.parent
RESULTS_DIR = ROOT / "benchmarks" / "results"
RECORD = ROOT / "benchmarks" / "code_paths.json"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(TOOLS))

from gnnrepro.atomic import write_text_atomic  # noqa: E402
from gnnrepro.env import source_hash  # noqa: E402
from gnnrepro.peers.environments import PEERS  # noqa: E402
from import_graph import imports_of  # noqa: E402

__all__ = ["EVERY_FILE", "code_path", "changed_on_path", "record", "unrecorded"]

#: An entry that stands for the whole package (a run whose parts cannot be listed, such as the
#: GPU session, which runs scripts, tests and notebooks' code alike).
EVERY_FILE = "*"
CSRC_SUFFIXES = (".cpp", ".cu", ".h", ".cuh")
MODULE_NAME = re.compile(r"gnnrepro(\.[A-Za-z_]\w*)+")

#: Reads a file of the repository by its path relative to the root; None where it is absent.
Reader = Callable[[str], bytes | None]


def working_tree(rel: str) -> bytes | None:
    """The file as it is now."""
    path = ROOT / rel
    return path.read_bytes() if path.is_file() else None


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True)


def at_commit(commit: str) -> tuple[Reader, list[str]]:
    """(a reader of the files at `commit`, the code files there); ValueError if git lacks it."""
    listing = _git("ls-tree", "-r", "--name-only", commit, "--", "gnnrepro", "csrc")
    if listing.returncode != 0:
        raise ValueError(f"commit {commit} is not in this repository's history")

    def read(rel: str) -> bytes | None:
        shown = _git("show", f"{commit}:{rel}")
        return shown.stdout if shown.returncode == 0 else None

    return read, listing.stdout.decode().split()


def tree_files() -> list[str]:
    """The code files of the working tree, as git would list them."""
    found = [p for p in (ROOT / "gnnrepro").rglob("*.py") if "__pycache__" not in p.parts]
    found += [p for p in (ROOT / "csrc").rglob("*") if p.is_file()]
    return sorted(str(p.relative_to(ROOT)) for p in found)


def _module_file(module: str, files: set[str]) -> str | None:
    base = module.replace(".", "/")
    return next((f for f in (f"{base}.py", f"{base}/__init__.py") if f in files), None)


def _named_modules(tree: ast.AST) -> set[str]:
    """Modules a file names in a string (an adapter's module name), and for each it runs as a
    program (`"-m", "gnnrepro.x"` in a list) that module's `__main__`."""
    named = {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)
             and isinstance(node.value, str) and MODULE_NAME.fullmatch(node.value)}
    for node in ast.walk(tree):
        if isinstance(node, (ast.List, ast.Tuple)):
            values = [e.value if isinstance(e, ast.Constant) else None for e in node.elts]
            named.update(f"{v}.__main__" for flag, v in zip(values, values[1:])
                         if flag == "-m" and isinstance(v, str) and v.split(".")[0] == "gnnrepro")
    return named


@functools.lru_cache(maxsize=4096)
def _modules_reached(rel: str, text: bytes) -> tuple[frozenset[str], frozenset[str]]:
    """(the gnnrepro modules file `rel`, holding `text`, imports; those it names:
    _named_modules), parsed once per content, though many results' paths cross the same
    files."""
    module = rel[:-3].replace("/", ".").removesuffix(".__init__")
    tree = ast.parse(text, filename=rel)
    return frozenset(imports_of(Path(rel), module, tree)), frozenset(_named_modules(tree))


def code_path(entries: Iterable[str], peers: Iterable[str], read: Reader,
              files: list[str]) -> list[str]:
    """The files `entries` (repository paths of .py files) reach, as the module docstring says;
    `files` lists the code files present, `read` reads them, `peers` names the peers run."""
    entries = list(entries)
    if EVERY_FILE in entries:
        return sorted(f for f in files if f.endswith(".py") or f.endswith(CSRC_SUFFIXES))
    present = set(files)
    skipped = {peer.adapter for name, peer in PEERS.items() if name not in set(peers)}
    seen: set[str] = set()
    todo = list(entries)
    for rel in entries:  # an entry inside the package runs its packages' __init__ first
        parts = rel.split("/")[:-1]
        todo += [f for depth in range(1, len(parts) + 1)
                 if (f := "/".join(parts[:depth]) + "/__init__.py") in present]
    while todo:
        rel = todo.pop()
        if rel in seen:
            continue
        seen.add(rel)
        text = read(rel)
        if text is None:
            raise ValueError(f"{rel} is not in the code read")
        imported, named = _modules_reached(rel, text)
        for name in imported | (named - skipped):
            parts = name.split(".")
            for depth in range(1, len(parts) + 1):  # each package's __init__ runs first
                found = _module_file(".".join(parts[:depth]), present)
                if found:
                    todo.append(found)
            if name == "gnnrepro._C":
                seen.update(f for f in present if f.startswith("csrc/")
                            and f.endswith(CSRC_SUFFIXES))
    return sorted(seen)


def file_hashes(paths: list[str], read: Reader) -> dict[str, str]:
    """path -> SHA-256 (12 hex digits) of its content."""
    return {p: hashlib.sha256(read(p) or b"").hexdigest()[:12] for p in paths}


def result_source(name: str) -> tuple[str | None, str | None, list[str]]:
    """(the commit a result names, its source hash, its uncommitted code files)."""
    path = RESULTS_DIR / name
    if path.is_dir():
        session = json.loads((path / "session.json").read_text())
        env = json.loads((path / "placements.json").read_text())["env"]
        return session.get("commit"), env.get("source_hash"), []
    env = json.loads(path.read_text())["env"]
    commit = (env.get("git_commit") or "").split("+")[0] or None
    dirty = [f for f in env.get("git_dirty_files") or [] if f.startswith(("gnnrepro/", "csrc/"))]
    return commit, env.get("source_hash"), dirty


def peers_run(name: str) -> list[str]:
    """The peers a result asked for: its params' list, the peers it reports, those not run."""
    path = RESULTS_DIR / name
    if path.is_dir():
        return list(PEERS)
    data = json.loads(path.read_text())
    asked = set((data.get("params") or {}).get("peers") or [])
    return sorted(asked | set(data.get("peers") or {}) | set(data.get("peers_not_run") or {}))


def measured_path(name: str, entries: list[str]) -> dict:
    """The record of a result: its commit, source hash and its path's file hashes then (None
    where the code that measured it cannot be read: uncommitted code of another source)."""
    commit, measured_by, dirty = result_source(name)
    entry = {"commit": commit, "source_hash": measured_by, "files": None}
    if measured_by == source_hash():
        read, files = working_tree, tree_files()
    elif dirty or not commit:
        return entry
    else:
        read, files = at_commit(commit)
    path = code_path(entries, peers_run(name), read, files)
    return entry | {"files": file_hashes(path, read)}


def load_record() -> dict[str, dict]:
    """RECORD's entries by result (none before the first recording)."""
    return json.loads(RECORD.read_text()) if RECORD.exists() else {}


def _is_current(entry: dict, name: str) -> bool:
    commit, measured_by, _ = result_source(name)
    return (entry.get("commit"), entry.get("source_hash")) == (commit, measured_by)


def unrecorded(results: dict[str, list[str]]) -> list[str]:
    """The results whose record is missing or names another commit or source."""
    known = load_record()
    return [name for name in results if name not in known or not _is_current(known[name], name)]


def record(results: dict[str, list[str]]) -> list[str]:
    """Record every result of `results` (name -> entries) that needs it; the names recorded."""
    known = load_record()
    todo = unrecorded(results)
    for name in todo:
        known[name] = measured_path(name, results[name])
    kept = {name: known[name] for name in sorted(known) if name in results}
    write_text_atomic(RECORD, json.dumps(kept, indent=1, sort_keys=True) + "\n")
    return todo


@functools.lru_cache(maxsize=None)
def _path_today(entries: tuple[str, ...], peers: tuple[str, ...]) -> dict[str, str]:
    """Today's file hashes on the path of `entries` (results share entries: computed once)."""
    return file_hashes(code_path(entries, peers, working_tree, tree_files()), working_tree)


def changed_on_path(name: str, entries: list[str],
                    known: dict[str, dict] | None = None) -> list[str] | None:
    """The files on a result's path that differ from when it was measured (added, removed or
    changed), today's path compared with the recorded one; None where nothing is recorded.
    `known` is RECORD's entries (load_record), read here if not given."""
    entry = (load_record() if known is None else known).get(name)
    then = entry and entry["files"]
    if then is None:
        return None
    now = _path_today(tuple(entries), tuple(peers_run(name)))
    return sorted(p for p in set(then) | set(now) if then.get(p) != now.get(p))


def main(argv: list[str]) -> int:
    from results_page import result_entries
    results = result_entries()
    if "--check" in argv:
        missing = unrecorded(results)
        for name in missing:
            print(f"{name}: no code path recorded for its source (run tools/code_paths.py)")
        return 1 if missing else 0
    for name in record(results):
        print(f"recorded {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
