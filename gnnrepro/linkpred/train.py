"""Training and evaluating link prediction: a node encoder (e.g. GraphSAGE; on a typed graph a
TypedModel such as R-GCN or R-GAT) and a pair scorer (LinkPredictor) trained with binary
cross-entropy on EdgeBatches (positives 1, negatives 0, as OGB's and DGL's link examples),
evaluated by MRR and Hits@K on a split's fixed negatives.

On a typed graph the encoder gives rows per node type (`type_outputs`) and the scorer pairs the
relation's source-type rows with its destination-type rows, as DGL's heterogeneous link
prediction scores one edge type. Evaluation embeds each endpoint type's query nodes by sampled
blocks or layer-wise over every in-neighbour (`method="layerwise"`: GraphSAGE, or a model with
typed layers, gnnrepro.training.typed_layer_by_layer).
"""
from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from gnnrepro.linkpred.edge_batch import EdgeBatch
from gnnrepro.linkpred.metrics import mrr_and_hits
from gnnrepro.progress import Progress
from gnnrepro.training.evaluate import input_rows
from gnnrepro.training.layerwise import layerwise_predict
from gnnrepro.training.optimizer import make_optimizer
from gnnrepro.training.typed_layer_by_layer import typed_layer_by_layer_predict
from gnnrepro.typed_graph import Relation, TypedGraph

__all__ = ["EVAL_METHODS", "LinkTrainResult", "evaluate_link", "link_loss", "node_embeddings",
           "train_link"]

EVAL_METHODS = ("sampled", "layerwise")


def _outputs(encoder: nn.Module, blocks: list, x: Any,
             relation: Relation | None) -> tuple[torch.Tensor, torch.Tensor]:
    """(source rows, destination rows) of the encoder on a batch: its one output twice, or on
    a typed graph its outputs of the relation's source and destination types."""
    if relation is None:
        h = encoder(blocks, x)
        return h, h
    h_src, h_dst = _typed_rows(encoder, blocks, x, relation[0], relation[2])
    return h_src, h_dst


def _typed_rows(encoder: nn.Module, blocks: list, x: Any, *ntypes: str) -> list[torch.Tensor]:
    """A typed encoder's rows of each of `ntypes`: TypeError for an encoder without rows per
    type, ValueError for a type it gives none of."""
    if not callable(getattr(encoder, "type_outputs", None)):
        raise TypeError(f"encoder of a typed graph must give rows per node type "
                        f"(type_outputs(blocks, x), as gnnrepro.models.TypedModel), got "
                        f"{type(encoder).__name__}")
    out = encoder.type_outputs(blocks, x)
    for ntype in ntypes:
        if ntype not in out:
            raise ValueError(f"encoder gives no rows of node type {ntype!r} (it outputs "
                             f"{sorted(out)}): its last layer needs a relation into {ntype!r}")
    return [out[t] for t in ntypes]


def link_loss(encoder: nn.Module, predictor: nn.Module, batch: EdgeBatch) -> torch.Tensor:
    """Mean BCE of the positives (target 1) plus that of the negatives (target 0)."""
    h_src, h_dst = _outputs(encoder, batch.blocks, batch.x, batch.relation)
    src, dst = batch.pos
    pos = predictor(h_src[src], h_dst[dst])
    neg_src = h_src[src].unsqueeze(1) if batch.neg_src is None else h_src[batch.neg_src]
    neg = predictor(neg_src, h_dst[batch.neg_dst])
    return (F.binary_cross_entropy_with_logits(pos, torch.ones_like(pos))
            + F.binary_cross_entropy_with_logits(neg, torch.zeros_like(neg)))


@dataclass
class LinkTrainResult:
    """Per step its loss and seconds (loader wait included); `steps` taken."""

    losses: list[float] = field(default_factory=list)
    step_s: list[float] = field(default_factory=list)

    @property
    def steps(self) -> int:
        return len(self.losses)


def train_link(loader: Iterable[EdgeBatch], encoder: nn.Module, predictor: nn.Module, *,
               epochs: int = 1, max_steps: int | None = None, lr: float = 0.005
               ) -> LinkTrainResult:
    """Adam on link_loss over `epochs` passes of `loader` (at most `max_steps` steps);
    SparseAdam for an encoder's learnt embeddings of featureless node types."""
    optimizer = make_optimizer(nn.ModuleList([encoder, predictor]), lr)
    encoder.train()
    predictor.train()
    result = LinkTrainResult()
    total = None if max_steps is None else max_steps
    with Progress("train link prediction", total=total, unit="step") as bar:
        for _ in range(epochs):
            start = time.perf_counter()
            for batch in loader:
                loss = link_loss(encoder, predictor, batch)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                result.losses.append(float(loss.detach()))
                now = time.perf_counter()
                result.step_s.append(now - start)
                start = now
                bar.update()
                if max_steps is not None and result.steps >= max_steps:
                    return result
    return result


