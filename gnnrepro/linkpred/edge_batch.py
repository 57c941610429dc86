"""EdgeBatch: a link-prediction mini-batch, a MiniBatch whose seeds are the nodes of its edges.

The blocks are sampled from the unique endpoints of the batch's positive edges and of their
negatives (the seeds, sorted; on a temporal sampler each endpoint a seed of its own, at its
edge's time), so the model's output rows are the seeds' and the edges index them: `pos` [2, B] the local (source, destination) rows of the positives, `neg_dst` [B, k]
each positive's negative destinations, whose sources are the positive's unless `neg_src`
[B, k] gives them (PyG's binary negatives draw both endpoints). On a typed graph, with
`relation` (src type, name, dst type), sources index the source type's seeds and
destinations the destination type's (a typed model's outputs of those types).
"""
from __future__ import annotations

from dataclasses import dataclass, fields

import torch

from gnnrepro.sampling.block import MiniBatch, TensorFn
from gnnrepro.typed_graph import Relation

__all__ = ["EdgeBatch"]


@dataclass
class EdgeBatch(MiniBatch):
    """A MiniBatch plus the batch's edges as rows of the seeds (module docstring)."""

    pos: torch.Tensor | None = None       # int64 [2, B]
    neg_dst: torch.Tensor | None = None   # int64 [B, k]
    edge_ids: torch.Tensor | None = None  # int64 [B]: the positives' edge ids
    neg_src: torch.Tensor | None = None   # int64 [B, k], or None: the positives' sources
    relation: Relation | None = None      # the predicted relation of a typed graph

    @property
    def seed_ids(self) -> torch.Tensor:
        """No node labels: a Loader attaches an empty y (the targets are `pos` / `neg_dst`)."""
        return torch.empty(0, dtype=torch.int64)

    def apply(self, fn: TensorFn) -> "EdgeBatch":
        """This batch with `fn` applied to each of its tensors once."""
        base = MiniBatch.apply(self, fn)
        extra = {name: None if t is None else fn(t) for name, t in self._edges().items()}
        return EdgeBatch(**{f.name: getattr(base, f.name) for f in fields(MiniBatch)}, **extra,
                         relation=self.relation)

    def tensors(self) -> list[torch.Tensor]:
        return MiniBatch.tensors(self) + [t for t in self._edges().values() if t is not None]

    def _edges(self) -> dict[str, torch.Tensor | None]:
        return {"pos": self.pos, "neg_dst": self.neg_dst, "edge_ids": self.edge_ids,
                "neg_src": self.neg_src}
