"""BatchSource: what train() needs from whatever produces its mini-batches.

gnnrepro's Loader is one; DGL's own DataLoader behind `gnnrepro.baselines.DGLLoader` is another,
so every pipeline is trained and timed by the same loop.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol, runtime_checkable

import torch

from gnnrepro.pipeline.spans import Span
from gnnrepro.sampling.block import MiniBatch

__all__ = ["BatchSource"]


@runtime_checkable
class BatchSource(Protocol):
    """Each `iter()` is one epoch of MiniBatch objects with `x` and `y` on the training device.

    `work_seconds()` and `spans()` describe the current (or last) epoch's sample and extract
    work; `in_process` says whether that work runs inside `next()` (see gnnrepro.training.profiler).
    """

    in_process: bool
    device: torch.device  # where the batches are (and so where the model trains)
    batch_size: int

    def __iter__(self) -> Iterator[MiniBatch]: ...

    def __len__(self) -> int: ...

    def work_seconds(self) -> dict[str, float]: ...

    def spans(self) -> list[Span]: ...

    def close(self) -> None: ...
