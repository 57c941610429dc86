"""What the machine decides: settings left to it (`device` auto, `threads`, `workers` and
`prefetch` None) resolved where a run starts, and which placements it can run.
"""
from __future__ import annotations

import os

import torch

from gnnrepro.config.settings import validate

__all__ = ["check_placement", "resolve_device", "resolve_prefetch", "resolve_threads",
           "resolve_workers"]


def resolve_device(device: str) -> str:
    """'auto' -> 'cuda' if CUDA is available, else 'cpu'; a CUDA device that is not there is
    a ValueError naming the setting rather than a failure deep inside a run."""
    device = validate("device", device)
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda"):
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        index = int(device.partition(":")[2] or 0)
        if index >= count:
            raise ValueError(f"device is {device!r} but this machine has {count} CUDA "
                             f"device(s); use 'auto' or 'cpu'")
    return device


def resolve_threads(threads: int | None, ranks_per_machine: int = 1) -> int:
    """`threads`, or (None) this machine's cores shared by its ranks, at least 1."""
    if threads is not None:
        return validate("threads", threads)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, (cores or 1) // max(1, ranks_per_machine))


def resolve_workers(workers: int | None, device: str, sampler_device: str = "cpu",
                    ranks_per_machine: int = 1, feature_store: str = "memory") -> int:
    """`workers`, or (None) chosen from the machine for a rank training on `device`.

    A GPU sampler (sampler_device cuda or uva) runs in the trainer: 0. So does the disk
    feature store: it reads the next batches ahead only when the trainer samples them (its
    own I/O thread overlaps the reads; a worker would gather each batch with waiting reads).
    With CUDA otherwise the trainer needs about one core to drive the GPU, so the rank's
    other cores sample and gather (at most 4: more only adds staging slots). On the CPU the
    model step takes every core: with 2 or fewer per rank a worker takes more from the model
    than it hides (measured: benchmarks/NOTES.md, "Defaults chosen from the machine"), so 0;
    with more, one worker costs the model a small share and hides the batches: 1.
    """
    if workers is not None:
        return validate("workers", workers)
    if validate("sampler_device", sampler_device) != "cpu":
        return 0
    if validate("feature_store", feature_store) == "disk":
        return 0
    cores = resolve_threads(None, ranks_per_machine)
    if not device.startswith("cuda"):
        return 0 if cores <= 2 else 1
    return min(4, max(1, cores - 1))


def resolve_prefetch(prefetch: int | None, workers: int) -> int:
    """`prefetch`, or (None) 2, or `workers` if more: each worker can hold a batch."""
    if prefetch is not None:
        return validate("prefetch", prefetch)
    return max(2, workers)


def check_placement(device: str, sampler_device: str, feature_source: str,
                    workers: int = 0) -> None:
    """Raise ValueError naming the setting when this combination cannot run here.

    `device` is the training device, already resolved ('cpu', 'cuda', 'cuda:N'). On the CPU
    only (cpu, pinned) exists: nothing is pinned there, the slots are plain shared memory.
    A GPU sampler runs in the training process, so it takes no sampling workers.
    """
    sampler_device = validate("sampler_device", sampler_device)
    feature_source = validate("feature_source", feature_source)
    cuda = device.startswith("cuda")
    for name, value, cpu_value in (("sampler_device", sampler_device, "cpu"),
                                   ("feature_source", feature_source, "pinned")):
        if value == cpu_value:
            continue
        if not torch.cuda.is_available():
            raise ValueError(f"{name}={value!r} needs a CUDA device; this machine has none "
                             f"(use {name}={cpu_value!r})")
        if not cuda:
            raise ValueError(f"{name}={value!r} needs device='cuda', got device={device!r}")
    if sampler_device != "cpu" and workers:
        raise ValueError(f"sampler_device={sampler_device!r} samples on the GPU in the "
                         f"training process: workers must be 0, got {workers}")
