"""Loads the compiled extension, which registers the `torch.ops.gnnrepro.*` operators."""
from __future__ import annotations

import torch

try:
    from gnnrepro import _C
except ImportError as exc:  # pragma: no cover - only without a build
    raise ImportError(
        "gnnrepro's C++ extension is not built: run `make setup` (or "
        "`pip install --no-build-isolation -e .`) in the repository") from exc

from gnnrepro import _meta  # noqa: F401,E402  (registers the ops' fake kernels)

ops = torch.ops.gnnrepro


def cuda_compiled() -> bool:
    """Whether this build contains the CUDA kernels."""
    return bool(_C.cuda_compiled())
