"""Argument checks shared by the pipeline and the trainer: clear errors naming the argument."""
from __future__ import annotations

import torch

__all__ = ["check_int", "check_device"]


def check_int(name: str, value: object, low: int) -> int:
    """`value` as an int >= `low` (bools refused), else a TypeError/ValueError naming it."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    return value


def check_device(device: object) -> torch.device:
    """`device` as a torch.device on the CPU or an available GPU, else a clear error."""
    if isinstance(device, str):
        try:
            device = torch.device(device)
        except RuntimeError as exc:
            raise ValueError(f"device: unknown device string {device!r}") from exc
    if not isinstance(device, torch.device):
        raise TypeError(f"device must be a str or torch.device, got {type(device).__name__}")
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"device is {str(device)!r} but CUDA is not available")
        if device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
    elif device.type != "cpu":
        raise ValueError(f"device must be 'cpu' or 'cuda[:i]', got {str(device)!r}")
    return device
