"""BatchView: a loader seen through a per-batch conversion, re-iterable epoch after epoch as
the peers' loaders are (`for epoch in ...: for batch in view:`)."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from gnnrepro.sampling.block import MiniBatch

__all__ = ["BatchView", "OwningBatchView"]


class BatchView:
    """Each `iter()` is one epoch of `loader`, every batch passed through `convert`; `len()`
    is the loader's. The loader itself stays the caller's (close it when done)."""

    def __init__(self, loader: Iterable[MiniBatch], convert: Callable[[MiniBatch], Any]):
        if not callable(getattr(loader, "__iter__", None)):
            raise TypeError(f"loader must be iterable (a gnnrepro Loader), got "
                            f"{type(loader).__name__}")
        self.loader, self.convert = loader, convert

    def __iter__(self) -> Iterator[Any]:
        for mb in self.loader:
            yield self.convert(mb)

    def __len__(self) -> int:
        return len(self.loader)  # type: ignore[arg-type]

    def __repr__(self) -> str:
        return f"{self.convert.__name__} view of {self.loader!r}"


class OwningBatchView(BatchView):
    """A BatchView that owns its Loader (the drop-ins' loaders): `close()`, or a `with` block,
    stops its workers."""

    def close(self) -> None:
        self.loader.close()  # type: ignore[attr-defined]

    def __enter__(self) -> "OwningBatchView":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
