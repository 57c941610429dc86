"""Our mini-batches in the layouts other stacks' models take, for one's own training loop.

`for mb in loader:` gives MiniBatch objects (seeds, input_nodes, x, y, blocks) on the loader's
device. A model written for DGL takes `to_dgl(mb)` (DGL's DataLoader triple, features and labels
where DGL's examples read them) and `dgl_batches(loader)` iterates those; one written for PyG
takes `to_pyg(mb)` (NeighborLoader's `x`, `edge_index`, `batch_size`, `n_id`; `adj_t` with
`sparse=True`) and
`pyg_batches(loader)`. A typed batch (TypedDataset) takes `to_dgl_hetero(mb)` (DGL heterogeneous
blocks, for HeteroGraphConv) and `to_pyg_hetero(mb)` (the heterogeneous NeighborLoader's
HeteroData). `model_logits` calls a model on a batch in any of the LAYOUTS, with
errors in the terms of the stack the model comes from, and `layer_output` one layer of a model
that `exposes_layers` (what layer-wise inference runs); `from_dgl` and `from_pyg` make a
Dataset of a DGLGraph or a PyG Data, so a peer's user keeps their data.
"""
from gnnrepro.interop.convert import from_dgl, from_pyg
from gnnrepro.interop.dgl_view import dgl_batches, to_dgl
from gnnrepro.interop.layout import (LAYOUTS, check_layout, exposes_layers, layer_output,
                                     model_logits)
from gnnrepro.interop.pyg_view import (PyGBatch, pyg_adj_t, pyg_batches, pyg_edge_index, to_pyg,
                                       to_pyg_sparse)
from gnnrepro.interop.typed_views import PyGHeteroBatch, to_dgl_hetero, to_pyg_hetero
from gnnrepro.interop.view import BatchView

__all__ = ["LAYOUTS", "BatchView", "PyGBatch", "PyGHeteroBatch", "check_layout", "dgl_batches",
           "exposes_layers", "from_dgl", "from_pyg", "layer_output", "model_logits", "pyg_adj_t",
           "pyg_batches", "pyg_edge_index", "to_dgl", "to_dgl_hetero", "to_pyg",
           "to_pyg_hetero", "to_pyg_sparse"]
