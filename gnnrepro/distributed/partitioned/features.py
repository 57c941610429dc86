"""PartitionedFeatures: feature rows of any node, wherever it is owned, in one all-to-all per
batch. A machine reads its own part's rows in place and asks each other machine for the rows
it owns (by their local ids); the answers come back in request order."""
from __future__ import annotations

from collections.abc import Sequence

import torch

from gnnrepro.distributed.partitioned.exchange import Exchange
from gnnrepro.partition.manifest import PartData

__all__ = ["PartitionedFeatures"]

_EMPTY = torch.empty(0, dtype=torch.int64)


class PartitionedFeatures:
    """Rows of the partitioned feature matrix for global node ids (see the module doc).
    Every rank must call `rows` the same number of times. `stats` counts rows and the
    remote ones."""

    def __init__(self, part: PartData, node_part: torch.Tensor, node_local: torch.Tensor,
                 exchange: Exchange, rank_of_part: Sequence[int]):
        if node_part.shape != node_local.shape:
            raise ValueError(f"node_part {tuple(node_part.shape)} and node_local "
                             f"{tuple(node_local.shape)} must have one entry per node")
        if rank_of_part[part.part] != exchange.rank:
            raise ValueError(f"rank_of_part[{part.part}] must be this rank ({exchange.rank}), "
                             f"got {rank_of_part[part.part]}")
        self.part = part.part
        self.features = part.features
        self.node_part = node_part
        self.node_local = node_local
        self.exchange = exchange
        self.rank_of_part = list(rank_of_part)
        self.stats = {"rows": 0, "remote_rows": 0}

    @property
    def num_features(self) -> int:
        return self.features.shape[1]

    def rows(self, nodes: torch.Tensor) -> torch.Tensor:
        """float32 [len(nodes), F]: the features of global node ids `nodes`, in order."""
        owner = self.node_part[nodes].to(torch.int64)
        order = torch.argsort(owner, stable=True)
        counts = torch.bincount(owner, minlength=len(self.rank_of_part)).tolist()
        positions = order.split(counts)
        local_ids = self.node_local[nodes[order]].split(counts)
        sends = [_EMPTY] * self.exchange.world_size
        for p, ids in enumerate(local_ids):
            if p != self.part:
                sends[self.rank_of_part[p]] = ids
        requests = self.exchange.all_to_all(sends, "features")
        answers = [self.features[ids].reshape(-1) for ids in requests]
        replies = self.exchange.all_to_all(answers, "features")
        out = torch.empty(nodes.numel(), self.num_features, dtype=self.features.dtype)
        for p, where in enumerate(positions):
            if p == self.part:
                out[where] = self.features[local_ids[p]]
            elif where.numel():
                out[where] = replies[self.rank_of_part[p]].view(-1, self.num_features)
        self.stats["rows"] += nodes.numel()
        self.stats["remote_rows"] += nodes.numel() - counts[self.part]
        return out
