"""The benchmark runs behind the experiments, each stored by its exact arguments and code
(Store.memo), so experiments asking for the same run share one measurement."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from gnnrepro.baselines.dgl_import import dgl_missing
from gnnrepro.bench import end_to_end as end_to_end_bench
from gnnrepro.bench import loader as loader_bench
from gnnrepro.bench import sampling_speed as sampling_bench
from gnnrepro.config import PIPELINES, TrainConfig
from gnnrepro.experiments.params import Params
from gnnrepro.experiments.store import Store

__all__ = ["LADDER", "LADDER_KEY", "LOADERS", "end_to_end_run", "ladder", "ladder_order",
           "loader_run",
           "on_this_machine", "result_key", "sampling_run", "speedups_over", "train_config"]

#: The end-to-end ablation ladder (01 and 03 share this run): DGL's pipeline, fused sampling,
#: fused sampling with pinned multi-stream feature loading; and DGL's whole stack (its
#: pipeline feeding its own model) for the stack-against-stack comparison.
LADDER = ("dgl", "dgl-native", "fused", "fused+pinned")
#: The loaders of 03's pipeline-alone run: dgl-native's loader is dgl's.
LOADERS = ("dgl", "fused", "fused+pinned")
#: The parameters the shared training run of 01 and 03 (`ladder`) depends on.
LADDER_KEY = ("dataset", "scale", "root", "fanouts", "batch_size", "epochs", "device",
              "sampler_device", "feature_source", "feature_store", "threads", "workers",
              "worker_kind", "streams", "seed", "timeline_batches", "train_repeats",
              "target_acc")


def on_this_machine(names: Sequence[str], baseline: str | None = "reference"
                    ) -> tuple[tuple[str, ...], dict[str, str]]:
    """The pipelines or samplers of `names` that run here, and those that do not with the
    reason. Without DGL (the lent GPU machines have none) DGL's are not run and `baseline`, our
    unfused pipeline or sampler in plain torch, goes first in their place, so that every ratio
    is against it and says so (speedups_over)."""
    reason = dgl_missing()
    if reason is None:
        return tuple(names), {}
    kept = [name for name in names if not name.startswith("dgl")]
    if baseline is not None and baseline not in kept:
        kept.insert(0, baseline)
    return tuple(kept), {name: reason for name in names if name.startswith("dgl")}


def ladder_order(names: Iterable[str]) -> list[str]:
    """`names` in the ladder's order, baseline first, anything else (peers) after: a stored
    result's keys come back sorted by name."""
    order = {name: i for i, name in enumerate(PIPELINES)}
    return sorted(names, key=lambda name: order.get(name, len(order)))


def speedups_over(epoch_s: dict[str, float]) -> tuple[str, dict[str, float]]:
    """The baseline of a comparison ("dgl" where it ran, else "reference") and every
    {name: baseline's time / name's time}; ("", {}) when neither ran."""
    for baseline in ("dgl", "reference"):
        if baseline in epoch_s:
            return baseline, {name: epoch_s[baseline] / s for name, s in epoch_s.items()}
    return "", {}


def result_key(params: Params, names: Sequence[str]) -> dict[str, Any]:
    """The store key of an experiment's result: `params`' values of `names`, and whether DGL
    was missing (then the result holds other rows)."""
    return params.key(names) | ({"dgl": "not run"} if dgl_missing() else {})


def train_config(params: Params, **overrides: Any) -> TrainConfig:
    """The TrainConfig of `params` (their settings, config defaults for the rest), with
    `overrides` (batch_size, fanouts, workers, streams, sampler_device, ...)."""
    settings = {"fanouts": tuple(params.fanouts), "batch_size": params.batch_size,
                "epochs": params.epochs, "device": params.device,
                "sampler_device": params.sampler_device,
                "feature_source": params.feature_source,
                "feature_store": params.feature_store, "threads": params.threads,
                "workers": params.workers, "worker_kind": params.worker_kind,
                "streams": params.streams, "seed": params.seed}
    return TrainConfig(**(settings | overrides))


def ladder(params: Params, store: Store) -> dict:
    """The training run 01_stage_breakdown and 03_end_to_end share: every LADDER pipeline that
    runs here, `params.train_repeats` rounds, the timeline of `params.timeline_batches`
    batches."""
    return end_to_end_run(params, store, on_this_machine(LADDER)[0],
                          timeline_batches=params.timeline_batches,
                          repeats=params.train_repeats, target_acc=params.target_acc)


def end_to_end_run(params: Params, store: Store, pipelines: Sequence[str], *,
                   timeline_batches: int = 0, repeats: int = 1,
                   target_acc: float | None = None, model: str | None = None,
                   **overrides: Any) -> dict:
    """gnnrepro.bench.end_to_end.measure of `pipelines` with `params`' settings, `overrides`
    replacing any TrainConfig setting, `model` the model every pipeline trains (None: each
    pipeline's own); stored by its arguments."""
    config = train_config(params, **overrides)
    kwargs = {"dataset": params.dataset, "scale": params.scale, "root": params.root,
              "pipelines": list(pipelines), "repeats": repeats,
              "timeline_batches": timeline_batches}
    # Each absent when None: runs stored before it keep their keys.
    if target_acc is not None:
        kwargs["target_acc"] = target_acc
    if model is not None:
        kwargs["model"] = model
    return store.memo("end-to-end", kwargs | {"config": config.to_dict()},
                      lambda: end_to_end_bench.measure(config, **kwargs), params.force)


def sampling_run(params: Params, store: Store, dataset: str,
                 samplers: Sequence[str] = sampling_bench.SAMPLERS, **extra: Any) -> dict:
    """gnnrepro.bench.sampling_speed.measure of `samplers` (default: all) on `dataset` with
    `params`' settings and `extra` arguments; stored by its arguments."""
    kwargs = {**params.sampling_kwargs(), "dataset": dataset, "samplers": list(samplers),
              "peers": list(params.peers), **extra}
    return store.memo("sampling", kwargs, lambda: sampling_bench.measure(**kwargs),
                      params.force)


def loader_run(params: Params, store: Store, pipelines: Sequence[str] | None = None) -> dict:
    """gnnrepro.bench.loader.measure of `pipelines` (default: LOADERS that run here) with
    `params`' settings (`loader_rounds` timed epochs each, `loader_step_ms` stand-in step);
    stored."""
    pipelines = on_this_machine(LOADERS)[0] if pipelines is None else pipelines
    config = train_config(params)
    kwargs = {"dataset": params.dataset, "scale": params.scale, "root": params.root,
              "pipelines": list(pipelines), "rounds": params.loader_rounds,
              "step_ms": params.loader_step_ms,
              "peers": list(params.peers) if not params.loader_step_ms else []}
    return store.memo("loader", kwargs | {"config": config.to_dict()},
                      lambda: loader_bench.measure(config, **kwargs), params.force)
