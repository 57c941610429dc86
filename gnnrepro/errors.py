"""How the command lines report an error: one line naming what is wrong, exit status 2 for a
usage error (a bad argument, missing data) and 1 otherwise; `--debug` or GNNREPRO_DEBUG=1 shows
the traceback instead."""
from __future__ import annotations

import os
import sys

__all__ = ["DEBUG_ENV", "USAGE_ERRORS", "error_message", "report_error"]

DEBUG_ENV = "GNNREPRO_DEBUG"
USAGE_ERRORS = (ValueError, TypeError, FileNotFoundError, FileExistsError, NotADirectoryError)


def error_message(exc: BaseException) -> tuple[str, bool]:
    """(one line saying what went wrong, whether it is a usage error).

    ValueError and TypeError messages name the argument, so they are shown alone; other
    types are named. A child process's failure (a benchmark run in a fresh process) carries
    the child's traceback in its text: the line is the text before it plus the child's
    exception line, and the child's exception type decides whether it is a usage error.
    """
    text = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
    usage = isinstance(exc, USAGE_ERRORS)
    head, marker, rest = text.partition("Traceback (most recent call last):")
    if marker:
        last = [line.strip() for line in rest.splitlines() if line.strip()][-1:]
        child = last[0] if last else ""
        kind = child.split(":", 1)[0]
        usage = kind in {e.__name__ for e in USAGE_ERRORS}
        text = f"{head.strip()} {child}".strip()
    text = " ".join(text.split())  # one line
    if isinstance(exc, (ValueError, TypeError)) and text:
        return text, usage
    return (f"{type(exc).__name__}: {text}" if text else type(exc).__name__), usage


def report_error(prog: str, exc: Exception, debug: bool = False) -> int:
    """Print `exc` as one line (re-raise it with `debug` or GNNREPRO_DEBUG set); the exit
    status: 2 for a usage error, else 1."""
    if debug or os.environ.get(DEBUG_ENV, "") not in ("", "0"):
        raise exc
    message, usage = error_message(exc)
    print(f"{prog}: error: {message}\n(--debug or {DEBUG_ENV}=1 shows the traceback)",
          file=sys.stderr)
    return 2 if usage else 1
