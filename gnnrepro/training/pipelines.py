"""The four training pipelines the paper compares, by name, and the functions that run one.

* "dgl": DGL 2.1's DataLoader + NeighborSampler with DGL's own feature slicing (the baseline).
* "dgl-native": DGL's whole stack as its users run it: the same DataLoader feeding DGL's own
  model (DGL's node-classification example: dgl.nn.SAGEConv('mean') layers, nn.Dropout) on
  DGL's blocks, unconverted. Its weights start from DGL's initialisation, not ours.
* "reference": our unfused torch sampler (sample to COO, then relabel), serial.
* "fused": our fused sampler, serial: no workers, no side streams, nothing ahead.
* "fused+pinned": the paper's full method: fused sampler, W workers sampling and gathering
  into staging slots P batches ahead, and with CUDA those slots pinned and the host-to-device
  copies on S side streams. On a CPU-only machine nothing is pinned or copied: it is the fused
  sampler with W workers preparing P batches ahead. The workers are threads of the training
  process, or with worker_kind='process' the paper's worker processes.

Placement (TrainConfig.sampler_device, .feature_source; gnnrepro.config) applies to the fused
pipelines: where the sampler reads the graph and how rows reach the GPU. Weighted or masked
sampling (`weights=`, FusedSampler's) runs on the fused pipelines, sampling with replacement
(`replace=True`) on ours; the others refuse them. All but "dgl-native" train the
identical model from the same initial weights on batches of the same size and are evaluated
with the same fused sampler (seed `seed`), so their accuracies differ only through the batches
they trained on.
"""
from __future__ import annotations

import contextlib
import copy
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from gnnrepro.baselines.dgl_loader import DGLLoader
from gnnrepro.config import (TrainConfig, check_placement, resolve_device, resolve_prefetch,
                             resolve_threads, resolve_workers)
from gnnrepro.datasets.dataset import Dataset
from gnnrepro.datasets.typed_dataset import TypedDataset
from gnnrepro.features.factory import open_feature_store
from gnnrepro.pipeline.loader import Loader
from gnnrepro.pipeline.plan import BatchPlan
from gnnrepro.pipeline.source import BatchSource
from gnnrepro.sampling import FusedSampler, ReferenceSampler
from gnnrepro.sampling.timed_seeds import TimedSeeds
from gnnrepro.training.loop import TrainResult, train
from gnnrepro.training.resume import Checkpointing

__all__ = ["ARCHITECTURES", "make_evaluator", "make_loader", "run_training", "train_pipeline",
           "worker_threads"]

#: The model a pipeline trains where it is not ours (gnnrepro.training.loop.MODELS).
ARCHITECTURES = {"dgl-native": "dgl-sage"}


def _local_ranks(world_size: int) -> int:
    """Ranks on this machine (torchrun's LOCAL_WORLD_SIZE; all of them without torchrun):
    they share its cores and workers."""
    return int(os.environ.get("LOCAL_WORLD_SIZE", world_size))


def _sampler_graph_device(dataset: Dataset, sampler_device: str,
                          device: torch.device) -> tuple[Any, torch.device]:
    """The graph the sampler reads and the device it samples on, for `sampler_device`."""
    graph = dataset.graph
    if sampler_device == "cuda":
        return graph.to(device), device
    if sampler_device == "uva":
        graph.pin_memory_()  # in place: the GPU reads the host arrays over UVA
        return graph, device
    return graph, torch.device("cpu")


