"""environment.yml (conda) and pyproject.toml (pip) must name the same packages."""
from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
# Installed by conda/pip themselves, or the interpreter.
_TOOLING = {"python", "pip", "setuptools", "wheel"}


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def test_environment_yml_matches_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    pip_names = {_name(r) for r in project["project"]["dependencies"]}
    pip_names |= {_name(r) for r in project["project"]["optional-dependencies"]["all"]}
    pip_names |= {_name(r) for r in project["build-system"]["requires"]}
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda_names = set()
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            conda_names |= {_name(r) for r in dep["pip"]}
        else:
            conda_names.add(_name(dep))
    assert conda_names - _TOOLING == pip_names - _TOOLING


def test_every_extra_is_in_all():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    everything = set(extras["all"])
    for name, requirements in extras.items():
        assert set(requirements) <= everything, f"extra {name!r} is not covered by 'all'"


def _peer_adapters() -> set[Path]:
    """The peers' adapter modules: they run in the peers' own environments (make peers)."""
    from gnnrepro.peers import PEERS
    return {ROOT / (module.replace(".", "/") + ".py") for peer in PEERS.values()
            for module in (peer.adapter, peer.typed_adapter) if module}


def _third_party_imports(paths: Iterable[Path] | None = None) -> set[str]:
    """Top-level names of the modules `paths` (default: gnnrepro's code but the peers'
    adapters) import that are neither the standard library nor gnnrepro (every import counts,
    also one inside a function)."""
    names = set()
    if paths is None:
        paths = set((ROOT / "gnnrepro").rglob("*.py")) - _peer_adapters()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return {n for n in names if n not in sys.stdlib_module_names and n != "gnnrepro"}


def test_every_imported_package_is_declared():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {_name(r) for r in project["dependencies"]}
    declared |= {_name(r) for r in project["optional-dependencies"]["all"]}
    providers = metadata.packages_distributions()
    missing = {}
    for module in sorted(_third_party_imports()):
        dists = {_name(d) for d in providers.get(module, [module])}
        if not dists & declared:
            missing[module] = sorted(dists)
    assert not missing, f"imported but not declared in pyproject.toml: {missing}"


def test_every_package_a_peer_imports_is_installed_by_make_peers():
    recipe = (ROOT / "Makefile").read_text().lower().replace("_", "-")
    imported = _third_party_imports(_peer_adapters())
    assert {"dgl", "torch-geometric", "torch-sparse"} <= {m.replace("_", "-") for m in imported}
    missing = [m for m in imported if m.replace("_", "-") + "==" not in recipe and m != "torch"]
    assert not missing, f"the peers' adapters import what `make peers` does not pin: {missing}"
