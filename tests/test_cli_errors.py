"""What a newcomer meets when a command goes wrong: one line naming the problem, exit code 2 for
bad arguments or missing data and 1 for anything else, the traceback only when asked; and
--help that shows every option's default."""
from __future__ import annotations

import subprocess
import sys

import pytest

from gnnrepro import __main__ as cli
from gnnrepro.errors import error_message


def test_a_missing_dataset_is_one_line_and_exit_2(tmp_path, capsys):
    code = cli.main(["bench", "sampling", "--dataset", "ogbn-arxiv", "--root", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert "error: FileNotFoundError: ogbn-arxiv not found" in err
    assert "never downloads" in err and "Traceback" not in err


def test_an_unexpected_error_names_its_type_and_exits_1(monkeypatch, capsys):
    def broken(**_):
        raise RuntimeError("the op failed")
    monkeypatch.setattr(cli.sampling_speed, "measure", broken)
    assert cli.main(["bench", "sampling", "--scale", "0.002"]) == 1
    err = capsys.readouterr().err
    assert "error: RuntimeError: the op failed" in err and "--debug" in err
    with pytest.raises(RuntimeError, match="the op failed"):
        cli.main(["bench", "sampling", "--scale", "0.002", "--debug"])


def test_error_messages_keep_the_text_and_add_the_type_where_needed():
    assert error_message(ValueError("batch_size must be >= 1")) == \
        ("batch_size must be >= 1", True)
    assert error_message(KeyError("products")) == ("KeyError: products", False)
    assert error_message(OSError("disk full")) == ("OSError: disk full", False)
    assert error_message(RuntimeError()) == ("RuntimeError", False)


def test_a_child_process_error_keeps_its_first_and_last_lines():
    child = ("bench end-to-end failed: pipeline 'fused' raised: Traceback (most recent call "
             "last):\n  File \"x.py\", line 3, in f\n    g()\nValueError: workers must be >= 0\n")
    assert error_message(RuntimeError(child)) == (
        "RuntimeError: bench end-to-end failed: pipeline 'fused' raised: ValueError: workers "
        "must be >= 0", True)
    crashed = child.replace("ValueError: workers must be >= 0", "MemoryError")
    assert error_message(RuntimeError(crashed))[1] is False


def test_help_shows_every_default():
    parser = cli.build_parser()
    kinds = next(a for a in parser._actions if a.dest == "command").choices
    for command in kinds.values():
        subparsers = [a for a in command._actions if a.dest == "benchmark"]
        for sub in (subparsers[0].choices.values() if subparsers else [command]):
            for action in sub._actions:
                if action.option_strings and action.nargs != 0 and action.default is not None \
                        and action.dest not in ("help", "debug"):
                    assert "(default: " in (action.help or ""), (sub.prog, action.dest)


def test_the_process_exits_2_without_a_traceback(tmp_path):
    run = subprocess.run([sys.executable, "-m", "gnnrepro", "partition", "--dataset",
                          "ogbn-arxiv", "--root", str(tmp_path), "--parts", "2", "--out",
                          str(tmp_path / "parts")], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    assert "Traceback" not in run.stderr and "ogbn-arxiv not found" in run.stderr
