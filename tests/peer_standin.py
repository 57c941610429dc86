"""A stand-in peer for the tests: the PeerAdapter protocol with plain torch parts, run by
gnnrepro.peers.serve in a child process of this venv's Python, as a real peer would be.

Its "sampler" takes each seed's first min(degree, fanout) in-neighbours of the last layer; its
loader yields the seeds' feature rows and labels; its model is a linear layer on them. Setting
STANDIN_FAIL=<op> makes that op raise, STANDIN_EXIT=<op> makes the process exit in it, and
STANDIN_HANG=<op> makes it sleep in it; STANDIN_SLOW=<seconds> makes each sampled batch
take that long.
"""
from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from typing import Any

import torch

from gnnrepro.peers.adapter import PeerAdapter


def _trouble(op: str) -> None:
    if os.environ.get("STANDIN_FAIL") == op:
        raise RuntimeError(f"stand-in told to fail in {op}")
    if os.environ.get("STANDIN_EXIT") == op:
        sys.exit(3)
    if os.environ.get("STANDIN_HANG") == op:
        time.sleep(60)


class Adapter(PeerAdapter):
    def build(self) -> None:
        _trouble("open")

    def versions(self) -> dict[str, str]:
        return {"torch": torch.__version__}

    def sample_stream(self, batches: torch.Tensor) -> Iterator[tuple[int, int]]:
        _trouble("sample")
        graph = self.data.graph
        for seeds in batches:
            time.sleep(float(os.environ.get("STANDIN_SLOW") or 0))
            degrees = graph.indptr[seeds + 1] - graph.indptr[seeds]
            edges = int(degrees.clamp(max=self.fanouts[-1]).sum())
            yield edges, seeds.numel() + edges

    def batches(self, ids: torch.Tensor, shuffle: bool, epoch: int) -> Iterator[tuple[Any, Any]]:
        order = self.epoch_order(ids, shuffle, epoch)
        for start in range(0, order.numel(), self.batch_size):
            part = order[start:start + self.batch_size]
            yield self.data.features[part], self.data.labels[part]

    def make_model(self, hidden: int, dropout: float) -> torch.nn.Module:
        _trouble("train")
        return torch.nn.Linear(self.data.num_features, self.data.num_classes)

    def logits(self, model: torch.nn.Module, batch: Any) -> torch.Tensor:
        return model(batch)
