"""The four training pipelines the paper compares, by name, and `train_pipeline` to run one.

* "dgl": DGL 2.1's DataLoader + NeighborSampler with DGL's own feature slicing (the baseline).
* "reference": our unfused torch sampler (sample to COO, then relabel), serial.
* "fused": our fused sampler, serial: no worker processes, no side streams, nothing ahead.
* "fused+pinned": the paper's full method: fused sampler, W worker processes sampling and
  gathering into shared (with CUDA, pinned) staging slots P batches ahead, host-to-device
  copies on S CUDA streams. On a CPU-only machine there is nothing to pin or copy: it is the
  fused sampler with the worker/prefetch overlap.

All four train the identical model from the same initial weights on batches of the same size
and are evaluated with the same fused sampler (seed `seed`), so their accuracies differ only
through the batches they trained on.
"""
from __future__ import annotations

from typing import Any

import torch

from gnnrepro.datasets.dataset import Dataset
from gnnrepro.pipeline.loader import Loader
from gnnrepro.pipeline.source import BatchSource
from gnnrepro.sampling import FusedSampler, ReferenceSampler
from gnnrepro.train import TrainResult, train

__all__ = ["PIPELINES", "make_loader", "train_pipeline"]

PIPELINES = ("dgl", "reference", "fused", "fused+pinned")


def make_loader(name: str, dataset: Dataset, fanouts: list[int], device: str | torch.device,
                batch_size: int, seed: int = 0, workers: int = 1, streams: int = 2,
                prefetch: int = 2, *, rank: int = 0, world_size: int = 1) -> BatchSource:
    """The named pipeline's batch source; workers, streams and prefetch apply to
    "fused+pinned" only (the serial pipelines have none). `rank` and `world_size` select a
    data-parallel rank's share of each epoch ("dgl": DGL's own use_ddp=True split)."""
    ranks = {"rank": rank, "world_size": world_size}
    if name == "dgl":
        from gnnrepro.baselines.dgl_loader import DGLLoader  # imports DGL
        return DGLLoader(dataset, fanouts, device, batch_size, seed=seed, **ranks)
    if name in ("reference", "fused"):
        cls = ReferenceSampler if name == "reference" else FusedSampler
        return Loader(dataset, cls(dataset.graph, fanouts, seed=seed), device, batch_size,
                      workers=0, streams=1, prefetch=1, seed=seed, **ranks)
    if name == "fused+pinned":
        return Loader(dataset, FusedSampler(dataset.graph, fanouts, seed=seed), device,
                      batch_size, workers=workers, streams=streams, prefetch=prefetch,
                      seed=seed, **ranks)
    raise ValueError(f"pipeline must be one of {', '.join(PIPELINES)}, got {name!r}")


def train_pipeline(name: str, dataset: Dataset, fanouts: list[int], *,
                   device: str | torch.device = "cpu", batch_size: int = 1024, seed: int = 0,
                   workers: int = 1, streams: int = 2, prefetch: int = 2,
                   **train_kwargs: Any) -> TrainResult:
    """train() on the named pipeline's batches (see the module docstring); `train_kwargs`
    are train()'s other keyword arguments (epochs, lr, hidden, timeline_batches, ...)."""
    loader = make_loader(name, dataset, fanouts, device, batch_size, seed, workers, streams,
                         prefetch)
    evaluator = FusedSampler(dataset.graph, fanouts, seed=seed)
    result = train(dataset, evaluator, device=device, batch_size=batch_size, seed=seed,
                   loader=loader, **train_kwargs)
    result.params["pipeline"] = name
    return result
