"""Learnable node embeddings for featureless node types, and the optimisers that train them.

ogbn-mag has features on papers only; its authors, institutions and fields of study get a
learnable row each, as DGL's NodeEmbedding + SparseAdam and PyG's examples give them. A batch
reads only its input nodes' rows, so the gradient is sparse (`nn.Embedding(sparse=True)`: a
[rows looked up, dim] gradient, not [num_nodes, dim]) and SparseAdam updates those rows alone;
dense Adam on the table would touch (and keep moments for) every row at every step. The tables
are submodules of the model, so its state_dict, and thus a checkpoint, carries them.

`make_optimizers(model, lr)` splits a model's parameters accordingly (dense -> Adam, sparse
embeddings -> SparseAdam) and returns them as one OptimizerGroup, which steps, zeroes and
checkpoints like a single optimizer.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import nn

from gnnrepro.checks import check_int, check_positive_float
from gnnrepro.models.sparse_adam import SparseAdam

__all__ = ["NodeEmbeddings", "OptimizerGroup", "make_optimizers", "sparse_parameters"]


class NodeEmbeddings(nn.Module):
    """One learnable `dim`-wide row per node of each featureless type (`num_nodes[type]`
    rows), with sparse gradients; `forward(ids)` -> {type: rows of ids[type]}."""

    def __init__(self, num_nodes: Mapping[str, int], dim: int):
        super().__init__()
        if not isinstance(num_nodes, Mapping) or not num_nodes:
            raise TypeError("num_nodes must be a non-empty dict {featureless node type: count}")
        check_int("dim", dim, 1)
        tables = {}
        for t, n in num_nodes.items():
            if not isinstance(t, str) or not t or "." in t:
                raise ValueError(f"num_nodes: node type names must be non-empty str without "
                                 f"'.', got {t!r}")
            table = nn.Embedding(check_int(f"num_nodes[{t!r}]", n, 1), dim, sparse=True)
            nn.init.xavier_uniform_(table.weight)  # as DGL's ogbn-mag R-GCN initialises them
            tables[t] = table
        self.tables = nn.ModuleDict(tables)
        self.dim = dim

    @property
    def node_types(self) -> list[str]:
        return list(self.tables)

    def forward(self, ids: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """{type: [len(ids[type]), dim]} for every type with embeddings; `ids` (the batch's
        input nodes, type-local ids) must hold each of them."""
        out = {}
        for t, table in self.tables.items():
            if t not in ids:
                raise ValueError(f"input_nodes has no ids for featureless node type {t!r}, "
                                 f"whose embeddings the model reads")
            out[t] = table(ids[t].to(table.weight.device))
        return out


def sparse_parameters(model: nn.Module) -> list[nn.Parameter]:
    """The weights of `model`'s sparse-gradient embeddings (nn.Embedding(sparse=True))."""
    return [m.weight for m in model.modules()
            if isinstance(m, nn.Embedding) and m.sparse and m.weight.requires_grad]


class OptimizerGroup:
    """Several optimisers stepped as one: step, zero_grad, state_dict and load_state_dict as a
    single torch optimiser has them, so a loop and its checkpoints written for one optimiser
    take it unchanged. `optimizers` lists them (e.g. for one LR scheduler each)."""

    def __init__(self, optimizers: Sequence[torch.optim.Optimizer]):
        if not optimizers or not all(isinstance(o, torch.optim.Optimizer) for o in optimizers):
            raise TypeError("optimizers must be a non-empty list of torch optimizers")
        self.optimizers = list(optimizers)

    @property
    def param_groups(self) -> list[dict[str, Any]]:
        return [g for o in self.optimizers for g in o.param_groups]

    def zero_grad(self, set_to_none: bool = True) -> None:
        for o in self.optimizers:
            o.zero_grad(set_to_none=set_to_none)

    def step(self) -> None:
        for o in self.optimizers:
            o.step()

    def state_dict(self) -> dict[str, Any]:
        return {"optimizers": [o.state_dict() for o in self.optimizers]}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        states = state.get("optimizers") if isinstance(state, Mapping) else None
        if not isinstance(states, list) or len(states) != len(self.optimizers):
            raise ValueError(f"state must be an OptimizerGroup's state_dict with "
                             f"{len(self.optimizers)} optimizer states")
        for o, s in zip(self.optimizers, states):
            o.load_state_dict(s)

    def __repr__(self) -> str:
        return f"OptimizerGroup({', '.join(type(o).__name__ for o in self.optimizers)})"


def make_optimizers(model: nn.Module, lr: float = 1e-3,
                    sparse_lr: float | None = None) -> OptimizerGroup:
    """What trains `model`: Adam(lr) for its dense parameters and, where it has sparse
    embeddings (sparse_parameters), SparseAdam(sparse_lr, default lr) for those (dense Adam
    refuses sparse gradients)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    lr = check_positive_float("lr", lr)
    sparse = sparse_parameters(model)
    ids = {id(p) for p in sparse}
    dense = [p for p in model.parameters() if p.requires_grad and id(p) not in ids]
    optimizers: list[torch.optim.Optimizer] = []
    if dense:
        optimizers.append(torch.optim.Adam(dense, lr=lr))
    if sparse:
        optimizers.append(SparseAdam(
            sparse, lr=lr if sparse_lr is None else check_positive_float("sparse_lr", sparse_lr)))
    if not optimizers:
        raise ValueError(f"model ({type(model).__name__}) has no trainable parameters")
    return OptimizerGroup(optimizers)
