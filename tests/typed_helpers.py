"""Small typed graphs for the typed models' tests (R-GCN, R-GAT): a random one with featured,
featureless and edgeless parts, and a planted task whose label only a relation reveals."""
from __future__ import annotations

import torch
from torch import nn

from gnnrepro.models import MLP, make_optimizers
from gnnrepro.sampling import FusedSampler, MiniBatch
from gnnrepro.typed_graph import TypedGraph

NUM_NODES = {"paper": 120, "author": 80, "inst": 40, "venue": 3}
WRITES = ("author", "writes", "paper")
REV_WRITES = ("paper", "rev_writes", "author")
CITES = ("paper", "cites", "paper")
AFFIL = ("author", "affiliated_with", "inst")
REV_AFFIL = ("inst", "rev_affiliated_with", "author")
HOSTS = ("venue", "hosts", "paper")  # no edges at all
FEATURE_DIMS = {"paper": 6, "author": 5}  # inst and venue are featureless
FEATURELESS = {"inst": NUM_NODES["inst"], "venue": NUM_NODES["venue"]}


def typed_graph(seed: int = 0) -> tuple[TypedGraph, dict[str, torch.Tensor]]:
    """(graph, features of the featured types): random relations with their reverses, skewed
    degrees, an edgeless relation."""
    gen = torch.Generator().manual_seed(seed)

    def rnd(src: str, dst: str, e: int) -> tuple[torch.Tensor, torch.Tensor]:
        d = (torch.rand(e, generator=gen) ** 2 * NUM_NODES[dst]).long()
        return torch.randint(0, NUM_NODES[src], (e,), generator=gen), d

    writes, affil = rnd("author", "paper", 400), rnd("author", "inst", 120)
    edges = {WRITES: writes, REV_WRITES: (writes[1], writes[0]), CITES: rnd("paper", "paper", 500),
             AFFIL: affil, REV_AFFIL: (affil[1], affil[0]),
             HOSTS: (torch.empty(0, dtype=torch.long), torch.empty(0, dtype=torch.long))}
    features = {t: torch.randn(NUM_NODES[t], d, generator=gen) for t, d in FEATURE_DIMS.items()}
    return TypedGraph.from_edges(NUM_NODES, edges), features


def inputs(batch: MiniBatch, features: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """x of a typed batch: the featured types' rows of its input nodes."""
    return {t: x[batch.input_nodes[t]] for t, x in features.items()}


class Planted:
    """Papers in 4 classes, each written by 2 authors of its class; authors' features hold
    their class, papers' are noise, citations are random: a paper's label is recoverable only
    through `writes`. Papers 0-299 train, 300-399 test."""

    num_classes = 4
    dims = {"paper": 8, "author": 8}

    def __init__(self, seed: int = 0):
        gen = torch.Generator().manual_seed(seed)
        num = {"paper": 400, "author": 120}
        author_class = torch.randperm(num["author"], generator=gen) % self.num_classes
        self.labels = torch.randint(0, self.num_classes, (num["paper"],), generator=gen)
        by_class = [torch.nonzero(author_class == c).squeeze(1) for c in range(self.num_classes)]
        writers = torch.stack([by_class[int(c)][torch.randint(0, by_class[int(c)].numel(), (2,),
                                                              generator=gen)]
                               for c in self.labels])
        src, dst = writers.reshape(-1), torch.arange(num["paper"]).repeat_interleave(2)
        cites = (torch.randint(0, num["paper"], (1200,), generator=gen),
                 torch.randint(0, num["paper"], (1200,), generator=gen))
        self.graph = TypedGraph.from_edges(num, {WRITES: (src, dst), REV_WRITES: (dst, src),
                                                 CITES: cites})
        author_x = torch.randn(num["author"], 8, generator=gen) * 0.5
        author_x[torch.arange(num["author"]), author_class] += 2.0
        self.features = {"paper": torch.randn(num["paper"], 8, generator=gen),
                         "author": author_x}
        self.train_idx, self.test_idx = torch.arange(300), torch.arange(300, 400)

    def train_typed(self, model: nn.Module, fanouts: list[int], steps: int, lr: float,
                    batch_size: int = 32, seed: int = 0) -> float:
        """Train `model` (a typed model) for `steps` batches; its test accuracy."""
        torch.manual_seed(seed)
        sampler = FusedSampler(self.graph, fanouts, seed=seed)
        optimizer = make_optimizers(model, lr)
        gen = torch.Generator().manual_seed(seed)
        model.train()
        for step in range(steps):
            seeds = self.train_idx[torch.randperm(300, generator=gen)[:batch_size]]
            batch = sampler.sample({"paper": seeds}, batch_id=step)
            loss = nn.functional.cross_entropy(model(batch.blocks, inputs(batch, self.features)),
                                               self.labels[seeds])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            batch = sampler.sample({"paper": self.test_idx}, batch_id=steps)
            pred = model(batch.blocks, inputs(batch, self.features)).argmax(1)
        return (pred == self.labels[self.test_idx]).float().mean().item()

    def mlp_accuracy(self, steps: int, seed: int = 0) -> float:
        """An MLP on the papers' own features, trained as long: its test accuracy."""
        torch.manual_seed(seed)
        model = MLP(self.dims["paper"], 16, self.num_classes, num_layers=2, dropout=0.0)
        optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
        x = self.features["paper"]
        for _ in range(steps):
            ids = self.train_idx[torch.randint(0, 300, (32,))]
            loss = nn.functional.cross_entropy(model(x[ids]), self.labels[ids])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            pred = model(x[self.test_idx]).argmax(1)
        return (pred == self.labels[self.test_idx]).float().mean().item()
