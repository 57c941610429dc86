"""The one training loop: `train` runs GraphSAGE over any BatchSource's batches, epoch by
epoch, timed stage by stage, and evaluates it; `train_epoch` is one epoch of it.

Every pipeline trains the identical model: the initial weights and the dropout stream come
from torch.manual_seed(seed), and the batches depend only on (seed, epoch) - never on the
number of workers or streams (see gnnrepro.pipeline.loader) - so pipelines differ only in speed.
The same function trains a data-parallel rank: when a torch.distributed process group with
more than one rank exists, the model is wrapped in DistributedDataParallel, each rank draws its
own dropout stream, and the accuracies are summed over the ranks.
"""
from __future__ import annotations

import contextlib
import resource
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple, Protocol

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from gnnrepro.baselines.dgl_model import DGLGraphSAGE
from gnnrepro.checks import check_int
from gnnrepro.config import SETTINGS, validate
from gnnrepro.datasets.dataset import Dataset
from gnnrepro.datasets.typed_dataset import TypedDataset
from gnnrepro.env import environment
from gnnrepro.eval_subset import eval_subset
from gnnrepro.interop import check_layout, model_logits
from gnnrepro.models.graphsage import GraphSAGE
from gnnrepro.models.rgat import RGAT
from gnnrepro.models.rgcn import RGCN
from gnnrepro.peers.pyg_model import PyGSAGE
from gnnrepro.pipeline.source import BatchSource
from gnnrepro.pipeline.spans import Span
from gnnrepro.progress import Progress
from gnnrepro.sampling.args import stream_seed
from gnnrepro.training.evaluate import accuracy, choose_eval_method, rank_and_world
from gnnrepro.training.optimizer import make_optimizer, optimizer_name
from gnnrepro.training.profiler import WAIT_ABOVE_WORK, StageTimer
from gnnrepro.training.resume import Checkpointing, Position, RunCheckpoints

__all__ = ["EpochStats", "EpochStart", "ModelShape", "TrainResult", "build_model",
           "data_parallel", "train", "train_epoch", "train_epochs"]


@dataclass
class EpochStats:
    """One epoch: wall time, throughput, memory peaks, stage times, mean training loss.

    peak_rss_mb is this (training) process's resident-set high-water mark since it started
    (resource.getrusage ru_maxrss; worker processes not included). peak_gpu_mb is
    torch.cuda.max_memory_allocated over the epoch (None on the CPU). stages is
    {stage: {"work_s", "exposed_s"}} (see gnnrepro.training.profiler), loader_wait_s the total
    time the loop waited for batches. val_acc is set on epochs picked by eval_every. timeline
    holds the spans (gnnrepro.pipeline.spans.Span as dicts, seconds since the epoch began) of
    the epoch's first `timeline_batches` batches: loader, workers and trainer.
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
    """What train() measured, with the parameters and environment that produced it, and the
    model's final parameters (`state`, on the CPU; not in to_dict)."""

    params: dict[str, Any]
    epochs: list[EpochStats]
    val_acc: float
    test_acc: float
    state: dict[str, torch.Tensor] = field(default_factory=dict, repr=False)
    env: dict[str, Any] = field(default_factory=environment)

    @property
    def losses(self) -> list[float]:
        return [e.loss for e in self.epochs]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict (str keys; str, int, float, bool, None, lists, dicts)."""
        return {k: v for k, v in asdict(self).items() if k != "state"}

    def summary(self) -> str:
        """A short labelled table for people: each epoch, then the last epoch's stages."""
        lines = [f"{'epoch':>5} {'time s':>8} {'seeds/s':>9} {'loss':>7} {'val acc':>8}"]
        for e in self.epochs:
            val = "-" if e.val_acc is None else f"{e.val_acc:.4f}"
            lines.append(f"{e.epoch:>5} {e.epoch_s:8.2f} {e.seeds_per_s:9.0f} {e.loss:7.4f} "
                         f"{val:>8}")
        lines.append(f"val acc {self.val_acc:.4f}, test acc {self.test_acc:.4f} "
                     f"({self.params.get('eval_methods', {}).get('test', 'evaluated')})")
        if self.epochs:
            last = self.epochs[-1]
            lines.append(f"last epoch's stages: {'work s':>8} {'waited s':>9}")
            over = []
            for stage, t in last.stages.items():
                exposed = t["exposed_s"]
                lines.append(f"{stage:>19}: {t['work_s']:8.3f} "
                             f"{'-' if exposed is None else f'{exposed:.3f}':>9}")
                if exposed is not None and exposed > t["work_s"]:
                    over.append(stage)
            if over:
                lines.append(f"({', '.join(over)}: {WAIT_ABOVE_WORK})")
        return "\n".join(lines)


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


