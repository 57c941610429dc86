"""Baselines the paper compares against: DGL 2.1.0's CPU neighbour samplers and its DataLoader.

Importing this package does not import DGL; constructing a sampler or loader does (see
`import_dgl`).
"""
from gnnrepro.baselines.dgl_import import dgl_available, import_dgl, set_dgl_threads
from gnnrepro.baselines.dgl_loader import DGLLoader
from gnnrepro.baselines.dgl_samplers import DGLFusedSampler, DGLUnfusedSampler

__all__ = ["DGLFusedSampler", "DGLLoader", "DGLUnfusedSampler", "dgl_available", "import_dgl",
           "set_dgl_threads"]
