"""Projected k-rank epochs beside measured ones (issue 49 item 4): the parts
(gnnrepro.distributed.scaling_parts), the projection (gnnrepro.distributed.projection), and the
runs of `bench scaling` at every k this machine can run, with the projection's error."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gnnrepro.bench import scaling
from gnnrepro.config import TrainConfig
from gnnrepro.datasets import load_scaled
from gnnrepro.distributed.launch import unavailable
from gnnrepro.distributed.projection import GPU_LINK, METHOD, projections
from gnnrepro.distributed.scaling_parts import measure_parts
from gnnrepro.env import environment

__all__ = ["scaling_projection", "validate_projection"]


def scaling_projection(dataset_name: str, scale: float, ranks: Sequence[int],
                       pipelines: Sequence[str], *, device: str = "cpu",
                       batch_size: int = 1024, per_rank_batch: bool = False,
                       batches: int = 10, epochs: int = 2, eval_ids: int | None = 2048,
                       seed: int = 0) -> dict[str, Any]:
    """Measure the parts at every k in `ranks` and project every pipeline's epoch: rows
    [{pipeline, world_size, epoch_s (projected), steps, step_s, host_s, copy_s, device_s,
    allreduce_s, bound_by, measured_epoch_s, error}], the last two None until
    validate_projection (which trains `epochs` epochs evaluating `eval_ids` ids)."""
    dataset = load_scaled(dataset_name, None, scale)
    config = TrainConfig(batch_size=batch_size, device=device, epochs=epochs, seed=seed,
                         eval_ids=eval_ids)
    parts = measure_parts(dataset, ranks, pipelines, fanouts=config.fanouts,
                          batch_size=batch_size, per_rank_batch=per_rank_batch,
                          hidden=config.hidden, lr=config.lr, seed=seed, batches=batches,
                          device=device)
    num_train = dataset.train_idx.numel()
    rows = projections(parts, num_train)
    for row in rows:
        row.update(measured_epoch_s=None, error=None)
    cuda = "gpu" in parts
    return {
        "benchmark": "scaling-projection",
        "params": {"dataset": dataset_name, "scale": scale, "ranks": list(ranks),
                   "pipelines": list(pipelines), "device": device, "batch_size": batch_size,
                   "batch_size_is": "per rank" if per_rank_batch else
                   "global (each rank: ceil(batch_size / world_size))",
                   "batches": batches, "epochs": epochs,
                   "eval_ids": eval_ids, "seed": seed, "fanouts": list(config.fanouts),
                   "hidden": config.hidden, "lr": config.lr},
        "method": METHOD,
        "ranks_are": "GPUs (projected from one GPU and the host's k ranks at once)" if cuda
        else "CPU processes",
        "interconnect": ({"name": GPU_LINK.name, "bus_bytes_per_s": GPU_LINK.bus_bytes_per_s,
                          "step_latency_s": GPU_LINK.step_latency_s, "stated": True}
                         if cuda else {"name": "gloo between CPU processes", "stated": False}),
        "num_train_ids": num_train,
        "parts": parts,
        "rows": rows,
        "validation": None,
        "dataset": dataset.summary(),
        "env": environment(),
    }


def validate_projection(result: dict[str, Any]) -> dict[str, Any]:
    """Train (bench scaling, the result's settings) at every k of `result` this machine can
    run, and write each measured epoch and the projection's error (projected / measured - 1)
    beside its row; `result` updated in place and returned."""
    params = result["params"]
    config = TrainConfig(batch_size=params["batch_size"], device=params["device"],
                         epochs=params["epochs"], seed=params["seed"],
                         eval_ids=params["eval_ids"])
    runnable = [k for k in params["ranks"] if unavailable(k, params["device"]) is None]
    per_rank = params["batch_size_is"] == "per rank"
    validation = scaling.measure(config, dataset=params["dataset"], scale=params["scale"],
                                 ranks=runnable, pipelines=params["pipelines"],
                                 per_rank_batch=per_rank)
    measured = {(r["pipeline"], r["world_size"]): r["epoch_s"]
                for r in validation["runs"] if not r["skipped"]}
    for row in result["rows"]:
        epoch_s = measured.get((row["pipeline"], row["world_size"]))
        if epoch_s is not None:
            row.update(measured_epoch_s=epoch_s, error=row["epoch_s"] / epoch_s - 1)
    result["validation"] = {k: v for k, v in validation.items() if k not in ("env", "dataset")}
    return result
