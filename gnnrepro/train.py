"""train(): mini-batch GraphSAGE training on any sampler and Loader settings, with per-epoch
timings (wall, stages, throughput), memory peaks, loss, and final val/test accuracy.

Every pipeline trains the identical model: the model's initial weights and the dropout stream
come from torch.manual_seed(seed), and the batches depend only on (seed, epoch) - never on the
number of workers or streams (see gnnrepro.pipeline.loader) - so pipelines differ only in speed.

The pieces train() is made of - `build_model`, `train_epoch`, `evaluate` - are public so that a
data-parallel rank (gnnrepro.distributed) drives the very same loop on its share of the batches.
"""
from __future__ import annotations

import resource
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import torch
from torch import nn

from gnnrepro.datasets.dataset import Dataset
from gnnrepro.env import environment
from gnnrepro.models.graphsage import GraphSAGE
from gnnrepro.checks import check_device, check_int, check_positive_float
from gnnrepro.pipeline.loader import Loader
from gnnrepro.pipeline.source import BatchSource
from gnnrepro.profiling import Span, StageTimer

__all__ = ["EpochStats", "TrainResult", "build_model", "count_correct", "evaluate", "train",
           "train_epoch"]


@dataclass
class EpochStats:
    """One epoch: wall time, throughput, memory peaks, stage times, mean training loss.

    peak_rss_mb is this (training) process's resident-set high-water mark since it started
    (resource.getrusage ru_maxrss; worker processes not included). peak_gpu_mb is
    torch.cuda.max_memory_allocated over the epoch (None on the CPU). stages is
    {stage: {"work_s", "exposed_s"}} (see gnnrepro.profiling), loader_wait_s the total time
    the loop waited for batches. val_acc is set on epochs picked by eval_every. timeline holds
    the spans (gnnrepro.profiling.Span as dicts, seconds since the epoch began) of the epoch's
    first `timeline_batches` batches: loader, workers and trainer.
    """

    epoch: int
    epoch_s: float
    seeds_per_s: float
    loss: float
    peak_rss_mb: float
    peak_gpu_mb: float | None
    stages: dict[str, dict[str, float | None]]
    loader_wait_s: float
    val_acc: float | None = None
    timeline: list[dict[str, int | str | float]] = field(default_factory=list)
    seeds: int = 0  # seed nodes trained on (this process's share with data parallelism)


@dataclass
class TrainResult:
    """What train() measured, with the parameters and environment that produced it."""

    params: dict[str, Any]
    epochs: list[EpochStats]
    val_acc: float
    test_acc: float
    env: dict[str, Any] = field(default_factory=environment)

    @property
    def losses(self) -> list[float]:
        return [e.loss for e in self.epochs]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict (str keys; str, int, float, bool, None, lists, dicts)."""
        return asdict(self)


def _check_sampler(sampler: object) -> list[int]:
    """The sampler's fanouts; it must follow the FusedSampler API (sample, graph, fanouts)."""
    fanouts = getattr(sampler, "fanouts", None)
    if not callable(getattr(sampler, "sample", None)) or not fanouts:
        raise TypeError(f"sampler must have a sample(seeds, batch_id) method and non-empty "
                        f"fanouts (the FusedSampler API), got {type(sampler).__name__}")
    return list(fanouts)


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


