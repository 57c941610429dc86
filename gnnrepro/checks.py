"""Argument checks shared by the pipeline and the trainer: clear errors naming the argument."""
from __future__ import annotations

import math

import torch

__all__ = ["check_bool", "check_device", "check_fraction", "check_id_tensor", "check_int",
           "check_node_ids", "check_positive_float"]

INT_DTYPES = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)


def check_int(name: str, value: object, low: int) -> int:
    """`value` as an int >= `low` (bools refused), else a TypeError/ValueError naming it."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    return value


def check_positive_float(name: str, value: object) -> float:
    """`value` as a finite float > 0 (ints accepted, bools refused), else a TypeError/ValueError
    naming it."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value}")
    return float(value)


def check_fraction(name: str, value: object) -> float:
    """`value` as a float in (0, 1] (an accuracy to reach, a share), else a TypeError/ValueError
    naming it."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not 0 < value <= 1:
        raise ValueError(f"{name} must be in (0, 1], got {value}")
    return float(value)


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


def check_bool(name: str, value: object) -> bool:
    """`value` if it is a bool (not merely truthy), else a TypeError naming it."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return value


def check_id_tensor(ids: object, name: str, device: torch.device) -> torch.Tensor:
    """`ids` as a 1-D integer tensor on `device`, else a TypeError or ValueError naming it; no
    pass over the values. int32/int64 stay as they are; other integer dtypes become int64."""
    if not isinstance(ids, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(ids).__name__}")
    if ids.dtype not in INT_DTYPES:
        raise TypeError(f"{name} must be an integer tensor, got {ids.dtype}")
    if ids.dim() != 1:
        raise ValueError(f"{name} must be 1-D, got shape {tuple(ids.shape)}")
    if ids.device != device:
        raise ValueError(f"{name} are on {ids.device} but must be on {device}")
    if ids.dtype not in (torch.int32, torch.int64):
        ids = ids.to(torch.int64)
    return ids


def check_node_ids(ids: object, num_nodes: int, name: str, device: torch.device) -> torch.Tensor:
    """`ids` as a 1-D tensor of node ids in [0, num_nodes) on `device`, else a TypeError or
    ValueError naming it. int32/int64 stay as they are; other integer dtypes become int64."""
    ids = check_id_tensor(ids, name, device)
    if ids.numel():
        lo, hi = (int(v) for v in torch.aminmax(ids))
        if lo < 0 or hi >= num_nodes:
            raise ValueError(f"{name} must lie in [0, num_nodes={num_nodes}), found values in "
                             f"[{lo}, {hi}]")
    return ids
