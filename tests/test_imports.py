"""The package's imports go one way, down the data flow (tools/import_graph.py: LAYERS), and its
part graph has no cycle; the checker itself finds a cycle and an upward import. No module is
longer than the house allows."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT / "tools" / "import_graph.py"


def _tool():
    spec = importlib.util.spec_from_file_location("import_graph", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_gnnrepro_imports_only_downward_and_has_no_cycle():
    out = subprocess.run([sys.executable, str(TOOL)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "cycles: none" in out.stdout and "imports against the layers: none" in out.stdout


def test_the_checker_finds_cycles_and_upward_imports(tmp_path):
    package = tmp_path / "gnnrepro"
    (package / "pipeline").mkdir(parents=True)
    (package / "training").mkdir()
    (package / "__init__.py").write_text("")
    (package / "pipeline" / "__init__.py").write_text("")
    (package / "training" / "__init__.py").write_text("")
    (package / "pipeline" / "loader.py").write_text(
        "def late():\n    from gnnrepro.training.loop import train\n")
    (package / "training" / "loop.py").write_text("from gnnrepro.pipeline import loader\n")
    tool = _tool()
    graph = tool.part_graph(package)
    assert graph["pipeline"] == {"training"} and graph["training"] == {"pipeline"}
    assert tool.cycles(graph) == [["pipeline", "training"]]
    layer = {part: i for i, parts in enumerate(tool.LAYERS) for part in parts}
    assert tool.upward_imports(graph) == [
        f"pipeline (layer {layer['pipeline']}) -> training (layer {layer['training']})"]


#: The house's limit on a module's length: a longer one is split by the seams it has.
MAX_MODULE_LINES = 450


def test_no_module_is_longer_than_the_house_allows():
    code = [path for folder in ("gnnrepro", "tools", "benchmarks", "notebooks")
            for path in (ROOT / folder).rglob("*.py")]
    too_long = {str(path.relative_to(ROOT)): lines for path in code
                if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES}
    assert code and too_long == {}, f"split these by their seams: {too_long}"
