"""environment.yml (conda) and pyproject.toml (pip) must name the same packages."""
from __future__ import annotations

import re
import tomllib
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
