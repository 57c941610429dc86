"""Training and evaluating link prediction: a node encoder (e.g. GraphSAGE) and a pair scorer
(LinkPredictor) trained with binary cross-entropy on EdgeBatches (positives 1, negatives 0, as
OGB's and DGL's link examples), evaluated by MRR and Hits@K on a split's fixed negatives."""
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
from gnnrepro.training.layerwise import layerwise_predict

__all__ = ["EVAL_METHODS", "LinkTrainResult", "evaluate_link", "link_loss", "node_embeddings",
           "train_link"]

EVAL_METHODS = ("sampled", "layerwise")


def link_loss(encoder: nn.Module, predictor: nn.Module, batch: EdgeBatch) -> torch.Tensor:
    """Mean BCE of the positives (target 1) plus that of the negatives (target 0)."""
    h = encoder(batch.blocks, batch.x)
    src, dst = batch.pos
    pos = predictor(h[src], h[dst])
    neg_src = h[src].unsqueeze(1) if batch.neg_src is None else h[batch.neg_src]
    neg = predictor(neg_src, h[batch.neg_dst])
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
    """Adam on link_loss over `epochs` passes of `loader` (at most `max_steps` steps)."""
    params = list(encoder.parameters()) + list(predictor.parameters())
    optimizer = torch.optim.Adam(params, lr=lr)
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
                    sampler: Any = None, method: str = "sampled",
                    batch_size: int = 4096) -> tuple[torch.Tensor, torch.Tensor]:
    """(sorted unique `nodes`, the encoder's output for them), in eval mode: by sampled blocks
    of `sampler` (batch_size nodes a batch, batch ids 0, 1, ...) or layer-wise over every
    in-neighbour (a GraphSAGE encoder)."""
    if method not in EVAL_METHODS:
        raise ValueError(f"method must be one of {EVAL_METHODS}, got {method!r}")
    nodes = torch.unique(nodes)
    was_training = encoder.training
    encoder.eval()
    try:
        if method == "layerwise":
            return layerwise_predict(encoder, dataset.graph, dataset.features, nodes,
                                     torch.device("cpu"))
        if sampler is None:
            raise ValueError("method='sampled' needs a sampler")
        parts = []
        with Progress("link embeddings", total=nodes.numel(), unit="node") as bar:
            for i, start in enumerate(range(0, nodes.numel(), batch_size)):
                chunk = nodes[start:start + batch_size]
                mb = sampler.sample(chunk, batch_id=i)
                parts.append(encoder(mb.blocks, dataset.features[mb.input_nodes]))
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
    {split}_src, {split}_dst and fixed negatives {split}_neg), plus the seconds it took."""
    if split not in ("val", "test"):
        raise ValueError(f"split must be 'val' or 'test', got {split!r}")
    start = time.perf_counter()
    src, dst, neg = (getattr(dataset, f"{split}_{k}") for k in ("src", "dst", "neg"))
    nodes, emb = node_embeddings(encoder, dataset, torch.cat([src, dst, neg.reshape(-1)]),
                                 sampler, method, batch_size)
    was_training = predictor.training
    predictor.eval()
    pos_scores, neg_scores = [], []
    for q in range(0, src.numel(), queries_per_chunk):
        rows = slice(q, q + queries_per_chunk)
        h_src = emb[torch.searchsorted(nodes, src[rows])]
        pos_scores.append(predictor(h_src, emb[torch.searchsorted(nodes, dst[rows])]))
        neg_scores.append(predictor(h_src.unsqueeze(1), emb[torch.searchsorted(nodes, neg[rows])]))
    predictor.train(was_training)
    out = mrr_and_hits(torch.cat(pos_scores), torch.cat(neg_scores))
    out["seconds"] = time.perf_counter() - start
    return out
