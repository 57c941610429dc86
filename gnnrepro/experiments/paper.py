"""The paper's reported numbers (seeds/000), which every table and figure shows beside ours."""
from __future__ import annotations

__all__ = ["END_TO_END_SPEEDUP", "SAMPLING_SPEEDUP", "SCALING_SPEEDUP", "SOURCE"]

SOURCE = "seeds/000"
#: Fused sampling stage vs DGL's (sample_neighbors + to_block).
SAMPLING_SPEEDUP = 1.52
#: Epoch time, the full system (fused sampling + pinned multi-stream loading) vs DGL.
END_TO_END_SPEEDUP = 1.80
#: Multi-GPU epoch time speedup vs DGL at the same world size.
SCALING_SPEEDUP = {2: 1.10, 4: 1.16, 8: 1.12}
