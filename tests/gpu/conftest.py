"""The op tests that a GPU user's `make test-gpu` runs: every test taking `device` runs on "cpu"
and on "cuda" from one parametrization (like pyg-lib's withCUDA), so the CPU cases run in CI and
a GPU run covers the same cases. Tests of CUDA-only behaviour (streams, UVA) are marked
`needs_cuda`. Without CUDA the cuda cases are skipped, unless GNNREPRO_REQUIRE_CUDA=1 (the GPU
run), where that is a failure instead."""
from __future__ import annotations

import os
import warnings
from collections.abc import Callable

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


MISSING = _missing()
needs_cuda = pytest.mark.skipif(MISSING is not None, reason=str(MISSING))
DEVICES = ["cpu", pytest.param("cuda", marks=needs_cuda)]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "device" in metafunc.fixturenames:
        metafunc.parametrize("device", DEVICES)


@pytest.fixture(scope="session", autouse=True)
def _require_cuda() -> None:
    """Session scope: fails the GPU run at once where its cuda cases would all be skipped."""
    if MISSING is not None and os.environ.get("GNNREPRO_REQUIRE_CUDA") == "1":
        pytest.fail(f"GNNREPRO_REQUIRE_CUDA=1 but {MISSING}")


@pytest.fixture
def registered():
    """Page-locks tensors in place with gnnrepro.pinning (like CSCGraph.pin_memory_ and the
    feature store): registered until their storage is freed."""
    used: list[torch.Tensor] = []

    def register(*tensors: torch.Tensor) -> None:
        for t in tensors:
            assert t.numel() == 0 or pin_in_place(t)
            used.append(t)

    yield register
    if used:
        torch.cuda.synchronize()  # nothing may still read them when the test drops its tensors


def host_syncs(call: Callable[[], object], capfd: pytest.CaptureFixture) -> int:
    """How many host syncs `call()` makes, as torch's sync debug mode sees them (through
    c10::cuda). Its warnings reach Python's warnings where torch routes a custom op's C++
    warnings there, else stderr (torch 2.11 on an H100 machine): both are counted."""
    torch.cuda.synchronize()
    capfd.readouterr()
    torch.cuda.set_sync_debug_mode("warn")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    printed = capfd.readouterr().err.count("called a synchronizing CUDA operation")
    return len([w for w in caught if "synchroniz" in str(w.message)]) + printed
