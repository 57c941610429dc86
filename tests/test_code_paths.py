"""tools/code_paths.py: the files a result's code reaches, and which of them changed since."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import load_script

ROOT = Path(__file__).resolve().parents[1]
code_paths = load_script(ROOT / "tools" / "code_paths.py")

#: A small package as code_path reads it: imports at the top and inside a function, a relative
#: import, an extension, peers' adapters named in strings, a package run with `-m`.
TREE = {
    "gnnrepro/__init__.py": "",
    "gnnrepro/bench/__init__.py": "",
    "gnnrepro/bench/run.py": ("from gnnrepro.sampling.fused import sample\n"
                              "from gnnrepro.peers import PEERS\n"
                              "def later():\n    from gnnrepro.features import store\n"),
    "gnnrepro/sampling/__init__.py": "from . import fused\n",
    "gnnrepro/sampling/fused.py": "from gnnrepro import _C\n",
    "gnnrepro/features/__init__.py": "",
    "gnnrepro/features/store.py": "",
    "gnnrepro/peers/__init__.py": ("ADAPTERS = ['gnnrepro.peers.pyg_peer', "
                                   "'gnnrepro.peers.graphbolt_peer']\n"
                                   "COMMAND = ['python', '-m', 'gnnrepro.tool', 'serve']\n"),
    "gnnrepro/peers/pyg_peer.py": "",
    "gnnrepro/peers/graphbolt_peer.py": "",
    "gnnrepro/tool/__init__.py": "",
    "gnnrepro/tool/__main__.py": "import gnnrepro.tool.helper\n",
    "gnnrepro/tool/helper.py": "",
    "gnnrepro/unused.py": "import gnnrepro.bench.run\n",
    "csrc/sample.cpp": "", "csrc/sample.h": "", "csrc/kernel.cu": "", "csrc/archs.txt": "8.0",
}


def path_of(entries: list[str], peers: list[str] = ()) -> list[str]:
    return code_paths.code_path(entries, peers, lambda rel: TREE.get(rel, "").encode()
                                if rel in TREE else None, sorted(TREE))


def test_the_path_follows_every_import_the_packages_and_the_extension() -> None:
    path = path_of(["gnnrepro/bench/run.py"])
    assert path == sorted([
        "gnnrepro/__init__.py", "gnnrepro/bench/__init__.py", "gnnrepro/bench/run.py",
        "gnnrepro/sampling/__init__.py", "gnnrepro/sampling/fused.py",
        "gnnrepro/features/__init__.py", "gnnrepro/features/store.py",  # inside a function
        "gnnrepro/peers/__init__.py",
        "gnnrepro/tool/__init__.py", "gnnrepro/tool/__main__.py", "gnnrepro/tool/helper.py",
        "csrc/sample.cpp", "csrc/sample.h", "csrc/kernel.cu",  # not archs.txt: not code
    ])


def test_a_peers_adapter_is_on_the_path_only_of_a_result_that_ran_that_peer() -> None:
    assert "gnnrepro/peers/pyg_peer.py" not in path_of(["gnnrepro/bench/run.py"])
    with_pyg = path_of(["gnnrepro/bench/run.py"], ["pyg"])
    assert "gnnrepro/peers/pyg_peer.py" in with_pyg
    assert "gnnrepro/peers/graphbolt_peer.py" not in with_pyg


def test_every_file_stands_for_the_whole_package_and_a_missing_entry_is_an_error() -> None:
    assert path_of([code_paths.EVERY_FILE]) == sorted(f for f in TREE if f != "csrc/archs.txt")
    with pytest.raises(ValueError, match="gnnrepro/bench/gone.py"):
        path_of(["gnnrepro/bench/gone.py"])


def test_changed_on_path_names_the_files_changed_added_or_removed(tmp_path, monkeypatch) -> None:
    """Against this repository's own files: a record equal to today's shows no change; one with
    a file's hash altered, one file missing and one extra shows exactly those three."""
    entries = ["gnnrepro/__main__.py", "gnnrepro/bench/loader.py"]
    today = code_paths.file_hashes(
        code_paths.code_path(entries, [], code_paths.working_tree, code_paths.tree_files()),
        code_paths.working_tree)
    assert "gnnrepro/bench/loader.py" in today and "gnnrepro/plots/__init__.py" not in today
    record = tmp_path / "code_paths.json"
    monkeypatch.setattr(code_paths, "RECORD", record)
    record.write_text(json.dumps({"loader-cpu.json": {"files": today}}))
    assert code_paths.changed_on_path("loader-cpu.json", entries) == []
    then = dict(today, **{"gnnrepro/bench/loader.py": "0" * 12, "gnnrepro/gone.py": "1" * 12})
    then.pop("gnnrepro/env.py")
    record.write_text(json.dumps({"loader-cpu.json": {"files": then}}))
    assert code_paths.changed_on_path("loader-cpu.json", entries) == [
        "gnnrepro/bench/loader.py", "gnnrepro/env.py", "gnnrepro/gone.py"]
    record.write_text(json.dumps({"loader-cpu.json": {"files": None}}))
    assert code_paths.changed_on_path("loader-cpu.json", entries) is None


def test_every_stored_result_has_its_code_path_recorded_for_its_source() -> None:
    results_page = load_script(ROOT / "tools" / "results_page.py")
    assert code_paths.unrecorded(results_page.result_entries()) == [], \
        "run python tools/code_paths.py"
