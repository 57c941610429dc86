"""The README and docs/ cannot go stale: their Python examples run (at a tiny scale, in a temp
data cache), every `python -m gnnrepro` and `-m gnnrepro.distributed` command in them parses
with today's options, and every `make` target they name exists."""
from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from gnnrepro import __main__ as cli
from gnnrepro.distributed import __main__ as distributed_cli

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TINY_SCALE = "0.002"
#: mag-sim's smallest scale holds 8,000 nodes of all types (gnnrepro.datasets.mag_sim).
TINY_MAG_SCALE = "0.005"
# Python examples that start processes of their own (ranks) and are run by other tests
# (tests/test_distributed.py runs `launch`), or are fragments of a page's larger example.
NOT_RUN = {"docs/data-parallel.md": "launch() starts 4 ranks: tests/test_distributed.py"}
# An example that uses one of these modules runs only where it is installed: module -> the text
# that marks such an example.
NEEDS = {"dgl": "import_dgl()", "torch_geometric": "torch_geometric"}


def importable_from(root: Path) -> str:
    """PYTHONPATH with `root` first: the examples run from a folder of their own import this
    checkout's gnnrepro, installed or not (a lent GPU machine runs it uninstalled)."""
    return os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p)


def code_blocks(path: Path, language: str) -> list[str]:
    """The fenced code blocks of `path` marked with `language`."""
    blocks, current, marked = [], None, ""
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            if current is None:
                current, marked = [], line[3:].strip()
            else:
                if marked == language:
                    blocks.append("\n".join(current))
                current = None
        elif current is not None:
            current.append(line)
    return blocks


def shell_commands(path: Path) -> list[str]:
    """Every line of the page's bash blocks with continuations joined; a command quoted in a
    comment (`make x  # = python -m ...`) continues over the commented lines below it."""
    commands = []
    for block in code_blocks(path, "bash"):
        joined = re.sub(r"\\\n\s*(#\s*)?", " ", block)
        commands.extend(line for line in joined.splitlines() if line.strip())
    return commands


def cli_arguments(command: str, module: str) -> list[str] | None:
    """The arguments after `-m <module>` in `command`, or None if it does not run it."""
    found = re.search(rf"-m {re.escape(module)}(\s|$)", command)
    return None if found is None else shlex.split(command[found.end():], comments=True)


def page_id(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_cli_command_on_the_page_parses(page):
    for command in shell_commands(page):
        for module, parser in (("gnnrepro", cli.build_parser()),
                               ("gnnrepro.distributed", distributed_cli.build_parser())):
            args = cli_arguments(command, module)
            if args is not None:
                parser.parse_args(args)  # exits (SystemExit) on an option that is gone


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_make_target_on_the_page_exists(page):
    targets = set(re.findall(r"^([a-z][a-z-]*):", (ROOT / "Makefile").read_text(), re.M))
    named = set(re.findall(r"`make ([a-z][a-z-]*)", page.read_text()))
    for command in shell_commands(page):
        named |= set(re.findall(r"(?:^|\s)make ([a-z][a-z-]*)", command))
    assert named <= targets, sorted(named - targets)


@pytest.mark.parametrize("page", [p for p in PAGES if code_blocks(p, "python")], ids=page_id)
def test_the_python_examples_run(page, tmp_path):
    if page_id(page) in NOT_RUN:
        pytest.skip(NOT_RUN[page_id(page)])
    for index, block in enumerate(code_blocks(page, "python")):
        missing = [module for module, needs in NEEDS.items() if needs in block
                   and importlib.util.find_spec(module) is None]
        if missing:  # e.g. a GPU machine without DGL: the other examples still run
            print(f"{page_id(page)} example {index}: not run, needs {', '.join(missing)}")
            continue
        tiny = re.sub(r"scale=[0-9.]+",
                      f"scale={TINY_MAG_SCALE if 'mag-sim' in block else TINY_SCALE}", block)
        tiny = re.sub(r"epochs=\d+", "epochs=1", tiny)
        script = tmp_path / f"example_{index}.py"
        script.write_text(tiny)
        run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                             text=True, timeout=300,
                             env=os.environ | {"GNNREPRO_DATA": str(tmp_path / "data"),
                                               "GNNREPRO_PROGRESS": "off",
                                               "PYTHONPATH": importable_from(ROOT)})
        assert run.returncode == 0, f"{page_id(page)} example {index}:\n{run.stderr[-3000:]}"
        assert run.stdout.strip(), "the example prints what it shows"


def test_generated_blocks_are_current() -> None:
    """The blocks written from stored results (tools/generated_blocks.py) match those results:
    a number on the page that differs from its JSON fails here."""
    from helpers import load_script
    assert load_script(ROOT / "tools" / "generated_blocks.py").stale_blocks() == [], "run python tools/generated_blocks.py"