@torch.no_grad()
def count_correct(model: nn.Module, dataset: Dataset, sampler: Any, ids: torch.Tensor,
                  device: torch.device, batch_size: int, rank: int = 0,
                  world_size: int = 1) -> torch.Tensor:
    """Correct predictions (int64 scalar on `device`) on the evaluation batches b of `ids` with
    b % world_size == rank, by mini-batch inference in eval mode (no dropout, no grad) on blocks
    sampled by `sampler`, as in training. Batch b always holds ids[b * batch_size:][:batch_size]
    and uses batch_id b, so summing over ranks gives exactly the one-process count."""
    was_training = model.training
    model.eval()
    correct = torch.zeros((), dtype=torch.int64, device=device)
    for b in range(rank, -(-ids.numel() // batch_size), world_size):
        seeds = ids[b * batch_size: (b + 1) * batch_size]
        mb = sampler.sample(seeds, b)
        x = dataset.features[mb.input_nodes].to(device)
        blocks = [blk.to(device) for blk in mb.blocks]
        pred = model(blocks, x).argmax(dim=1)
        correct += (pred == dataset.labels[seeds].to(device)).sum()
    model.train(was_training)
    return correct


def evaluate(model: nn.Module, dataset: Dataset, sampler: Any, ids: torch.Tensor,
             device: torch.device, batch_size: int) -> float:
    """Accuracy (fraction in [0, 1]) on node ids `ids` (see count_correct; batch b of the
    evaluation uses batch_id b, so it is deterministic). NaN for no ids."""
    if ids.numel() == 0:
        return float("nan")
    return count_correct(model, dataset, sampler, ids, device, batch_size).item() / ids.numel()


def build_model(dataset: Dataset, num_layers: int, hidden: int, dropout: float, seed: int,
                device: torch.device) -> GraphSAGE:
    """The GraphSAGE every pipeline trains: its weights (and the dropout stream that follows)
    come from torch.manual_seed(seed)."""
    torch.manual_seed(seed)
    return GraphSAGE(dataset.num_features, hidden, dataset.num_classes, num_layers,
                     dropout).to(device)


def train_epoch(model: nn.Module, optimizer: torch.optim.Optimizer, loader: BatchSource,
                timer: StageTimer, device: torch.device, epoch: int,
                timeline_batches: int = 0) -> EpochStats:
    """One epoch over `loader`'s batches (cross-entropy, one optimizer step per batch), timed
    stage by stage by `timer`; val_acc is left unset. `model` may be wrapped (e.g. in
    DistributedDataParallel): it is only called and trained."""
    model.train()
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    loss_sum = torch.zeros((), device=device)  # summed on device: no sync per step
    num_seeds = 0
    start = time.perf_counter()
    batches = iter(loader)
    while True:
        try:
            mb = timer.next_batch(batches)
        except StopIteration:
            break
        with timer.stage("forward"):
            loss = nn.functional.cross_entropy(model(mb.blocks, mb.x), mb.y)
        with timer.stage("backward"):
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        loss_sum += loss.detach() * mb.y.numel()
        num_seeds += mb.y.numel()
        del mb  # frees the batch's staging slot before the next one is prepared
    stages = timer.finish_epoch(loader.work_seconds())  # on CUDA: resolves the epoch's events
    epoch_s = time.perf_counter() - start
    return EpochStats(
        epoch=epoch, epoch_s=epoch_s, seeds_per_s=num_seeds / epoch_s,
        loss=loss_sum.item() / max(num_seeds, 1), peak_rss_mb=_peak_rss_mb(),
        peak_gpu_mb=(torch.cuda.max_memory_allocated(device) / 2**20
                     if device.type == "cuda" else None),
        stages=stages.to_dict(), loader_wait_s=stages.wait_s,
        timeline=_timeline(loader.spans() + stages.spans, start, timeline_batches),
        seeds=num_seeds)


def _timeline(spans: list[Span], start: float, batches: int) -> list[dict]:
    """The spans of batches [0, batches), by start, as dicts with times relative to `start`."""
    kept = sorted((s for s in spans if s.batch < batches), key=lambda s: s.start)
    return [s._replace(start=s.start - start, end=s.end - start)._asdict() for s in kept]


def train(dataset: Dataset, sampler: Any, *, device: str | torch.device = "cpu",
          epochs: int = 3, batch_size: int = 1024, lr: float = 0.003, hidden: int = 256,
          dropout: float = 0.5, workers: int | None = None, streams: int | None = None,
          prefetch: int | None = None, seed: int = 0, eval_every: int | None = None,
          eval_batch_size: int = 4096, loader: BatchSource | None = None,
          timeline_batches: int = 0) -> TrainResult:
    """Train GraphSAGE (mean aggregator, num_layers = len(sampler.fanouts)) on `dataset`'s
    training ids with Adam and cross-entropy.

    Batches come from `loader` when given (any BatchSource yielding batches of `batch_size`
    on `device`, e.g. DGL's pipeline), else from a Loader(workers=0, streams=1, prefetch=2
    unless given, seed) over `sampler` (any object with the FusedSampler API built on
    dataset.graph); workers=0, prefetch=1 is the serial pipeline.

    After training (and every `eval_every` epochs, validation only), accuracy on the val and
    test ids is computed by mini-batch inference with `sampler`, model.eval() and
    torch.no_grad(), `eval_batch_size` seeds per batch. Each epoch keeps the timeline of its
    first `timeline_batches` batches. The loader is closed when training ends. Bad arguments
    raise TypeError or ValueError naming the argument.
    """
    if not isinstance(dataset, Dataset):
        raise TypeError(f"dataset must be a gnnrepro Dataset, got {type(dataset).__name__}")
    fanouts = _check_sampler(sampler)
    device = check_device(device)
    check_int("epochs", epochs, 1)
    lr = check_positive_float("lr", lr)
    if eval_every is not None:
        check_int("eval_every", eval_every, 1)
    check_int("eval_batch_size", eval_batch_size, 1)
    check_int("seed", seed, 0)
    check_int("timeline_batches", timeline_batches, 0)
    if loader is None:
        loader = Loader(dataset, sampler, device, batch_size, shuffle=True,
                        workers=0 if workers is None else workers,
                        streams=1 if streams is None else streams,
                        prefetch=2 if prefetch is None else prefetch, seed=seed)
    elif not isinstance(loader, BatchSource):
        raise TypeError(f"loader must be a BatchSource (iter, len, work_seconds, spans, close, "
                        f"in_process), got {type(loader).__name__}")
    elif (workers, streams, prefetch) != (None, None, None):
        raise ValueError("workers, streams and prefetch configure the default Loader: pass "
                         "them to your loader instead of train() when giving loader")
    check_int("batch_size", batch_size, 1)

    model = build_model(dataset, len(fanouts), hidden, dropout, seed, device)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    timer = StageTimer(device, in_process=loader.in_process)
    params = {"dataset": dataset.name, "dataset_params": dict(dataset.params),
              "sampler": type(getattr(loader, "sampler", sampler)).__name__,
              "eval_sampler": type(sampler).__name__, "loader": repr(loader), "fanouts": fanouts,
              "device": str(device), "epochs": epochs,
              "batch_size": getattr(loader, "batch_size", batch_size), "lr": lr,
              "hidden": hidden, "dropout": dropout, "workers": getattr(loader, "workers", None),
              "streams": getattr(loader, "streams", None),
              "prefetch": getattr(loader, "prefetch", None), "seed": seed,
              "eval_every": eval_every, "eval_batch_size": eval_batch_size,
              "optimizer": "Adam", "loss": "cross_entropy", "model": "GraphSAGE-mean",
              "num_layers": len(fanouts), "timeline_batches": timeline_batches}

    history: list[EpochStats] = []
    try:
        for epoch in range(epochs):
            stats = train_epoch(model, optimizer, loader, timer, device, epoch, timeline_batches)
            if eval_every is not None and (epoch + 1) % eval_every == 0:
                stats.val_acc = evaluate(model, dataset, sampler, dataset.val_idx, device,
                                         eval_batch_size)
            history.append(stats)
    finally:
        loader.close()

    val_acc = history[-1].val_acc  # set if eval_every divides epochs: same model, same batches
    if val_acc is None:
        val_acc = evaluate(model, dataset, sampler, dataset.val_idx, device, eval_batch_size)
    test_acc = evaluate(model, dataset, sampler, dataset.test_idx, device, eval_batch_size)
    return TrainResult(params, history, val_acc, test_acc)
