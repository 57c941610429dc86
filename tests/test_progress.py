"""Progress: plain lines in logs (none for short work, the count and the note once it runs
long), a bar on a terminal, and an override that silences it."""
from __future__ import annotations

import io

import pytest

from gnnrepro.progress import Progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_short_work_prints_nothing_in_a_log(monkeypatch) -> None:
    monkeypatch.delenv("GNNREPRO_PROGRESS", raising=False)
    log = io.StringIO()
    with Progress("epoch 0", 5, "batches", every_s=60.0, stream=log) as bar:
        for _ in range(5):
            bar.update()
    assert log.getvalue() == ""


def test_long_work_prints_count_total_and_note_then_a_last_line(monkeypatch) -> None:
    monkeypatch.delenv("GNNREPRO_PROGRESS", raising=False)
    log = io.StringIO()
    with Progress("evaluate", 3, "chunks", every_s=0.0, stream=log) as bar:
        bar.update(note="layer 1/2")
        bar.update(2, note="layer 2/2")
    lines = log.getvalue().splitlines()
    assert lines[0].startswith("evaluate: 1/3 chunks,") and lines[0].endswith("(layer 1/2)")
    assert lines[1].startswith("evaluate: 3/3 chunks,")
    assert lines[-1].startswith("evaluate: 3/3 chunks,")  # the closing line


@pytest.mark.parametrize("mode,expect_output", [("off", False), ("lines", True)])
def test_the_environment_overrides_the_choice(monkeypatch, mode, expect_output) -> None:
    monkeypatch.setenv("GNNREPRO_PROGRESS", mode)
    stream = _Terminal()
    with Progress("work", 2, every_s=0.0, stream=stream) as bar:
        bar.update()
    assert ("work: 1/2" in stream.getvalue()) == expect_output


def test_a_terminal_gets_a_bar(monkeypatch) -> None:
    monkeypatch.delenv("GNNREPRO_PROGRESS", raising=False)
    stream = _Terminal()
    with Progress("epoch 1", 4, "batches", stream=stream) as bar:
        bar.update(4, note="loss 0.5")
    assert "epoch 1:" in stream.getvalue() and "0/4" in stream.getvalue()  # tqdm's first draw


def test_a_resumed_count_goes_on_from_what_was_done(monkeypatch) -> None:
    """A resumed epoch's bar counts from its first step (300 of 600, not 0)."""
    monkeypatch.setenv("GNNREPRO_PROGRESS", "lines")
    log = io.StringIO()
    with Progress("epoch 0", 600, "batches", every_s=0.0, stream=log, done=300) as bar:
        bar.update()
    assert log.getvalue().splitlines()[0].startswith("epoch 0: 301/600 batches,")
