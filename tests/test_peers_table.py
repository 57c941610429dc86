"""docs/peers.md's measured table (tools/peers_table.py) is read from the stored JSONs: one row
per stack with its five columns, each cell the value its JSON holds, and a missing file or
field an error that names it, never a blank cell. Read from a copy of the stored files, so a
benchmark rewriting them meanwhile changes nothing here."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import ModuleType

import pytest

from helpers import load_script

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """tools/peers_table.py reading a copy of the results it quotes, in tmp_path."""
    module = load_script(ROOT / "tools" / "peers_table.py")
    names = [n for pair in module.FILES.values() for n in pair] + [module.DISTDGL]
    for name in names:
        shutil.copy(module.headline.RESULTS / f"{name}.json", tmp_path / f"{name}.json")
    monkeypatch.setattr(module.headline, "RESULTS", tmp_path)
    return module


def _rows(text: str) -> dict[str, list[str]]:
    """The table's body rows by their stack label's first words: cells without the label."""
    rows = [line.strip("|").split(" | ") for line in text.splitlines()
            if line.startswith("| ") and not line.startswith("| ---")]
    return {cells[0].strip(): [c.strip() for c in cells[1:]] for cells in rows[1:]}


def _edit(folder: Path, name: str, change) -> None:
    path = folder / f"{name}.json"
    result = json.loads(path.read_text())
    change(result)
    path.write_text(json.dumps(result))


def test_one_row_per_stack_with_five_columns(table) -> None:
    rows = _rows(table.peers_table())
    assert len(rows) == len(table.STACKS) + 1  # and DistDGL's
    assert all(len(cells) == 5 for cells in rows.values()), rows
    assert all(cell for cells in rows.values() for cell in cells)
    labels = list(rows)
    assert labels[0].startswith("**ours**") and labels[-1].startswith("DistDGL")
    assert rows[labels[0]][0].startswith("**") and not rows[labels[0]][3].startswith("**")


def test_a_cell_is_the_value_its_json_holds(table) -> None:
    rows = _rows(table.peers_table())
    graphbolt = next(cells for label, cells in rows.items() if label.startswith("GraphBolt"))
    expect = []
    for name in table.FILES["sampling"]:
        s = json.loads((table.headline.RESULTS / f"{name}.json").read_text())["samplers"]
        expect.append(f"{s['graphbolt']['ms_per_batch']:.3g} ms, "
                      f"{s['graphbolt']['edges_per_s'] / 1e6:.3g}M/s")
    assert graphbolt[0] == " / ".join(expect)


def test_a_missing_field_or_file_raises_naming_it(table) -> None:
    folder = table.headline.RESULTS
    _edit(folder, "peers-sampling-cpu",
          lambda r: r["samplers"]["graphbolt"].pop("ms_per_batch"))
    with pytest.raises(table.MissingField, match=r"peers-sampling-cpu\.json: no field "
                                                r"samplers\.graphbolt\.ms_per_batch"):
        table.peers_table()
    (folder / "peers-sampling-cpu.json").unlink()
    with pytest.raises(table.MissingField, match=r"peers-sampling-cpu\.json: no such file"):
        table.peers_table()


def test_a_peer_not_run_says_so_and_why(table) -> None:
    folder = table.headline.RESULTS
    _edit(folder, "peers-loader-cpu", lambda r: (r["pipelines"].pop("graphbolt"), r.update(
        peers_not_run={"graphbolt": "not set up: make peers\nsecond line"})))
    rows = _rows(table.peers_table())
    graphbolt = next(cells for label, cells in rows.items() if label.startswith("GraphBolt"))
    assert graphbolt[1].startswith("not run: not set up: make peers / ")
