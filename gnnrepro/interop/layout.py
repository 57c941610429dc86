"""Calling a model on a MiniBatch in the layout it takes, with errors in that stack's terms.

LAYOUTS: "blocks" (`model(mb.blocks, mb.x)`, gnnrepro's GraphSAGE and any model written for
our Blocks), "dgl" (`model(dgl_blocks, x)`, a model of `dgl.nn` layers), "pyg"
(`model(x, edge_index)`, a model of `torch_geometric.nn` layers, which returns a row per node:
the seeds' are the first batch_size) and "pyg-sparse" (`model(x, adj_t)`, the same model on
PyG's sparse adjacency: SpMM where the layer has it, as after `T.ToSparseTensor()`). Each
returns the seeds' logits.
"""
from __future__ import annotations

import torch
from torch import nn

from gnnrepro.interop.dgl_view import to_dgl
from gnnrepro.interop.pyg_view import to_pyg
from gnnrepro.sampling.block import MiniBatch

__all__ = ["LAYOUTS", "check_layout", "model_logits"]

LAYOUTS = ("blocks", "dgl", "pyg", "pyg-sparse")
CALLS = {"blocks": "model(mb.blocks, mb.x) with gnnrepro Blocks",
         "dgl": "model(blocks, x) with DGL blocks",
         "pyg": "model(x, edge_index) in PyG's NeighborLoader layout",
         "pyg-sparse": "model(x, adj_t) in PyG's NeighborLoader layout with a sparse adj_t"}
HINTS = {"blocks": "a model of dgl.nn layers takes layout='dgl', one of torch_geometric.nn "
                   "layers layout='pyg' (or 'pyg-sparse')",
         "dgl": "a model written for gnnrepro Blocks takes layout='blocks', one of "
                "torch_geometric.nn layers layout='pyg' (or 'pyg-sparse')",
         "pyg": "a model of dgl.nn layers takes layout='dgl', one written for gnnrepro Blocks "
                "layout='blocks'",
         "pyg-sparse": "a layer without sparse-adjacency support takes layout='pyg' "
                       "(edge_index); a model of dgl.nn layers layout='dgl'"}


def check_layout(layout: object) -> str:
    if not isinstance(layout, str):
        raise TypeError(f"layout must be a str, got {type(layout).__name__}")
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
    return layout


def _check_devices(model: nn.Module, mb: MiniBatch) -> None:
    weight = next(model.parameters(), None)
    if weight is not None and mb.x is not None and weight.device != mb.x.device:
        raise ValueError(f"the batch's features are on {mb.x.device} but the model's weights "
                         f"are on {weight.device}: move the model with "
                         f"model.to(loader.device), or make the Loader with "
                         f"device={str(weight.device)!r}")


def model_logits(model: nn.Module, mb: MiniBatch, layout: str = "blocks") -> torch.Tensor:
    """The seeds' logits: `model` called on `mb` in `layout` (see the module doc). A model
    that fails in this layout with the errors a wrong layout raises (TypeError,
    AttributeError, ValueError, IndexError; chained) is a TypeError, and one that returns a
    row count that is not the seeds' a ValueError, each saying which layout it was called in
    and which it may take."""
    layout = check_layout(layout)
    _check_devices(model, mb)
    try:
        if layout == "blocks":
            out = model(mb.blocks, mb.x)
        elif layout == "dgl":
            _, _, blocks = to_dgl(mb)
            out = model(blocks, mb.x)
        elif layout == "pyg":
            view = to_pyg(mb)
            out = model(view.x, view.edge_index)[: view.batch_size]
        else:
            view = to_pyg(mb, sparse=True)
            out = model(view.x, view.adj_t)[: view.batch_size]
    except (TypeError, AttributeError, ValueError, IndexError) as exc:
        raise TypeError(f"the model failed when called as {CALLS[layout]} ({type(exc).__name__}:"
                        f" {exc}); {HINTS[layout]}") from exc
    if not isinstance(out, torch.Tensor) or out.dim() != 2 or out.shape[0] != mb.seeds.numel():
        shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise ValueError(f"the model returned {shape} when called as {CALLS[layout]}, not one "
                         f"row of logits per seed ({mb.seeds.numel()}); {HINTS[layout]}")
    return out
