"""PeerAdapter: what every peer does the same way, in the peer's own process.

It loads the dataset from gnnrepro's cache (the same files our benchmarks read), times the
peer's sampler on given seed batches, times the peer's loader over an epoch, and trains the
peer's own model (Adam, cross-entropy), scoring it after every epoch on the validation ids with
the peer's own sampler. Training on a GPU is what the peer's users write: the peer's loader
on the CPU, each batch moved with `to_device` (`batch.to(device)`), the model on the GPU. A
subclass supplies the peer's parts: `build`, `sample_stream`, `batches`, `make_model` and
`logits` (and `to_device` where its batches move otherwise, `make_optimizer` where its model
is not stepped by Adam alone).
"""
from __future__ import annotations

import resource
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch

from gnnrepro.datasets import load_scaled
from gnnrepro.eval_subset import eval_subset
from gnnrepro.progress import Progress

__all__ = ["PeerAdapter"]


class PeerAdapter:
    """The ops gnnrepro.peers.serve dispatches; see the module doc. `beat()` (set by serve)
    proves progress during long ops; it is called after every batch."""

    #: Where train() runs the model (its batches moved there by to_device).
    device = torch.device("cpu")

    def beat(self) -> None:
        """No-op until serve replaces it."""

    def open(self, dataset: str, root: str | None, scale: float, fanouts: list[int],
             batch_size: int, threads: int, seed: int) -> dict[str, Any]:
        """Load the dataset and build the peer's objects; returns the peer's versions."""
        torch.set_num_threads(threads)
        self.data = load_scaled(dataset, root, scale)
        self.beat()  # each stage well within the silence limit (gnnrepro.peers.process)
        self.fanouts, self.batch_size, self.seed = list(fanouts), batch_size, seed
        self.threads = threads
        self.build()
        self.beat()
        edges = self.data.graph.num_edges  # a typed graph's: per relation
        return {"versions": self.versions(), "threads": torch.get_num_threads(),
                "num_edges": sum(edges.values()) if isinstance(edges, dict) else edges}

    def sample(self, seeds_file: str) -> dict[str, list]:
        """Time the peer's sampler on each row of the .npy file of seed batches: seconds,
        sampled edges and input nodes per batch."""
        batches = torch.from_numpy(np.load(seeds_file))
        seconds, edges, inputs = [], [], []
        stream = self.sample_stream(batches)
        while True:
            start = time.perf_counter()
            counts = next(stream, None)
            if counts is None:
                break
            seconds.append(time.perf_counter() - start)
            self.beat()
            edges.append(counts[0])
            inputs.append(counts[1])
        if len(seconds) != len(batches):
            raise RuntimeError(f"the peer sampled {len(seconds)} of {len(batches)} batches")
        return {"seconds": seconds, "edges": edges, "input_nodes": inputs}

    def loader_epoch(self, epoch: int) -> dict[str, float]:
        """Time one epoch of the peer's loader over the training ids (batches with their
        features and labels, no model)."""
        start, count = time.perf_counter(), 0
        for _ in self.batches(self.data.train_idx, shuffle=True, epoch=epoch):
            count += 1
            self.beat()
        return {"seconds": time.perf_counter() - start, "batches": count}

    def train(self, epochs: int, lr: float, hidden: int, dropout: float,
              device: str = "cpu", eval_ids: int | None = None) -> dict[str, Any]:
        """Train the peer's own model for `epochs` on `device`; each epoch's seconds (the
        batches' copies to the device included), mean loss and the validation accuracy after
        it (evaluation outside the epoch's time), and this process's peak RSS (dataset
        included, as for our pipelines' training processes). With `eval_ids`, validation and
        then test accuracy on the subsets our pipelines evaluate (gnnrepro.eval_subset)."""
        val_ids = eval_subset(self.data.val_idx, eval_ids, self.seed)
        self.device = torch.device(device)
        torch.manual_seed(self.seed)
        model = self.make_model(hidden, dropout).to(self.device)
        optimizer = self.make_optimizer(model, lr)
        epochs_s, losses, val_acc = [], [], []
        for epoch in range(epochs):
            model.train()
            start, loss_sum, seen = time.perf_counter(), 0.0, 0
            with Progress(f"{type(self).__module__} epoch {epoch}", None, "batches") as bar:
                for batch, y in self.batches(self.data.train_idx, shuffle=True, epoch=epoch):
                    batch, y = self.to_device(batch), y.to(self.device)
                    loss = torch.nn.functional.cross_entropy(self.logits(model, batch), y)
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                    loss_sum += loss.item() * y.numel()
                    seen += y.numel()
                    bar.update()
                    self.beat()
            epochs_s.append(time.perf_counter() - start)
            losses.append(loss_sum / max(seen, 1))
            val_acc.append(self.accuracy(model, val_ids))
        out: dict[str, Any] = {"epochs_s": epochs_s, "loss": losses, "val_acc": val_acc,
                               "eval_counts": {"val": val_ids.numel()}}
        if eval_ids is not None:
            test_ids = eval_subset(self.data.test_idx, eval_ids, self.seed)
            out["test_acc"] = self.accuracy(model, test_ids)
            out["eval_counts"]["test"] = test_ids.numel()
        out["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB
        return out

    @torch.no_grad()
    def accuracy(self, model: torch.nn.Module, ids: torch.Tensor) -> float:
        """Accuracy on `ids`, batches sampled by the peer with the training fanouts."""
        model.eval()
        correct = 0
        for batch, y in self.batches(ids, shuffle=False, epoch=0):
            batch, y = self.to_device(batch), y.to(self.device)
            correct += int((self.logits(model, batch).argmax(1) == y).sum())
            self.beat()
        return correct / max(ids.numel(), 1)

    def epoch_order(self, ids: torch.Tensor, shuffle: bool, epoch: int) -> torch.Tensor:
        """`ids` in this epoch's seeded order (unchanged without shuffle)."""
        if not shuffle:
            return ids
        generator = torch.Generator().manual_seed(self.seed * 1_000_003 + epoch)
        return ids[torch.randperm(ids.numel(), generator=generator)]

    def to_device(self, batch: Any) -> Any:
        """`batch` on self.device, as the peer's users move it (PyG's Data, DGL's blocks)."""
        return batch if self.device.type == "cpu" else batch.to(self.device)

    # --- the peer's parts -------------------------------------------------------------------
    def build(self) -> None:
        raise NotImplementedError

    def versions(self) -> dict[str, str]:
        raise NotImplementedError

    def sample_stream(self, batches: torch.Tensor) -> Iterator[tuple[int, int]]:
        """Sample each row of `batches` as one mini-batch (lazily: one per next(), which is
        what is timed); yields (sampled edges, input nodes)."""
        raise NotImplementedError

    def batches(self, ids: torch.Tensor, shuffle: bool, epoch: int) -> Iterator[tuple[Any, Any]]:
        """The peer's loader over `ids`: (what logits() takes, labels) per batch."""
        raise NotImplementedError

    def make_model(self, hidden: int, dropout: float) -> torch.nn.Module:
        raise NotImplementedError

    def logits(self, model: torch.nn.Module, batch: Any) -> torch.Tensor:
        raise NotImplementedError

    def make_optimizer(self, model: torch.nn.Module, lr: float) -> torch.optim.Optimizer:
        """What steps the peer's model: Adam over its parameters (a peer whose model has
        sparse embeddings replaces it)."""
        return torch.optim.Adam(model.parameters(), lr=lr)
