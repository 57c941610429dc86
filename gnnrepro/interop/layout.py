"""Calling a model on a MiniBatch in the layout it takes, with errors in that stack's terms.

LAYOUTS: "blocks" (`model(mb.blocks, mb.x)`, gnnrepro's GraphSAGE and any model written for
our Blocks), "dgl" (`model(dgl_blocks, x)`, a model of `dgl.nn` layers), "pyg"
(`model(x, edge_index)`, a model of `torch_geometric.nn` layers, which returns a row per node:
the seeds' are the first batch_size) and "pyg-sparse" (`model(x, adj_t)`, the same model on
PyG's sparse adjacency: SpMM where the layer has it, as after `T.ToSparseTensor()`). Each
returns the seeds' logits. A typed batch (a TypedDataset's) takes "blocks" (TypedBlocks and x
by node type), "dgl" (DGL heterogeneous blocks, as `HeteroGraphConv` models take them) or
"pyg" (`model(x_dict, edge_index_dict)`, the heterogeneous NeighborLoader's layout, MLPerf's
R-GAT reference among such models).

`layer_output` calls one layer of a model that exposes its layers (`forward_layer`, see
`exposes_layers`) on one block in the same layouts: what layer-wise inference runs.
"""
from __future__ import annotations

import torch
from torch import nn

from gnnrepro.baselines.dgl_import import import_dgl
from gnnrepro.baselines.dgl_model import as_dgl_block
from gnnrepro.interop.dgl_view import to_dgl
from gnnrepro.interop.pyg_view import pyg_adj_t, pyg_edge_index, to_pyg
from gnnrepro.interop.typed_views import to_dgl_hetero, to_pyg_hetero
from gnnrepro.sampling.block import Block, MiniBatch

__all__ = ["LAYER_CALLS", "LAYOUTS", "check_layout", "exposes_layers", "layer_output",
           "model_logits"]

LAYOUTS = ("blocks", "dgl", "pyg", "pyg-sparse")
CALLS = {"blocks": "model(mb.blocks, mb.x) with gnnrepro Blocks",
         "dgl": "model(blocks, x) with DGL blocks",
         "pyg": "model(x, edge_index) in PyG's NeighborLoader layout",
         "pyg-sparse": "model(x, adj_t) in PyG's NeighborLoader layout with a sparse adj_t"}
#: How layer-wise inference calls layer i of a model that exposes its layers, per layout.
LAYER_CALLS = {"blocks": "model.forward_layer(i, block, h) with a gnnrepro Block",
               "dgl": "model.forward_layer(i, block, h) with a DGL block",
               "pyg": "model.forward_layer(i, h, edge_index), a row per node of h",
               "pyg-sparse": "model.forward_layer(i, h, adj_t), a row per node of h"}
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
    x = next(iter(mb.x.values()), None) if isinstance(mb.x, dict) else mb.x
    if weight is not None and x is not None and weight.device != x.device:
        raise ValueError(f"the batch's features are on {x.device} but the model's weights "
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
    seeds = mb.seed_ids.numel()
    if mb.is_typed and layout == "pyg-sparse":
        raise ValueError("layout='pyg-sparse' is for homogeneous batches; a typed batch takes "
                         "'blocks', 'dgl' (heterogeneous blocks) or 'pyg' (x_dict, "
                         "edge_index_dict)")
    try:
        if layout == "blocks":
            out = model(mb.blocks, mb.x)
        elif mb.is_typed and layout == "dgl":
            out = model(to_dgl_hetero(mb)[2], mb.x)
        elif mb.is_typed:
            view = to_pyg_hetero(mb)
            out = model(view.x_dict, view.edge_index_dict)[:seeds]
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
                        f" {exc}); if it takes another layout: {HINTS[layout]}") from exc
    if not isinstance(out, torch.Tensor) or out.dim() != 2 or out.shape[0] != seeds:
        shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise ValueError(f"the model returned {shape} when called as {CALLS[layout]}, not one "
                         f"row of logits per seed ({seeds}); {HINTS[layout]}")
    return out


def exposes_layers(model: nn.Module) -> bool:
    """True for a model that exposes its layers: a method `forward_layer(i, ...)` computing
    what its forward computes for layer i (the activation after it included; dropout is off in
    eval mode), called as LAYER_CALLS says for its layout. Such a model can be evaluated
    layer-wise, each layer once per node over all its in-neighbours."""
    return callable(getattr(model, "forward_layer", None))


def layer_output(model: nn.Module, index: int, block: Block, h: torch.Tensor,
                 layout: str = "blocks") -> torch.Tensor:
    """Layer `index`'s output for `block`'s destinations ([num_dst, d]): `model.forward_layer`
    called on `block` (destinations first among its sources) and `h` (a row per source) in
    `layout`. A failure is a TypeError saying the call it made; a row count that is not the
    destinations' a ValueError."""
    layout = check_layout(layout)
    if not exposes_layers(model):
        raise TypeError(f"{type(model).__name__} has no forward_layer(i, ...) method: "
                        f"layer-wise inference needs one (or use eval_method='sampled')")
    try:
        if layout == "blocks":
            out = model.forward_layer(index, block, h)
        elif layout == "dgl":
            out = model.forward_layer(index, as_dgl_block(import_dgl(), block), h)
        elif layout == "pyg":
            out = model.forward_layer(index, h, pyg_edge_index([block]))[:block.num_dst]
        else:
            adj_t = pyg_adj_t([block], block.num_src, h.dtype)
            out = model.forward_layer(index, h, adj_t)[:block.num_dst]
    except (TypeError, AttributeError, ValueError, IndexError) as exc:
        raise TypeError(f"layer {index} failed when called as {LAYER_CALLS[layout]} "
                        f"({type(exc).__name__}: {exc}); if the model takes another layout: "
                        f"{HINTS[layout]}") from exc
    if not isinstance(out, torch.Tensor) or out.dim() != 2 or out.shape[0] != block.num_dst:
        shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise ValueError(f"layer {index} returned {shape} when called as {LAYER_CALLS[layout]},"
                         f" not one row per destination ({block.num_dst})")
    return out
