"""A peer trains its own model where the run's device is, as its users write it: the peer's
loader on the CPU, each batch moved with `to_device`, the model on the device; the same losses
on cpu and cuda to within float tolerance."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import torch
from torch import nn

from gnnrepro.peers.adapter import PeerAdapter


class _TinyPeer(PeerAdapter):
    """Batches of random rows and labels (a stand-in for a peer's loader), a linear model;
    records the device each batch reached the model on."""

    def build(self) -> None:
        self.seen_on: set[str] = set()

    def versions(self) -> dict[str, str]:
        return {}

    def batches(self, ids: torch.Tensor, shuffle: bool, epoch: int) -> Iterator[tuple[Any, Any]]:
        ids = self.epoch_order(ids, shuffle, epoch)
        for start in range(0, ids.numel(), self.batch_size):
            part = ids[start:start + self.batch_size]
            yield self.data.features[part], self.data.labels[part]

    def make_model(self, hidden: int, dropout: float) -> nn.Module:
        return nn.Linear(self.data.num_features, self.data.num_classes)

    def logits(self, model: nn.Module, batch: Any) -> torch.Tensor:
        self.seen_on.add(batch.device.type)
        return model(batch)


def test_a_peer_trains_on_the_runs_device(device, bench_env) -> None:
    peer = _TinyPeer()
    peer.open("products-sim", None, 0.002, [3, 2], 64, 1, 0)
    out = peer.train(epochs=2, lr=0.01, hidden=8, dropout=0.0, device=device)
    assert peer.seen_on == {device} and len(out["loss"]) == 2
    assert all(0 <= acc <= 1 for acc in out["val_acc"])
    if device == "cuda":  # the same training as on the CPU
        cpu = _TinyPeer()
        cpu.open("products-sim", None, 0.002, [3, 2], 64, 1, 0)
        assert cpu.train(epochs=2, lr=0.01, hidden=8, dropout=0.0)["loss"] == pytest.approx(
            out["loss"], rel=1e-4)
