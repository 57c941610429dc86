"""gnnrepro.pinning with a fake cudart (no GPU here): what is registered, when it is unregistered,
and that a failure leaves no CUDA error behind."""
from __future__ import annotations

import gc

import pytest
import torch

from gnnrepro import CSCGraph, pinning


class FakeCudart:
    """torch.cuda.cudart() stand-in recording (pointer, bytes) registrations."""

    def __init__(self, error: int = 0):
        self.error = error
        self.registered: list[tuple[int, int]] = []
        self.unregistered: list[int] = []

    def cudaHostRegister(self, ptr: int, nbytes: int, flags: int) -> int:
        self.registered.append((ptr, nbytes))
        return self.error

    def cudaHostUnregister(self, ptr: int) -> int:
        self.unregistered.append(ptr)
        return 0


@pytest.fixture
def cudart(monkeypatch: pytest.MonkeyPatch) -> FakeCudart:
    fake = FakeCudart()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "cudart", lambda: fake)
    return fake


def test_registers_the_whole_storage_of_a_view_once(cudart: FakeCudart) -> None:
    base = torch.zeros(100, 4)
    view = base[10:20, 1]  # an interior, strided view
    assert pinning.pin_in_place(view)
    storage = base.untyped_storage()
    assert cudart.registered == [(storage.data_ptr(), storage.nbytes())]
    assert pinning.is_registered(base) and pinning.is_registered(view)
    assert pinning.pin_in_place(base)  # the same storage: not registered twice
    assert len(cudart.registered) == 1


def test_unregisters_when_the_storage_dies_not_the_view(cudart: FakeCudart) -> None:
    base = torch.zeros(64)
    ptr = base.untyped_storage().data_ptr()
    view = base[8:]
    assert pinning.pin_in_place(view)
    del view
    gc.collect()
    assert cudart.unregistered == [] and pinning.is_registered(base)
    del base
    gc.collect()
    assert cudart.unregistered == [ptr]
    assert ptr not in pinning._registered


def test_failure_returns_false_and_clears_the_cuda_error(monkeypatch: pytest.MonkeyPatch,
                                                         cudart: FakeCudart) -> None:
    cudart.error = 2  # cudaErrorMemoryAllocation
    cleared: list[bool] = []
    monkeypatch.setattr(pinning, "clear_cuda_error", lambda: cleared.append(True))
    t = torch.zeros(16)
    assert not pinning.pin_in_place(t)
    assert cleared == [True] and not pinning.is_registered(t)


def test_empty_and_without_cuda_nothing_is_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    assert not pinning.pin_in_place(torch.zeros(8))  # this machine has no CUDA
    fake = FakeCudart()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "cudart", lambda: fake)
    assert not pinning.pin_in_place(torch.empty(0))
    assert fake.registered == []


def test_bad_arguments() -> None:
    with pytest.raises(TypeError, match="tensor must be a torch.Tensor"):
        pinning.pin_in_place([1, 2])
    with pytest.raises(ValueError, match="tensor must be a CPU tensor"):
        pinning.pin_in_place(torch.zeros(2, device="meta"))


def test_graph_pins_both_arrays_and_raises_on_failure(cudart: FakeCudart) -> None:
    graph = CSCGraph(torch.tensor([0, 1, 2]), torch.tensor([1, 0], dtype=torch.int32))
    graph.pin_memory_()
    assert [p for p, _ in cudart.registered] == [graph.indptr.data_ptr(), graph.indices.data_ptr()]
    cudart.error = 2
    other = CSCGraph(torch.tensor([0, 1]), torch.tensor([0]))
    with pytest.raises(RuntimeError, match="could not page-lock the graph's indptr"):
        other.pin_memory_()


def test_sharing_a_registered_storage_moves_its_registration(cudart: FakeCudart) -> None:
    """share_memory_ frees the old memory under the same storage: it must not stay registered
    (memory mapped there later would count as pinned with stale pages behind it)."""
    table = torch.arange(4096, dtype=torch.float32).reshape(64, 64)
    old = table.untyped_storage().data_ptr()
    assert pinning.pin_in_place(table)
    assert pinning.share_memory_in_place(table) is table
    new = table.untyped_storage().data_ptr()
    assert table.is_shared() and new != old
    assert cudart.unregistered == [old]
    assert cudart.registered[-1] == (new, table.untyped_storage().nbytes())
    assert pinning.is_registered(table) and old not in pinning._registered
    assert torch.equal(table, torch.arange(4096, dtype=torch.float32).reshape(64, 64))


def test_sharing_an_unregistered_storage_registers_nothing(cudart: FakeCudart) -> None:
    table = torch.zeros(32, 8)
    pinning.share_memory_in_place(table)
    assert table.is_shared() and cudart.registered == [] and cudart.unregistered == []
    with pytest.raises(TypeError, match="tensor must be a torch.Tensor"):
        pinning.share_memory_in_place([1, 2])