#: The models train() builds, by name: (class, the name results record, the layout it takes):
#: ours (every pipeline but one), DGL's example model (the "dgl-native" pipeline, DGL's whole
#: stack) and PyG's (what a PyG user brings; on PyG's sparse adj_t, as the pyg peer runs it).
MODELS: dict[str, tuple[type[nn.Module], str, str]] = {
    "graphsage": (GraphSAGE, "GraphSAGE-mean", "blocks"),
    "dgl-sage": (DGLGraphSAGE, "DGL SAGEConv-mean", "dgl"),
    "pyg-sage": (PyGSAGE, "PyG SAGEConv-mean", "pyg-sparse"),
    "rgcn": (RGCN, "R-GCN (mean per relation)", "blocks"),  # typed datasets
    "rgat": (RGAT, "R-GAT (GAT per relation)", "blocks"),
}
#: The MODELS that take a typed dataset (TypedDataset), and only those.
TYPED_MODELS = ("rgcn", "rgat")


class ModelShape(Protocol):
    """What a model's shape is read from: a Dataset, or a partitioned graph's Partition."""

    @property
    def num_features(self) -> int: ...

    num_classes: int


def build_model(dataset: ModelShape, num_layers: int, hidden: int, dropout: float, seed: int,
                device: torch.device, architecture: str = "graphsage") -> nn.Module:
    """The model of `architecture` (a MODELS key) that a pipeline trains, for `dataset`'s
    features and classes: its weights (and the dropout stream that follows) come from
    torch.manual_seed(seed)."""
    if architecture not in MODELS:
        raise ValueError(f"architecture must be one of {', '.join(MODELS)}, "
                         f"got {architecture!r}")
    typed = isinstance(dataset, TypedDataset)
    if typed != (architecture in TYPED_MODELS):
        raise ValueError(f"architecture={architecture!r} does not take a "
                         f"{'typed' if typed else 'homogeneous'} dataset; "
                         f"{'typed' if typed else 'homogeneous'} ones take "
                         + ", ".join(m for m in MODELS if (m in TYPED_MODELS) == typed))
    torch.manual_seed(seed)
    model_class, _, _ = MODELS[architecture]
    if typed:
        return model_class.for_dataset(dataset, hidden=hidden, num_layers=num_layers,
                                       dropout=dropout).to(device)
    return model_class(dataset.num_features, hidden, dataset.num_classes, num_layers,
                       dropout).to(device)


def data_parallel(model: nn.Module, seed: int, device: torch.device) -> nn.Module:
    """`model` as this rank trains it: under a process group of several ranks wrapped in
    DistributedDataParallel (which broadcasts rank 0's weights), with this rank's own dropout
    stream (torch.manual_seed(stream_seed(seed, rank))); alone, `model` itself."""
    rank, world_size = rank_and_world()
    if world_size == 1:
        return model
    torch.manual_seed(stream_seed(seed, rank))
    return DistributedDataParallel(model,
                                   device_ids=[device] if device.type == "cuda" else None)


class EpochStart(NamedTuple):
    """Where an epoch begins: its first step, and the loss sum and seed count of the steps
    before it (a resumed epoch's; zeros for a whole one)."""

    step: int
    loss_sum: torch.Tensor
    num_seeds: int


#: Called after each optimizer step with the next step's index, whether the epoch's last step
#: was done, and the epoch's loss sum and seed count so far (train()'s checkpoints).
AfterStep = Callable[[int, bool, torch.Tensor, int], None]


