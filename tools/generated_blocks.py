"""Write (or check) the blocks of the docs that are generated from stored results, never typed.

A block sits between `<!-- generated:NAME -->` and `<!-- /generated:NAME -->` in a page; its
text comes from BLOCKS[NAME], a function of the stored JSONs.

    python tools/generated_blocks.py          # rewrite every block in place
    python tools/generated_blocks.py --check  # exit 1 naming each stale block
"""
from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gnnrepro.experiments import gpu_results  # noqa: E402

#: Block name -> (page, generator of its text).
BLOCKS: dict[str, tuple[Path, Callable[[], str]]] = {
    "gpu-results": (ROOT / "README.md",
                    lambda: gpu_results.readme_block(gpu_results.stored_gpu_sessions())),
}


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- generated:{re.escape(name)} -->\n)(.*?)(<!-- /generated:"
                      rf"{re.escape(name)} -->)", re.S)


def stale_blocks() -> list[str]:
    """Names of the blocks whose page text differs from what their generator writes now, or
    whose markers are missing."""
    stale = []
    for name, (page, generate) in BLOCKS.items():
        found = _pattern(name).search(page.read_text())
        if found is None or found.group(2) != generate().rstrip("\n") + "\n":
            stale.append(name)
    return stale


def write_blocks() -> None:
    for name, (page, generate) in BLOCKS.items():
        text = page.read_text()
        if _pattern(name).search(text) is None:
            raise SystemExit(f"{page}: no markers for block {name!r}")
        body = generate().rstrip("\n") + "\n"
        page.write_text(_pattern(name).sub(lambda m: m.group(1) + body + m.group(3), text))


def main(argv: list[str]) -> int:
    if argv[1:] == ["--check"]:
        stale = stale_blocks()
        for name in stale:
            print(f"stale generated block {name!r}: run python tools/generated_blocks.py")
        return 1 if stale else 0
    write_blocks()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
