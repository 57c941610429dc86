"""GPU tests: every test here is skipped where CUDA is unavailable (the CPU CI) or the
extension was built without its CUDA kernels, unless GNNREPRO_REQUIRE_CUDA=1 (the GPU run),
where that is a failure instead."""
from __future__ import annotations

import os

import pytest
import torch

from gnnrepro import _ops


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
    """Page-locks tensors in place (cudaHostRegister, like CSCGraph.pin_memory_) and undoes it
    after the test, so freed memory is never left registered."""
    cudart = torch.cuda.cudart()
    done: list[int] = []

    def register(*tensors: torch.Tensor) -> None:
        for t in tensors:
            if t.numel() and not t.is_pinned():
                assert int(cudart.cudaHostRegister(t.data_ptr(), t.numel() * t.element_size(),
                                                   0)) == 0
                done.append(t.data_ptr())

    yield register
    torch.cuda.synchronize()
    for ptr in done:
        cudart.cudaHostUnregister(ptr)
