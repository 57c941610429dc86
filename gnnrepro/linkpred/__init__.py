"""Link prediction on the fused sampler: edge mini-batches with negatives and exclusion
(LinkSampler, EdgeBatch), a pair scorer (LinkPredictor), training and OGB-style ranking
evaluation (train_link, evaluate_link, mrr_and_hits)."""
from __future__ import annotations

from gnnrepro.linkpred.edge_batch import EdgeBatch
from gnnrepro.linkpred.link_sampler import LinkSampler
from gnnrepro.linkpred.metrics import mrr_and_hits
from gnnrepro.linkpred.model import LinkPredictor
from gnnrepro.linkpred.train import evaluate_link, train_link

__all__ = ["EdgeBatch", "LinkPredictor", "LinkSampler", "evaluate_link", "mrr_and_hits",
           "train_link"]
