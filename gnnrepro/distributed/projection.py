"""Epoch time on k ranks projected from measured parts (issue 49 item 4).

A data-parallel rank's step has four parts, each measured or stated (never fitted):
- host: the pipeline's CPU-side work per batch (sampling, gathering the rows into staging; on
  CPU ranks the model's forward, backward and optimizer step too), measured with k ranks doing
  it at once on the machine's cores, max(1, C // k) cores each
  (gnnrepro.distributed.scaling_parts): what the ranks' contention for cores, caches and
  memory costs is in the measurement, not assumed;
- copy (GPU ranks): the batch's bytes over the rank's own PCIe link, at the slower of the link's
  measured rate and the host memory's measured read rate shared by the k links;
- device (GPU ranks): forward, backward and optimizer step per batch, measured on one GPU (each
  rank has its own);
- all-reduce of the gradients: measured between CPU ranks (gloo); for GPUs a stated
  interconnect rate in NCCL's ring (2 (k-1)/k of the bytes over the bus, 2 (k-1) latencies).
A serial pipeline adds them; an overlapped one (fused+pinned on a GPU: workers and side streams)
takes the slowest of host, copy and device + all-reduce; on CPU ranks the model shares the cores
with the host work, so the step is always their sum. The epoch is the step times the rank's
steps, ceil(train ids / (k * rank batch)): a last, partial step is priced as a whole one (a
step's rows and its fixed costs shrink far less than its seeds).
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gnnrepro.checks import check_int

__all__ = ["GPU_LINK", "METHOD", "OVERLAPPED", "Interconnect", "RankParts", "project_epoch",
           "projections", "rank_steps", "ring_allreduce_s"]

METHOD = ("epoch(k) = steps(k) * step(k), steps(k) = ceil(train ids / (k * rank batch)) "
          "(a last, partial step priced as a whole one); "
          "step(k) = host(k) + copy(k) + device + allreduce(k) for a serial pipeline, "
          "max(host(k), copy(k), device + allreduce(k)) for an overlapped one on a GPU, "
          "host(k) + allreduce(k) on CPU ranks (host(k) then holds the model's step and the "
          "ranks' wait for each other); host(k) measured with k ranks at once on max(1, C // k) "
          "cores each: for ranks that meet every step (serial pipelines, CPU ranks) the mean "
          "over steps of the slowest rank's batch, for fused+pinned on a GPU (which runs ahead) "
          "the slowest rank's mean; copy(k) = bytes / min(PCIe, "
          "host read rate / k); device measured on one GPU; allreduce(k) measured between CPU "
          "ranks, or NCCL's ring at a stated interconnect rate for GPUs")


@dataclass(frozen=True)
class Interconnect:
    """A stated all-reduce rate: bus bandwidth (bytes/s, as nccl-tests report it) and the
    latency of one ring step (s)."""

    name: str
    bus_bytes_per_s: float
    step_latency_s: float


#: The GPUs' all-reduce rate, stated (one GPU per machine is lent here: never measured): a
#: PCIe-class link without NVLink, conservative for NVLink machines. The gradients of the
#: paper's GraphSAGE are under 1 MB, so the rate moves a step by well under a millisecond.
GPU_LINK = Interconnect("PCIe 4.0 x16 class without NVLink (NCCL ring bus bandwidth)",
                        20e9, 10e-6)
#: The pipelines that overlap host work, copies and the model step on a GPU.
OVERLAPPED = ("fused+pinned",)


def ring_allreduce_s(nbytes: float, k: int, link: Interconnect) -> float:
    """Seconds of a ring all-reduce of `nbytes` over k ranks at `link`'s rate (0 for k = 1)."""
    check_int("k", k, 1)
    if k == 1:
        return 0.0
    return 2 * (k - 1) / k * nbytes / link.bus_bytes_per_s + 2 * (k - 1) * link.step_latency_s


def rank_steps(num_train: int, k: int, rank_batch: int) -> int:
    """Steps of an epoch on k ranks of `rank_batch` seeds each (every id once)."""
    check_int("num_train", num_train, 1)
    check_int("k", k, 1)
    check_int("rank_batch", rank_batch, 1)
    return math.ceil(num_train / (k * rank_batch))


