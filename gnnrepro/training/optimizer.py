"""The optimizer train() steps: Adam, or for a model with sparse-gradient embeddings (learnt
rows of featureless node types: gnnrepro.models.embeddings) Adam for its dense weights and
SparseAdam for the embeddings, stepped and checkpointed as one."""
from __future__ import annotations

import torch
from torch import nn

from gnnrepro.models.embeddings import OptimizerGroup, make_optimizers, sparse_parameters

__all__ = ["make_optimizer", "optimizer_name"]


def make_optimizer(model: nn.Module, lr: float) -> torch.optim.Optimizer | OptimizerGroup:
    """Adam(lr) over `model`'s parameters; Adam + SparseAdam where it has sparse embeddings
    (dense Adam refuses sparse gradients)."""
    if sparse_parameters(model):
        return make_optimizers(model, lr)
    return torch.optim.Adam(model.parameters(), lr=lr)


def optimizer_name(optimizer: object) -> str:
    """What a result and a checkpoint's identity record: "Adam" or "Adam+SparseAdam"."""
    if isinstance(optimizer, OptimizerGroup):
        return "+".join(type(o).__name__ for o in optimizer.optimizers)
    return type(optimizer).__name__
