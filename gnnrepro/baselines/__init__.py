"""Baselines the paper compares against: DGL 2.1.0's CPU neighbour samplers.

Importing this package does not import DGL; constructing a sampler does (see `import_dgl`).
"""
from gnnrepro.baselines.dgl_import import dgl_available, import_dgl, set_dgl_threads
from gnnrepro.baselines.dgl_samplers import DGLFusedSampler, DGLUnfusedSampler

__all__ = ["DGLFusedSampler", "DGLUnfusedSampler", "dgl_available", "import_dgl",
           "set_dgl_threads"]
