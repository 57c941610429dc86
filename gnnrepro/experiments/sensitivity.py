"""05_sensitivity: the fused+pinned pipeline's epoch time as batch size, fanouts, workers,
streams and placement (sampler_device/feature_source) vary one at a time around the
notebook's settings."""
from __future__ import annotations

import math
from typing import Any

import pandas as pd
from tqdm import tqdm

from gnnrepro.config.machine import resolve_workers
from gnnrepro.experiments import measurements
from gnnrepro.experiments.params import Params
from gnnrepro.pipeline.spans import STAGES

__all__ = ["AXES", "NAME", "sensitivity", "sensitivity_table"]

NAME = "05_sensitivity"
#: Swept setting -> the parameter listing its values.
AXES = {"batch_size": "sweep_batch_sizes", "fanouts": "sweep_fanouts",
        "workers": "sweep_workers", "streams": "sweep_streams",
        "placement": "sweep_placements"}
NO_STREAMS = "streams are CUDA streams; the device is cpu"
NO_CUDA = "needs CUDA; the device is cpu"
#: The parameters the result depends on (its store key; the notebook lists them first).
PARAMETERS = ("dataset", "scale", "root", "fanouts", "batch_size", "epochs", "device",
        "sampler_device", "feature_source", "threads", "workers", "worker_kind", "streams",
        "seed", *AXES.values())


def _label(value: Any) -> str:
    """A setting as text: fanout lists as '15,10,5'."""
    return ",".join(map(str, value)) if isinstance(value, list) else str(value)


def sensitivity(params: Params) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Tidy rows per sweep point: axis, value (text), is_base, the point's batch_size, fanouts,
    workers, streams, status ('run' or 'not run'), reason, epoch_s, seeds_per_s, test_acc and
    each stage's work (<stage>_s). The pipeline is fused+pinned (on the CPU: the fused sampler
    with `workers` workers preparing batches ahead; streams only matter for host-to-device
    copies, so that axis is not run there, nor are the GPU placements). Each point is stored
    as it finishes, and the point equal to the base settings (workers left to the machine
    resolved as the pipeline resolves them) is measured once for all axes."""
    cuda = params.device.startswith("cuda")
    pipeline = "fused+pinned"
    store = params.store()
    base = {axis: getattr(params, axis) for axis in AXES if axis != "placement"}
    # Workers left to the machine (None) are the count the pipeline resolves: so the workers
    # panel marks its base bar, and the base point and that sweep value are one measurement.
    base["workers"] = resolve_workers(params.workers, params.device, params.sampler_device,
                                      feature_store=params.feature_store)
    base["placement"] = f"{params.sampler_device}/{params.feature_source}"

    def compute() -> tuple[pd.DataFrame, dict[str, Any]]:
        points = [(axis, value) for axis, name in AXES.items() for value in getattr(params, name)]
        rows = []
        for axis, value in tqdm(points, desc=NAME, unit="point"):
            setting = base | {axis: value}
            row = {"axis": axis, "value": _label(value), "is_base": value == base[axis],
                   **{k: _label(v) if k == "fanouts" else v for k, v in setting.items()},
                   "status": "run", "reason": None, "epoch_s": math.nan,
                   "seeds_per_s": math.nan, "test_acc": math.nan,
                   **{f"{stage}_s": math.nan for stage in STAGES}}
            sampler_device, feature_source = setting.pop("placement").split("/")
            if axis == "streams" and not cuda:
                row |= {"status": "not run", "reason": NO_STREAMS}
            elif (sampler_device, feature_source) != ("cpu", "pinned") and not cuda:
                row |= {"status": "not run", "reason": NO_CUDA}
            else:
                if sampler_device != "cpu":  # a GPU sampler runs in the trainer
                    setting["workers"] = 0
                r = measurements.end_to_end_run(
                    params, store, (pipeline,), sampler_device=sampler_device,
                    feature_source=feature_source,
                    **setting)["pipelines"][pipeline]
                row |= {"epoch_s": r["epoch_s"], "seeds_per_s": r["seeds_per_s"],
                        "test_acc": r["test_acc"],
                        **{f"{stage}_s": r["stages"][stage]["work_s"] for stage in STAGES}}
            rows.append(row)
        columns = ["axis", "value", "is_base", *AXES, "status", "reason", "epoch_s",
                   "seeds_per_s", "test_acc", *(f"{stage}_s" for stage in STAGES)]
        return pd.DataFrame(rows, columns=columns), {"pipeline": pipeline}

    return store.cached(NAME, params.key(PARAMETERS), compute, params.force,
                        redraw=params.redraw)


def sensitivity_table(data: pd.DataFrame) -> pd.DataFrame:
    """One row per sweep point: the swept value (the base setting marked), epoch time,
    throughput, accuracy, and the reason for points not run."""
    return pd.DataFrame({
        "swept": data["axis"],
        "value": data["value"] + data["is_base"].map({True: " (base)", False: ""}),
        "epoch (s)": data["epoch_s"],
        "seeds/s": data["seeds_per_s"],
        "test acc": data["test_acc"],
        "status": data["status"],
        "reason": data["reason"].fillna("-"),
    })
