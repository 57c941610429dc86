"""PartitionedFeatures: feature rows of any node, wherever it is owned, in one all-to-all per
batch. A machine reads its own part's rows in place and asks each other machine for the rows
it owns (by their local ids); the answers come back in request order. It is a FeatureStore, so
the Loader gathers from it as from any other store."""
from __future__ import annotations

from collections.abc import Sequence

import torch

from gnnrepro.distributed.partitioned.exchange import Exchange
from gnnrepro.features.store import FeatureStore
from gnnrepro.partition.manifest import PartData

__all__ = ["PartitionedFeatures"]

_EMPTY = torch.empty(0, dtype=torch.int64)


class PartitionedFeatures(FeatureStore):
    """Rows of the partitioned feature matrix for global node ids (see the module doc).
    Every rank must call `gather` the same number of times, in the same order (a Loader's
    single worker thread: "share"). `stats` counts rows and the remote ones."""

    thread_use = "share"

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
    def num_nodes(self) -> int:
        return int(self.node_part.numel())

    @property
    def dim(self) -> int:
        return int(self.features.shape[1])

    @property
    def dtype(self) -> torch.dtype:
        return self.features.dtype

    def nbytes(self) -> int:
        """Bytes of the whole (partitioned) table."""
        return self.num_nodes * self.dim * self.features.element_size()

    def gather(self, ids: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        """[len(ids), dim]: the features of global node ids `ids`, in order, written into
        `out[:len(ids)]` when given."""
        nodes, out = self.gather_args(ids, out)
        return self._exchange_rows(nodes, out[: nodes.numel()])

    def _exchange_rows(self, nodes: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
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
        for p, where in enumerate(positions):
            if p == self.part:
                out[where] = self.features[local_ids[p]]
            elif where.numel():
                out[where] = replies[self.rank_of_part[p]].view(-1, self.dim)
        self.stats["rows"] += nodes.numel()
        self.stats["remote_rows"] += nodes.numel() - counts[self.part]
        return out
