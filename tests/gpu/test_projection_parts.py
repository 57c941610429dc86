"""The projection's GPU parts (issue 49 item 4; gnnrepro.distributed.scaling_parts on a GPU
machine): the model's step and the copy rate on the GPU, the host's read rate, fused+pinned's
host part from its Loader's worker threads, and the projection of all of them. Before the
multi-GPU window's step runs them at products size, the GPU tests run them on a small graph."""
from __future__ import annotations

import math

import torch

from gnnrepro.datasets import Dataset
from gnnrepro.distributed.projection import projections
from gnnrepro.distributed.scaling_parts import measure_parts

from .conftest import needs_cuda


@needs_cuda
def test_gpu_parts_are_measured_and_projected(dataset: Dataset) -> None:
    parts = measure_parts(dataset, [1, 2], ["reference", "fused+pinned"], fanouts=[5, 5],
                          batch_size=32, per_rank_batch=True, hidden=16, lr=0.01, seed=0,
                          batches=2, device="cuda")
    gpu = parts["gpu"]
    assert gpu["name"] == torch.cuda.get_device_name(0)
    assert gpu["device_s"][1] > 0 and gpu["device_s"][2] == gpu["device_s"][1]
    assert gpu["pcie_bytes_per_s"] > 0 and gpu["host_read_bytes_per_s"] > 0
    assert "allreduce_s" not in parts  # the GPUs' all-reduce is stated, not measured
    for k in (1, 2):
        assert parts["host"]["fused+pinned"][k]["workers"] >= 1
        assert parts["host"]["reference"][k]["compute_s"] == 0.0  # the model is on the GPU
    rows = projections(parts, dataset.train_idx.numel())
    assert len(rows) == 4
    assert all(math.isfinite(r["epoch_s"]) and r["epoch_s"] > 0 for r in rows)
    assert {r["bound_by"] for r in rows if r["pipeline"] == "fused+pinned"} <= {
        "host", "copy", "device"}
