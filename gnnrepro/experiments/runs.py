"""The benchmark runs behind the experiments, each stored by its exact arguments (Store.memo),
so experiments asking for the same run share one measurement."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gnnrepro.bench import sampling as sampling_bench
from gnnrepro.experiments.params import Params
from gnnrepro.experiments.store import Store

__all__ = ["LADDER", "sampling", "train"]

#: The end-to-end ablation ladder (01 and 03 share this run): DGL's pipeline, fused sampling,
#: fused sampling with pinned multi-stream feature loading.
LADDER = ("dgl", "fused", "fused+pinned")
#: The parameters the shared training run of 01 and 03 (`ladder`) depends on.
LADDER_KEY = ("dataset", "scale", "root", "fanouts", "batch_size", "epochs", "device", "threads",
              "workers", "streams", "seed", "timeline_batches", "train_repeats")


def ladder(params: Params, store: Store) -> dict:
    """The training run 01_stage_breakdown and 03_end_to_end share: every LADDER pipeline,
    `params.train_repeats` rounds, the timeline of `params.timeline_batches` batches."""
    return train(params, store, LADDER, timeline_batches=params.timeline_batches,
                 repeats=params.train_repeats)


def train(params: Params, store: Store, pipelines: Sequence[str], **overrides: Any) -> dict:
    """gnnrepro.bench.train.run with `params`' settings, `overrides` replacing any of them
    (batch_size, fanouts, workers, streams, timeline_batches, repeats, ...); stored by its
    arguments."""
    # Imported on use: the sampling and scaling notebooks do not need the training benchmark.
    import gnnrepro.bench.train as train_bench
    kwargs = {"dataset": params.dataset, "scale": params.scale, "root": params.root,
              "fanouts": list(params.fanouts), "batch_size": params.batch_size,
              "epochs": params.epochs, "pipelines": list(pipelines), "threads": params.threads,
              "workers": params.workers, "streams": params.streams, "seed": params.seed,
              "device": params.device, "timeline_batches": 0, "repeats": 1} | overrides
    return store.memo("train", kwargs, lambda: train_bench.run(**kwargs), params.force)


def sampling(params: Params, store: Store, dataset: str) -> dict:
    """gnnrepro.bench.sampling.run of every sampler on `dataset` with `params`' settings;
    stored by its arguments."""
    kwargs = {"dataset": dataset, "scale": params.scale, "root": params.root,
              "fanouts": list(params.fanouts), "batch_size": params.batch_size,
              "batches": params.sampling_batches, "threads": params.threads,
              "repeats": params.sampling_repeats, "samplers": list(sampling_bench.SAMPLERS),
              "seed": params.seed}
    return store.memo("sampling", kwargs, lambda: sampling_bench.run(**kwargs), params.force)