@torch.no_grad()
def node_embeddings(encoder: nn.Module, dataset: Any, nodes: torch.Tensor,
                    sampler: Any = None, method: str = "sampled", batch_size: int = 4096,
                    node_type: str | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(sorted unique `nodes`, the encoder's output for them), in eval mode: by sampled blocks
    of `sampler` (batch_size nodes a batch, batch ids 0, 1, ...) or layer-wise over every
    in-neighbour (a GraphSAGE encoder, or a typed one with layers). On a typed dataset the
    nodes are of `node_type` and the outputs the encoder's rows of that type."""
    if method not in EVAL_METHODS:
        raise ValueError(f"method must be one of {EVAL_METHODS}, got {method!r}")
    typed = node_type is not None
    if typed != isinstance(dataset.graph, TypedGraph):
        raise ValueError("node_type names the nodes' type on a typed dataset, and only there")
    nodes = torch.unique(nodes)
    was_training = encoder.training
    encoder.eval()
    try:
        if method == "layerwise":
            if typed:
                return typed_layer_by_layer_predict(encoder, dataset.graph, dataset.features,
                                                    nodes, torch.device("cpu"),
                                                    encoder.num_layers, target=node_type)
            return layerwise_predict(encoder, dataset.graph, dataset.features, nodes,
                                     torch.device("cpu"))
        if sampler is None:
            raise ValueError("method='sampled' needs a sampler")
        parts = []
        with Progress("link embeddings", total=nodes.numel(), unit="node") as bar:
            for i, start in enumerate(range(0, nodes.numel(), batch_size)):
                chunk = nodes[start:start + batch_size]
                mb = sampler.sample({node_type: chunk} if typed else chunk, batch_id=i)
                x = input_rows(dataset, None, mb.input_nodes)
                parts.append(_typed_rows(encoder, mb.blocks, x, node_type)[0]
                             if typed else encoder(mb.blocks, x))
                bar.update(chunk.numel())
        dim = parts[0].shape[1] if parts else 0
        return nodes, torch.cat(parts) if parts else torch.empty(0, dim)
    finally:
        encoder.train(was_training)


@torch.no_grad()
def evaluate_link(encoder: nn.Module, predictor: nn.Module, dataset: Any, split: str = "val",
                  sampler: Any = None, method: str = "sampled", batch_size: int = 4096,
                  queries_per_chunk: int = 256) -> dict[str, float]:
    """MRR and Hits@1/3/10 (OGB's ranking) of `split` ("val" or "test": the dataset's
    {split}_src, {split}_dst and fixed negatives {split}_neg), plus the seconds it took. On a
    typed dataset (TypedLinkDataset) the sources are of its relation's source type and the
    destinations and negatives of its destination type."""
    if split not in ("val", "test"):
        raise ValueError(f"split must be 'val' or 'test', got {split!r}")
    start = time.perf_counter()
    src, dst, neg = (getattr(dataset, f"{split}_{k}") for k in ("src", "dst", "neg"))
    ends = torch.cat([dst, neg.reshape(-1)])
    relation = getattr(dataset, "relation", None)
    if relation is None or relation[0] == relation[2]:
        ntype = None if relation is None else relation[0]
        src_nodes, src_emb = node_embeddings(encoder, dataset, torch.cat([src, ends]), sampler,
                                             method, batch_size, ntype)
        dst_nodes, dst_emb = src_nodes, src_emb
    else:
        src_nodes, src_emb = node_embeddings(encoder, dataset, src, sampler, method,
                                             batch_size, relation[0])
        dst_nodes, dst_emb = node_embeddings(encoder, dataset, ends, sampler, method,
                                             batch_size, relation[2])
    was_training = predictor.training
    predictor.eval()
    pos_scores, neg_scores = [], []
    for q in range(0, src.numel(), queries_per_chunk):
        rows = slice(q, q + queries_per_chunk)
        h_src = src_emb[torch.searchsorted(src_nodes, src[rows])]
        pos_scores.append(predictor(h_src, dst_emb[torch.searchsorted(dst_nodes, dst[rows])]))
        neg_scores.append(predictor(h_src.unsqueeze(1),
                                    dst_emb[torch.searchsorted(dst_nodes, neg[rows])]))
    predictor.train(was_training)
    out = mrr_and_hits(torch.cat(pos_scores), torch.cat(neg_scores))
    out["seconds"] = time.perf_counter() - start
    return out
