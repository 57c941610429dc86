"""The parameters of the synthetic datasets (products-sim, igb-sim, papers-sim): a scale of
the full size and a seed, checked once for all, in the canonical form that names their cache
entries."""
from __future__ import annotations

import math
import numbers

__all__ = ["check_scale_and_seed"]


def check_scale_and_seed(name: str, scale: float, seed: int, full_nodes: int,
                         min_nodes: int) -> dict[str, float | int]:
    """{"scale": float, "seed": int} for dataset `name` of `full_nodes` nodes at scale 1.0:
    TypeError/ValueError naming the argument unless the scale gives min_nodes to 2**31 - 1
    nodes and the seed is an int in [0, 2**63)."""
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real):
        raise TypeError(f"scale must be a real number, got {type(scale).__name__}")
    if not math.isfinite(scale) or scale <= 0:
        raise ValueError(f"scale must be a finite number > 0, got {scale!r}")
    if not min_nodes <= round(full_nodes * scale) < 2**31:
        raise ValueError(f"scale={scale!r} gives {round(full_nodes * scale)} nodes; {name} "
                         f"needs {min_nodes} to 2**31 - 1 (scale >= {min_nodes / full_nodes:.2g})")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    if not 0 <= seed < 2**63:
        raise ValueError(f"seed must be in [0, 2**63), got {seed}")
    return {"scale": float(scale), "seed": int(seed)}
