"""From how many threads the fused CPU sampler relabels a layer's sources in parallel passes
rather than in its ordered pass beside the sampling (csrc/sampling/relabel_mode.h). The blocks
are the same either way; only the speed differs: the ordered pass is one pass on one thread at
a time, the parallel one four passes on every thread (benchmarks/NOTES.md, issue 49 item 6)."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from gnnrepro.checks import check_int

__all__ = ["parallel_relabel_threads", "relabel_in_parallel_from"]


def parallel_relabel_threads(threads: int | None = None) -> int:
    """The op's team size from which it relabels in parallel; with `threads`, set it (process
    wide) and return the previous setting."""
    from gnnrepro import _C
    if threads is None:
        return int(_C.parallel_relabel_threads())
    return int(_C.parallel_relabel_threads(check_int("threads", threads, 1)))


@contextmanager
def relabel_in_parallel_from(threads: int) -> Iterator[None]:
    """`parallel_relabel_threads(threads)` inside the block, the previous setting after it."""
    previous = parallel_relabel_threads(threads)
    try:
        yield
    finally:
        parallel_relabel_threads(previous)