def worker_threads(device: torch.device, workers: int, threads: int) -> int:
    """Intra-op threads of each sampling worker. With CUDA the trainer thread mostly waits on
    the GPU, so the workers share the rank's other cores: one thread each would leave a
    16-core machine's workers slower than the serial pipeline's 16 threads (measured on an
    H100 machine: benchmarks/NOTES.md). On the CPU the model step needs the cores: 1."""
    if device.type != "cuda" or workers == 0:
        return 1
    return max(1, (threads - 1) // workers)


def make_evaluator(dataset: Dataset, config: TrainConfig, device: torch.device | None = None,
                   replace: bool = False) -> FusedSampler:
    """The fused sampler every pipeline is evaluated with, placed by config.sampler_device,
    with `replace` as the pipeline samples."""
    device = torch.device(resolve_device(config.device)) if device is None else device
    graph, where = _sampler_graph_device(dataset, config.sampler_device, device)
    return FusedSampler(graph, list(config.fanouts), replace=replace, seed=config.seed,
                        device=where)


def make_loader(dataset: Dataset, config: TrainConfig, *, rank: int = 0,
                world_size: int = 1, shuffle: bool = True, drop_last: bool = False,
                weights: object = None, replace: bool = False,
                temporal: Mapping[str, Any] | None = None,
                seed_time: torch.Tensor | None = None,
                relation_fanouts: Sequence[Mapping] | None = None) -> BatchSource:
    """The batch source of `config.pipeline` on `config.device` (resolved); workers (of
    config.worker_kind; None: resolve_workers), streams and prefetch apply to "fused+pinned"
    only (the serial pipelines have none), placement to the fused pipelines. `rank` and
    `world_size` select a data-parallel rank's share of each epoch ("dgl": DGL's own
    use_ddp=True split). `shuffle`: visit the ids in an order seeded by (seed, epoch), else in
    the given order; `drop_last`: leave out a last partial batch. `weights` (FusedSampler's:
    per edge id of dataset.graph, a bool mask, or {relation: weights}; tensors, so an argument
    rather than a setting) and `replace` are how the sampler picks neighbours; `temporal`:
    FusedSampler's further arguments of temporal or disjoint sampling (times, node_time,
    temporal_strategy, time_window, disjoint, edge_ids), fused pipelines;
    `seed_time`: one time per entry of dataset.train_idx (which may then repeat a node), each
    entry sampled at its own (gnnrepro.sampling.timed_seeds; needs `temporal` times);
    `relation_fanouts`: a typed dataset's fanouts per layer {relation: fanout} (FusedSampler's),
    in place of config.fanouts (fused pipelines). Raises
    ValueError naming the setting for a placement this machine cannot run, or the pipeline
    where it cannot sample so."""
    device = torch.device(resolve_device(config.device))
    fanouts = list(config.fanouts if relation_fanouts is None else relation_fanouts)
    ranks = {"rank": rank, "world_size": world_size, "seed": config.seed,
             "shuffle": shuffle, "drop_last": drop_last}
    if ((temporal or seed_time is not None or relation_fanouts is not None)
            and config.pipeline not in ("fused", "fused+pinned")):
        raise ValueError(f"pipeline={config.pipeline!r} has no temporal, disjoint or "
                         "per-relation sampling: it needs pipeline 'fused' or 'fused+pinned'")
    if config.pipeline in ("dgl", "dgl-native"):
        if weights is not None or replace:
            raise ValueError(f"pipeline={config.pipeline!r} samples uniformly without "
                             f"replacement (DGL's NeighborSampler as the baseline runs it): "
                             f"weights and replace need pipeline 'fused' or 'fused+pinned'")
        if config.feature_store != "memory":
            raise ValueError(f"pipeline={config.pipeline!r} slices the features itself, from "
                             f"memory: feature_store must be 'memory', got "
                             f"{config.feature_store!r}")
        return DGLLoader(dataset, fanouts, device, config.batch_size,
                         native_blocks=config.pipeline == "dgl-native", **ranks)
    serial = config.pipeline in ("reference", "fused")
    local_ranks = _local_ranks(world_size)
    workers = 0 if serial else resolve_workers(config.workers, str(device),
                                               config.sampler_device, local_ranks,
                                               config.feature_store)
    if config.pipeline == "reference":
        if isinstance(dataset, TypedDataset):
            raise ValueError("pipeline='reference' (the plain-torch sampler) samples "
                             "homogeneous graphs; a typed dataset takes 'dgl', 'fused' or "
                             "'fused+pinned'")
        if (config.sampler_device, config.feature_source) != ("cpu", "pinned"):
            raise ValueError("pipeline='reference' samples on the CPU with pinned feature "
                             "staging only: use sampler_device='cpu', feature_source='pinned'")
        if weights is not None:
            raise ValueError("pipeline='reference' (the plain-torch sampler) samples "
                             "uniformly: weights need pipeline 'fused' or 'fused+pinned'")
        sampler: Any = ReferenceSampler(dataset.graph, fanouts, replace=replace,
                                        seed=config.seed)
    else:
        check_placement(str(device), config.sampler_device, config.feature_source, workers)
        graph, where = _sampler_graph_device(dataset, config.sampler_device, device)
        sampler = FusedSampler(graph, fanouts, replace=replace, seed=config.seed,
                               device=where, weights=weights, **(temporal or {}))
    plan = None
    if seed_time is not None:  # batch items are (node, time) pairs: positions into them
        sampler = TimedSeeds(sampler, dataset.train_idx, seed_time,
                             getattr(dataset, "target", None))
        plan = BatchPlan(dataset.train_idx.numel(), config.batch_size, **ranks)
    return Loader(dataset, sampler, device, config.batch_size, workers=workers,
                  worker_kind=config.worker_kind,
                  worker_threads=worker_threads(device, workers,
                                                resolve_threads(config.threads, local_ranks)),
                  streams=1 if serial else config.streams,
                  prefetch=1 if serial else resolve_prefetch(config.prefetch, workers),
                  feature_source=config.feature_source,
                  feature_store=open_feature_store(
                      config.feature_store, dataset, pin=False,
                      share=workers > 0 and config.worker_kind == "process"),
                  timeout_s=config.timeout_s, plan=plan, **ranks)


def run_training(dataset: Dataset, config: TrainConfig, *, rank: int = 0, world_size: int = 1,
                 eval_every: int | None = None, timeline_batches: int = 0,
                 heartbeat: Callable[[], None] | None = None,
                 before_close: Callable[[BatchSource], dict[str, Any]] | None = None,
                 architecture: str | None = None,
                 checkpointing: Checkpointing | None = None, weights: object = None,
                 replace: bool = False) -> TrainResult:
    """Train `config` on `dataset` (this rank's share when world_size > 1): set the torch
    threads (resolve_threads), build the loader and the evaluator, train, close the loader.
    `architecture` (gnnrepro.training.loop.MODELS) is the model; None: the pipeline's own
    (ours, or DGL's for "dgl-native"). `checkpointing`: train()'s checkpoints and resume.
    `weights` and `replace`: make_loader's; the evaluator samples as the loader does (so a
    weighted run is evaluated sampled, never layer-wise: choose_eval_method).

    `before_close(loader)` runs after training while the loader's workers still run (where
    memory is measured); what it returns is kept in result.params["before_close"].
    """
    local_ranks = _local_ranks(world_size)
    threads = resolve_threads(config.threads, local_ranks)
    torch.set_num_threads(threads)
    loader = make_loader(dataset, config, rank=rank, world_size=world_size, weights=weights,
                         replace=replace)
    with contextlib.closing(loader):
        sampler = getattr(loader, "sampler", None)
        if isinstance(sampler, FusedSampler):
            # a node map of its own; the loader's placement and weights without a second
            # graph copy or weight table
            evaluator = copy.copy(sampler)
        else:
            evaluator = make_evaluator(dataset, config, loader.device, replace=replace)
        result = train(dataset, loader, evaluator, epochs=config.epochs, lr=config.lr,
                       hidden=config.hidden, dropout=config.dropout, seed=config.seed,
                       eval_every=eval_every, eval_batch_size=config.eval_batch_size,
                       eval_method=config.eval_method, eval_ids=config.eval_ids,
                       timeline_batches=timeline_batches, heartbeat=heartbeat,
                       architecture=architecture or ARCHITECTURES.get(
                           config.pipeline,
                           "rgcn" if isinstance(dataset, TypedDataset) else "graphsage"),
                       checkpointing=checkpointing)
        if before_close is not None:
            result.params["before_close"] = before_close(loader)
    result.params.update(pipeline=config.pipeline, config=config.to_dict(), threads=threads,
                         workers=getattr(loader, "workers", 0),
                         prefetch=getattr(loader, "prefetch", None),
                         weighted=weights is not None, replace=replace)
    return result


def train_pipeline(name: str, dataset: Dataset, fanouts: Sequence[int], *,
                   eval_every: int | None = None, timeline_batches: int = 0,
                   checkpointing: Checkpointing | None = None, weights: object = None,
                   replace: bool = False, **settings: Any) -> TrainResult:
    """Train the named pipeline (see the module doc) with `fanouts` and any other TrainConfig
    settings (epochs, batch_size, workers, device, sampler_device, ...); each is checked by
    its setting (gnnrepro.config). `checkpointing`: train()'s checkpoints and resume;
    `weights` and `replace`: make_loader's."""
    config = TrainConfig(pipeline=name, fanouts=tuple(fanouts), **settings)
    return run_training(dataset, config, eval_every=eval_every,
                        timeline_batches=timeline_batches, checkpointing=checkpointing,
                        weights=weights, replace=replace)
