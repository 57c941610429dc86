"""DeviceRows: feature rows gathered by the GPU itself (feature_source 'uva' or 'device').

'uva': the host table is page-locked in place and the GPU reads the rows it needs over UVA
(zero-copy; no staging slot, no side-stream copy). 'device': the table is copied once into GPU
memory and rows are gathered there. Both use the gather_rows op's CUDA kernel on the current
stream; the ids may be on the CPU or the GPU.
"""
from __future__ import annotations

import torch

from gnnrepro import _ops
from gnnrepro.features.store import InMemoryFeatureStore

__all__ = ["DeviceRows"]


class DeviceRows:
    """Rows of `store`'s table for a batch, gathered on `device` (see the module doc)."""

    def __init__(self, store: InMemoryFeatureStore, source: str, device: torch.device):
        if device.type != "cuda":
            raise ValueError(f"feature_source={source!r} needs a CUDA device, got {device}")
        if source == "uva":
            store.pin_memory_()
            if not store.pinned:
                raise RuntimeError("feature_source='uva' needs the feature table page-locked, "
                                   "and cudaHostRegister failed (locked-memory limit?): use "
                                   "feature_source='pinned' or 'device'")
            self.table = store.features
        elif source == "device":
            self.table = store.features.to(device)
        else:
            raise ValueError(f"feature_source must be 'uva' or 'device' here, got {source!r}")
        self.source, self.device = source, device

    def gather(self, ids: torch.Tensor) -> torch.Tensor:
        """float [len(ids), dim] on the device: rows `ids` of the table."""
        ids = ids.to(self.device, non_blocking=True)
        out = torch.empty((ids.numel(), self.table.shape[1]), dtype=self.table.dtype,
                          device=self.device)
        _ops.ops.gather_rows(self.table, ids, out)
        return out
