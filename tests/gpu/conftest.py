"""GPU tests: every test here is skipped where CUDA is unavailable (the CPU CI) or the
extension was built without its CUDA kernels, unless GNNREPRO_REQUIRE_CUDA=1 (the GPU run),
where that is a failure instead."""
from __future__ import annotations

import os

import pytest
import torch

from gnnrepro import _ops
from gnnrepro.pinning import pin_in_place


def _missing() -> str | None:
    if not torch.cuda.is_available():
        return "CUDA is not available"
    if not _ops.cuda_compiled():
        return "gnnrepro was built without its CUDA kernels (no CUDA torch or nvcc at build time)"
    return None


@pytest.fixture(scope="session", autouse=True)
def _require_cuda() -> None:
    """Session scope: runs before any module fixture here allocates on the GPU."""
    reason = _missing()
    if reason is None:
        return
    if os.environ.get("GNNREPRO_REQUIRE_CUDA") == "1":
        pytest.fail(f"GNNREPRO_REQUIRE_CUDA=1 but {reason}")
    pytest.skip(reason)


@pytest.fixture
def registered():
    """Page-locks tensors in place with gnnrepro.pinning (like CSCGraph.pin_memory_ and the
    feature store): registered until their storage is freed."""
    def register(*tensors: torch.Tensor) -> None:
        for t in tensors:
            assert t.numel() == 0 or pin_in_place(t)

    yield register
    torch.cuda.synchronize()  # nothing may still read them when the test drops its tensors
