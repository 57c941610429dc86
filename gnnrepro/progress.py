"""Progress of long work: a tqdm bar on a terminal, plain lines in logs, nothing for short work.

Loops that can run for minutes at scale (training epochs, evaluation, LMDB builds) report
through `Progress`, so no run sits silent.
On a terminal (stderr is a tty) it draws a tqdm bar. Elsewhere (make's output, a notebook's
log, a CI log) it writes one plain line at most every `every_s` seconds, and a last line at the
end only when it wrote one before: work shorter than `every_s` prints nothing.
GNNREPRO_PROGRESS=bar|lines|off overrides the choice.
"""
from __future__ import annotations

import os
import sys
import time
from typing import Any, TextIO

__all__ = ["Progress", "announce"]

_MODES = ("bar", "lines", "off")


def _mode(stream: TextIO) -> str:
    mode = os.environ.get("GNNREPRO_PROGRESS", "").strip().lower()
    if mode in _MODES:
        return mode
    isatty = getattr(stream, "isatty", None)
    return "bar" if callable(isatty) and isatty() else "lines"


def announce(text: str, stream: TextIO | None = None) -> None:
    """One line saying which stage of long work starts now (silent when
    GNNREPRO_PROGRESS=off)."""
    stream = sys.stderr if stream is None else stream
    if _mode(stream) != "off":
        print(text, file=stream, flush=True)


class Progress:
    """`desc`: done/total unit, elapsed, and `note` (e.g. the stage or the loss). `done`: the
    units already done before this (a resumed epoch's steps)."""

    def __init__(self, desc: str, total: int | None = None, unit: str = "it",
                 every_s: float = 10.0, stream: TextIO | None = None, done: int = 0):
        self.desc, self.total, self.unit, self.every_s = desc, total, unit, every_s
        self.stream = sys.stderr if stream is None else stream
        self.done = done
        self.note = ""
        self._start = self._last = time.monotonic()
        self._printed = False
        self._mode = _mode(self.stream)
        self._bar: Any = None
        if self._mode == "bar":
            from tqdm import tqdm
            self._bar = tqdm(total=total, desc=desc, unit=unit, file=self.stream,
                             leave=False, dynamic_ncols=True, initial=done)

    def update(self, n: int = 1, note: str | None = None) -> None:
        """`n` more units done; `note` replaces the text shown after the count."""
        self.done += n
        if note is not None:
            self.note = note
        if self._bar is not None:
            if note is not None:
                self._bar.set_postfix_str(note, refresh=False)
            self._bar.update(n)
        elif self._mode == "lines" and time.monotonic() - self._last >= self.every_s:
            self._line()

    def _line(self) -> None:
        self._last = time.monotonic()
        total = f"/{self.total}" if self.total is not None else ""
        note = f" ({self.note})" if self.note else ""
        print(f"{self.desc}: {self.done}{total} {self.unit}, "
              f"{self._last - self._start:.0f} s{note}", file=self.stream, flush=True)
        self._printed = True

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        elif self._printed:
            self._line()
            self._printed = False

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

