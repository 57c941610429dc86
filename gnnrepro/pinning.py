"""Page-locking host memory in place (cudaHostRegister): the one helper every pinned array uses.

Why in place and not `tensor.pin_memory()`: that returns a pinned *copy*, doubling an array that
may take most of the host's memory and unsharing it from other processes.

`pin_in_place(t)` registers the whole storage behind `t` (not only the view's elements, so any
view of it, interior pointers included, is pinned too) and unregisters it when that storage is
freed (a finalizer on the storage object, which torch keeps alive exactly as long as the
storage), not at interpreter exit, where the OS cleans up. A failed call leaves no CUDA error
behind: torch's cudart bindings return the error code but leave it recorded as the thread's last
error, which the next kernel launch check anywhere in torch would raise as its own.
Pinning is per process: a storage received by another process is not pinned there.
"""
from __future__ import annotations

import ctypes
import threading
import weakref

import torch

__all__ = ["pin_in_place", "is_registered", "share_memory_in_place"]

_lock = threading.RLock()  # reentrant: a finalizer may run in a GC pass inside pin_in_place
_registered: dict[int, weakref.finalize] = {}  # storage data pointer -> its unregistering finalizer


def pin_in_place(tensor: torch.Tensor) -> bool:
    """Page-lock the storage behind `tensor` in place; True if it is pinned afterwards.

    False, with no CUDA error left set, where CUDA is unavailable or cudaHostRegister fails
    (locked-memory limits, too little RAM). Empty and already pinned storages are left alone
    (True for pinned ones, False for empty ones: there is nothing to page-lock).
    """
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"tensor must be a torch.Tensor, got {type(tensor).__name__}")
    if tensor.device.type != "cpu":
        raise ValueError(f"tensor must be a CPU tensor, got {tensor.device}")
    storage = tensor.untyped_storage()
    if not torch.cuda.is_available() or storage.nbytes() == 0:
        return False
    ptr = storage.data_ptr()
    with _lock:
        if ptr in _registered or tensor.is_pinned():
            return True
        cudart = torch.cuda.cudart()
        if int(cudart.cudaHostRegister(ptr, storage.nbytes(), 0)):
            clear_cuda_error()
            return False
        finalizer = weakref.finalize(storage, _unregister, cudart, ptr)
        finalizer.atexit = False
        _registered[ptr] = finalizer
    return True


def share_memory_in_place(tensor: torch.Tensor) -> torch.Tensor:
    """`tensor.share_memory_()`, safe for a storage that pin_in_place registered; returns it.

    share_memory_ moves the data into new, shared memory under the same storage object and
    frees the old memory. That memory must not stay registered with CUDA: memory mapped there
    later (a worker's shared staging buffer, say) would count as pinned with the old physical
    pages behind it, and the GPU would copy stale rows from it (seen on an H100: process
    workers handed over wrong features after a UVA run had pinned the table in place). So the
    registration is dropped first and, if there was one, made again for the new memory.
    """
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"tensor must be a torch.Tensor, got {type(tensor).__name__}")
    if tensor.is_shared():
        return tensor
    with _lock:
        finalizer = _registered.get(tensor.untyped_storage().data_ptr())
        if finalizer is not None:
            finalizer()  # unregisters the old memory now
    tensor.share_memory_()
    if finalizer is not None:
        pin_in_place(tensor)
    return tensor


def is_registered(tensor: torch.Tensor) -> bool:
    """Whether pin_in_place registered the storage behind `tensor` (and it is still alive)."""
    with _lock:
        return tensor.untyped_storage().data_ptr() in _registered


def _unregister(cudart: object, ptr: int) -> None:
    with _lock:
        _registered.pop(ptr, None)
        if int(cudart.cudaHostUnregister(ptr)):
            clear_cuda_error()


def clear_cuda_error() -> None:
    """Reset the CUDA runtime's per-thread last error after a failed cudart call, by calling
    cudaGetLastError in the libcudart this process has loaded (the instance torch uses; torch
    exposes no binding for it). A no-op where no libcudart is loaded."""
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "libcudart.so" in line}
    for path in paths:
        ctypes.CDLL(path).cudaGetLastError()
