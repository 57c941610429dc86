"""Copies of the graph's arrays in private anonymous memory, advised for huge pages.

Why: the dataset cache maps its .npy files copy-on-write, so `indices` lives on the page
cache's 4 KiB pages, and the sampler's random reads of it (one cache line per pick, hundreds of
thousands per batch) each need a TLB entry. With MADV_HUGEPAGE (2 MiB pages) far fewer entries
cover the arrays, and the same op reads them faster from anonymous memory than from the file
mapping (measured: benchmarks/NOTES.md, "The graph in anonymous huge pages"). DGL's samplers
read arrays DGL allocated itself, so this puts both on the same footing. The copy costs one
pass over the arrays at load time; arrays larger than a quarter of the free memory stay mapped.
"""
from __future__ import annotations

import mmap
import os

import numpy as np

__all__ = ["anonymous_copy", "fits_in_free_memory", "random_access_copy", "random_access_tensor"]


def fits_in_free_memory(nbytes: int, fraction: float = 0.25) -> bool:
    """Whether `nbytes` is at most `fraction` of this machine's free physical memory."""
    try:
        free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):  # not reported here: keep the mapping
        return False
    return nbytes <= fraction * free


def anonymous_copy(array: np.ndarray) -> np.ndarray:
    """`array` copied into a private anonymous mapping advised for transparent huge pages
    (where the kernel has no MADV_HUGEPAGE the copy is made all the same). The returned array
    keeps its mapping alive."""
    size = max(array.nbytes, 1)
    buf = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    advice = getattr(mmap, "MADV_HUGEPAGE", None)
    if advice is not None:
        try:
            buf.madvise(advice)
        except OSError:  # THP disabled ("never"): 4 KiB pages, still off the file
            pass
    out = np.frombuffer(buf, dtype=array.dtype, count=array.size).reshape(array.shape)
    out[...] = array
    return out


def random_access_copy(array: np.ndarray) -> np.ndarray:
    """An array the sampler reads at random (indices, alias tables, edge times): copied into
    huge-page anonymous memory if it fits comfortably in free memory, else `array` itself."""
    return anonymous_copy(array) if fits_in_free_memory(array.nbytes) else array


def random_access_tensor(t: "torch.Tensor") -> "torch.Tensor":
    """random_access_copy of a CPU tensor (other devices' tensors are returned as they are)."""
    import torch  # the numpy helpers above stay importable without it
    if t.device.type != "cpu":
        return t
    return torch.from_numpy(random_access_copy(t.numpy()))
