"""The paper's reported numbers (Li et al., "Synergizing operator fusion and memory optimization
for parallel GNN training acceleration", 2026), which every table and figure shows beside
ours."""
from __future__ import annotations

__all__ = ["END_TO_END_SPEEDUP", "GIDS_SPEEDUP_VS_MMAP", "GRAPHBOLT_READ_AMPLIFICATION",
           "SAMPLING_SPEEDUP", "SCALING_SPEEDUP"]

#: Fused sampling stage vs DGL's (sample_neighbors + to_block).
SAMPLING_SPEEDUP = 1.52
#: Epoch time, the full system (fused sampling + pinned multi-stream loading) vs DGL.
END_TO_END_SPEEDUP = 1.80
#: Multi-GPU epoch time speedup vs DGL at the same world size.
SCALING_SPEEDUP = {2: 1.10, 4: 1.16, 8: 1.12}

# Neighbours' values, shown beside 06_storage (not this paper's claims).
#: GIDS: its dataloader vs DGL's mmap loader once data exceed memory, end to end
#: on one GPU with terabyte-scale data ("up to").
GIDS_SPEEDUP_VS_MMAP = 392.0
#: GraphBolt's DiskBasedFeature reads one 4 KiB block per row: for 400-byte rows (100 float32
#: features) that is 4096 / 400 bytes read per byte used (by construction, not measured).
GRAPHBOLT_READ_AMPLIFICATION = 4096 / 400