@dataclass(frozen=True)
class RankParts:
    """One pipeline's measured parts. host_s: {k: seconds per batch of one rank's host work
    while k ranks do theirs}; rank_batch: {k: seeds per rank}; device_s: forward, backward
    and optimizer step per batch on a GPU (None on CPU ranks: in host_s);
    copy_bytes: bytes a batch moves to the GPU; overlapped: whether the pipeline overlaps its
    host work, copies and model step (fused+pinned on a GPU)."""

    host_s: Mapping[int, float]
    rank_batch: Mapping[int, int]
    device_s: float | None = None
    copy_bytes: float = 0.0
    overlapped: bool = False


def project_epoch(parts: RankParts, k: int, num_train: int, *,
                  allreduce_s: float, pcie_bytes_per_s: float | None = None,
                  host_read_bytes_per_s: float | None = None) -> dict[str, Any]:
    """The projected epoch on k ranks and its parts (seconds per step, and steps): see
    METHOD. `allreduce_s`: one step's gradient all-reduce at k ranks; the rates are needed
    for a GPU pipeline (parts.device_s set)."""
    if k not in parts.host_s or k not in parts.rank_batch:
        raise ValueError(f"k={k}: the host part was not measured at {k} ranks "
                         f"(measured: {sorted(parts.host_s)})")
    host = parts.host_s[k]
    steps = rank_steps(num_train, k, parts.rank_batch[k])
    if parts.device_s is None:  # CPU ranks: the model runs on the host cores
        copy = device = 0.0
        step = host + allreduce_s
    else:
        if not pcie_bytes_per_s or not host_read_bytes_per_s:
            raise ValueError("a GPU pipeline's projection needs pcie_bytes_per_s and "
                             "host_read_bytes_per_s (measured)")
        copy = parts.copy_bytes / min(pcie_bytes_per_s, host_read_bytes_per_s / k)
        device = parts.device_s
        step = (max(host, copy, device + allreduce_s) if parts.overlapped
                else host + copy + device + allreduce_s)
    return {"world_size": k, "steps": steps, "host_s": host, "copy_s": copy,
            "device_s": device, "allreduce_s": allreduce_s, "step_s": step,
            "epoch_s": steps * step,
            "bound_by": _bound(parts, host, copy, device + allreduce_s)}


def _bound(parts: RankParts, host: float, copy: float, device: float) -> str:
    """Which part sets an overlapped pipeline's step ("sum" for the others)."""
    if not parts.overlapped or parts.device_s is None:
        return "sum"
    return max((host, "host"), (copy, "copy"), (device, "device"))[1]


def projections(parts: Mapping[str, Any], num_train: int, *,
                link: Interconnect = GPU_LINK) -> list[dict[str, Any]]:
    """Every pipeline's projected epoch at every k measured in `parts`
    (gnnrepro.distributed.scaling_parts.measure_parts' result, as stored: keys may be
    strings): GPU ranks where parts hold "gpu", else CPU ranks. Rows: pipeline, world_size
    and project_epoch's fields."""
    gpu = parts.get("gpu")
    rank_batch = {int(k): int(b) for k, b in parts["rank_batch"].items()}
    rows = []
    for pipeline, by_k in parts["host"].items():
        host = {int(k): v for k, v in by_k.items()}
        if gpu is None:  # CPU ranks meet every step: step_max_s, their barrier's wait in it
            measured = {int(k): v for k, v in parts["allreduce_s"].items()}
            rank_parts = RankParts({k: v["step_max_s"] for k, v in host.items()}, rank_batch)
        else:
            device = {int(k): v for k, v in gpu["device_s"].items()}
            overlapped = pipeline in OVERLAPPED  # runs ahead: waits for the slowest rank's mean
            host_s = {k: v["batch_s" if overlapped else "step_max_s"] for k, v in host.items()}
        for k in sorted(host):
            if gpu is None:
                row = project_epoch(rank_parts, k, num_train, allreduce_s=measured.get(k, 0.0))
            else:
                one = RankParts({k: host_s[k]}, rank_batch, device_s=device[k],
                                copy_bytes=host[k]["copy_bytes"], overlapped=overlapped)
                row = project_epoch(one, k, num_train,
                                    allreduce_s=ring_allreduce_s(parts["gradient_bytes"], k,
                                                                 link),
                                    pcie_bytes_per_s=gpu["pcie_bytes_per_s"],
                                    host_read_bytes_per_s=gpu["host_read_bytes_per_s"])
            rows.append({"pipeline": pipeline, **row})
    return rows