def train_epoch(model: nn.Module, optimizer: torch.optim.Optimizer, loader: BatchSource,
                timer: StageTimer, device: torch.device, epoch: int,
                timeline_batches: int = 0,
                heartbeat: Callable[[], None] | None = None,
                layout: str = "blocks", epoch_start: EpochStart | None = None,
                after_step: AfterStep | None = None) -> EpochStats:
    """One epoch over `loader`'s batches (cross-entropy, one optimizer step per batch), timed
    stage by stage by `timer`; returns its EpochStats (val_acc unset). `model` may be wrapped
    (e.g. in DistributedDataParallel): it is only called and trained, on its batches in
    `layout` (gnnrepro.interop.LAYOUTS). `heartbeat` is called after every step (a supervised
    child's proof of progress), then `after_step`. `epoch_start`: a resumed epoch's first step
    and what came before it (the loader must already be set to begin there)."""
    model.train()
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    step = 0 if epoch_start is None else epoch_start.step
    # summed on device: no sync per step
    loss_sum = (torch.zeros((), device=device) if epoch_start is None
                else epoch_start.loss_sum.to(device).clone())
    seeds_before = 0 if epoch_start is None else epoch_start.num_seeds
    num_seeds = seeds_before
    num_steps = len(loader)
    start = time.perf_counter()
    batches = iter(loader)
    with Progress(f"epoch {epoch}", len(loader), "batches", done=step) as bar:
        while True:
            try:
                mb = timer.next_batch(batches)
            except StopIteration:
                break
            with timer.stage("forward"):
                loss = nn.functional.cross_entropy(model_logits(model, mb, layout), mb.y)
            with timer.stage("backward"):
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
            loss_sum += loss.detach() * mb.y.numel()
            num_seeds += mb.y.numel()
            del mb  # frees the batch's staging slot before the next one is prepared
            bar.update()
            step += 1
            if heartbeat is not None:
                heartbeat()
            if after_step is not None:
                after_step(step, step == num_steps, loss_sum, num_seeds)
    stages = timer.finish_epoch(loader.work_seconds())  # on CUDA: resolves the epoch's events
    epoch_s = time.perf_counter() - start
    return EpochStats(
        epoch=epoch, epoch_s=epoch_s,
        seeds_per_s=(num_seeds - seeds_before) / epoch_s,
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


#: What a checkpoint must share with the run that resumes from it (train()'s params).
_IDENTITY = ("dataset", "dataset_params", "model", "layout", "num_layers", "hidden", "dropout",
             "fanouts", "batch_size", "lr", "seed", "world_size", "optimizer", "loss")


def _start_loader_at(loader: BatchSource, epoch: int, step: int) -> None:
    """Set `loader` to yield epoch `epoch` from batch `step` next (a resumed run)."""
    start_at = getattr(loader, "start_at", None)
    if start_at is None:
        raise TypeError(f"resuming needs a loader that can begin at a step (start_at(epoch, "
                        f"step), as gnnrepro's Loader has); {type(loader).__name__} has none")
    start_at(epoch, step)


def train_epochs(trained: nn.Module, model: nn.Module, optimizer: torch.optim.Optimizer,
                 loader: BatchSource, timer: StageTimer, device: torch.device, epochs: int, *,
                 identity: dict[str, Any], checkpointing: Checkpointing | None = None,
                 timeline_batches: int = 0, heartbeat: Callable[[], None] | None = None,
                 layout: str = "blocks",
                 after_epoch: Callable[[EpochStats], None] | None = None
                 ) -> tuple[list[EpochStats], dict[str, Any] | None]:
    """Epochs 0 .. epochs - 1 of train_epoch, `after_epoch` after each; with `checkpointing`,
    checkpoints of `model` (unwrapped; `trained` is what trains it) that belong to `identity`,
    and with its resume the run goes on from the newest valid one (gnnrepro.training.resume).
    Returns the epochs' statistics and, with checkpointing, what the checkpoints did and cost."""
    if checkpointing is not None and not isinstance(checkpointing, Checkpointing):
        raise TypeError(f"checkpointing must be a gnnrepro.training.Checkpointing, got "
                        f"{type(checkpointing).__name__}")
    history: list[EpochStats] = []
    checkpoints, restored = None, None
    first_epoch, start, global_step = 0, None, 0
    if checkpointing is not None:
        rank, world_size = rank_and_world()
        checkpoints = RunCheckpoints(checkpointing, identity, model, optimizer, device, rank,
                                     world_size)
        restored = checkpoints.restore()
    if restored is not None:
        history = [EpochStats(**e) for e in restored.history]
        first_epoch, global_step = restored.position.epoch, restored.position.global_step
        start = EpochStart(restored.position.step, restored.loss_sum, restored.num_seeds)
        _start_loader_at(loader, first_epoch, start.step)
    with checkpoints if checkpoints is not None else contextlib.nullcontext():
        for epoch in range(first_epoch, epochs):
            after_step = None
            if checkpoints is not None:
                def after_step(step: int, last: bool, loss_sum: torch.Tensor, num_seeds: int,
                               epoch: int = epoch) -> None:
                    nonlocal global_step
                    global_step += 1
                    checkpoints.after_step(Position(epoch, step, global_step), last, loss_sum,
                                           num_seeds, history)
            history.append(train_epoch(trained, optimizer, loader, timer, device, epoch,
                                       timeline_batches, heartbeat, layout, start, after_step))
            start = None
            if after_epoch is not None:
                after_epoch(history[-1])
    if checkpoints is None:
        return history, None
    return history, {"directory": str(checkpointing.directory), "every": checkpointing.every,
                     "keep": checkpointing.keep,
                     "resumed_from": None if restored is None else str(restored.path),
                     "resumed_at_step": 0 if restored is None else restored.position.global_step,
                     **checkpoints.report()}


def train(dataset: Dataset | TypedDataset, loader: BatchSource, evaluator: Any, *,
          epochs: int = SETTINGS["epochs"].default, lr: float = SETTINGS["lr"].default,
          hidden: int = SETTINGS["hidden"].default,
          dropout: float = SETTINGS["dropout"].default, seed: int = SETTINGS["seed"].default,
          eval_every: int | None = None,
          eval_batch_size: int = SETTINGS["eval_batch_size"].default,
          eval_method: str = SETTINGS["eval_method"].default, eval_ids: int | None = None,
          timeline_batches: int = 0,
          heartbeat: Callable[[], None] | None = None,
          architecture: str = "graphsage", model: nn.Module | None = None,
          layout: str = "blocks", checkpointing: Checkpointing | None = None) -> TrainResult:
    """Train GraphSAGE (mean aggregator, one layer per fanout of `evaluator`; ours, or with
    architecture="dgl-sage" DGL's) with Adam and cross-entropy on the batches of `loader`, on
    the loader's device; return a TrainResult.

    `model`: train this nn.Module instead (moved to the loader's device; hidden, dropout and
    architecture then do not apply), called on each batch in `layout`: "blocks" (our
    Blocks), "dgl" (DGL blocks: a model of dgl.nn layers), "pyg" (x, edge_index: a model of
    torch_geometric.nn layers) or "pyg-sparse" (x, adj_t); gnnrepro.interop. Such a model is
    evaluated layer-wise where it exposes its layers (a `forward_layer` method:
    gnnrepro.interop.exposes_layers) and `eval_method` allows, otherwise by sampled
    mini-batches; params["eval_methods"] records which.

    `evaluator` (FusedSampler API: sample, fanouts) samples the blocks of the mini-batch
    evaluation: every `eval_every` epochs on the val ids, and at the end on the val and test
    ids (`eval_batch_size` seeds per batch), or, by `eval_method`, layer-wise over the
    evaluator's graph (gnnrepro.training.evaluate; params["eval_methods"] says which method
    each split used); `eval_ids`: at most that many ids of each split, a subset drawn with
    `seed` (gnnrepro.eval_subset). Each epoch keeps the timeline of its first
    `timeline_batches` batches. The loader is not closed (its owner closes it). Under a
    torch.distributed process group of several ranks this is one rank's part of data-parallel
    training (see the module doc); the accuracies are then the whole group's.

    `checkpointing` (gnnrepro.training.resume.Checkpointing): write checkpoints as it says
    and, with its `resume`, go on from the newest valid one, to the same final weights,
    losses and accuracies as an uninterrupted run; SIGINT / SIGTERM then stop after the
    current step with a checkpoint written (TrainingStopped). Bad arguments raise TypeError or
    ValueError naming the argument.
    """
    if not isinstance(dataset, (Dataset, TypedDataset)):
        raise TypeError(f"dataset must be a gnnrepro Dataset or TypedDataset, got "
                        f"{type(dataset).__name__}")
    if not isinstance(loader, BatchSource):
        raise TypeError(f"loader must be a BatchSource (iter, len, device, batch_size, "
                        f"work_seconds, spans, close, in_process), got {type(loader).__name__}")
    fanouts = getattr(evaluator, "fanouts", None)
    if not callable(getattr(evaluator, "sample", None)) or not fanouts:
        raise TypeError(f"evaluator must have a sample(seeds, batch_id) method and non-empty "
                        f"fanouts (the FusedSampler API), got {type(evaluator).__name__}")
    epochs, lr, hidden, dropout, seed, eval_batch_size, eval_method = (
        validate(name, value) for name, value in (
            ("epochs", epochs), ("lr", lr), ("hidden", hidden), ("dropout", dropout),
            ("seed", seed), ("eval_batch_size", eval_batch_size),
            ("eval_method", eval_method)))
    eval_ids = validate("eval_ids", eval_ids)
    if eval_every is not None:
        check_int("eval_every", eval_every, 1)
    check_int("timeline_batches", timeline_batches, 0)
    device = loader.device
    world_size = rank_and_world()[1]
    layout = check_layout(layout)
    if model is None:
        model = build_model(dataset, len(fanouts), hidden, dropout, seed, device, architecture)
        _, model_name, built_layout = MODELS[architecture]
        if layout not in ("blocks", built_layout):
            raise ValueError(f"layout={layout!r} is for a caller's model (model=...); the "
                             f"built {model_name} takes {built_layout!r}")
        layout = built_layout  # the default "blocks" means the built model's own
    elif not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    elif architecture != "graphsage":
        raise ValueError(f"give either model or architecture, not both (architecture="
                         f"{architecture!r})")
    else:
        torch.manual_seed(seed)  # the dropout stream, as for the models train() builds
        model = model.to(device)
        model_name = f"{type(model).__name__} (the caller's, layout {layout!r})"
    trained = data_parallel(model, seed, device)
    optimizer = make_optimizer(trained, lr)
    timer = StageTimer(device, in_process=loader.in_process)
    params = {"dataset": dataset.name, "dataset_params": dict(dataset.params),
              "sampler": type(getattr(loader, "sampler", loader)).__name__,
              "eval_sampler": type(evaluator).__name__, "loader": repr(loader),
              "fanouts": list(fanouts), "device": str(device), "epochs": epochs,
              "batch_size": loader.batch_size, "lr": lr, "hidden": hidden, "dropout": dropout,
              "workers": getattr(loader, "workers", None),
              "streams": getattr(loader, "streams", None),
              "prefetch": getattr(loader, "prefetch", None), "seed": seed,
              "eval_every": eval_every, "eval_batch_size": eval_batch_size,
              "eval_method": eval_method, "eval_methods": {}, "eval_ids": eval_ids,
              "eval_counts": {},
              "optimizer": optimizer_name(optimizer), "loss": "cross_entropy",
              "model": model_name,
              "layout": layout,
              "num_layers": len(fanouts), "timeline_batches": timeline_batches,
              "world_size": world_size}

    def score(split: str) -> float:
        ids = eval_subset(getattr(dataset, f"{split}_idx"), eval_ids, seed)
        method = choose_eval_method(eval_method, model, evaluator, ids.numel())
        params["eval_methods"][split] = method
        params["eval_counts"][split] = ids.numel()
        return accuracy(model, dataset, evaluator, ids, device, eval_batch_size, heartbeat,
                        method, getattr(loader, "store", None), layout)

    def after_epoch(stats: EpochStats) -> None:
        if eval_every is not None and (stats.epoch + 1) % eval_every == 0:
            stats.val_acc = score("val")

    history, report = train_epochs(
        trained, model, optimizer, loader, timer, device, epochs,
        identity={key: params[key] for key in _IDENTITY}, checkpointing=checkpointing,
        timeline_batches=timeline_batches, heartbeat=heartbeat, layout=layout,
        after_epoch=after_epoch)
    if report is not None:
        params["checkpoint"] = report
    val_acc = history[-1].val_acc  # set if eval_every divides epochs: same model, same batches
    if val_acc is None:
        val_acc = score("val")
    return TrainResult(params, history, val_acc, score("test"),
                       state={k: v.detach().cpu() for k, v in model.state_dict().items()})
