"""GraphBolt, DGL's current pipeline, as DGL 2.1's GraphBolt examples use it: an ItemSampler
over the seed ids -> sample_neighbor on a FusedCSCSamplingGraph -> fetch_feature from a
BasicFeatureStore, iterated by gb.DataLoader (no worker processes), feeding DGL's SAGEConv
model on the mini-batch's DGL blocks. Runs only in the graphbolt environment (torch 2.2.1)."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from gnnrepro.peers.adapter import PeerAdapter

__all__ = ["Adapter"]


class _SAGE(nn.Module):
    """DGL's example GraphSAGE: SAGEConv('mean') layers, ReLU and dropout between them."""

    def __init__(self, dims: list[int], dropout: float):
        super().__init__()
        from dgl.nn import SAGEConv
        self.layers = nn.ModuleList(SAGEConv(a, b, "mean") for a, b in zip(dims, dims[1:]))
        self.dropout = nn.Dropout(dropout)

    def forward(self, blocks: list, x: torch.Tensor) -> torch.Tensor:
        h = x
        for i, (layer, block) in enumerate(zip(self.layers, blocks)):
            h = layer(block, h)
            if i < len(self.layers) - 1:
                h = self.dropout(torch.relu(h))
        return h


class Adapter(PeerAdapter):
    """GraphBolt's sampler, loader and model (see the module doc)."""

    def build(self) -> None:
        import dgl.graphbolt as gb
        self.gb = gb
        graph = self.data.graph
        # The cache's int32 indices as they are: GraphBolt at its best (half the bytes).
        self.graph = gb.fused_csc_sampling_graph(graph.indptr, graph.indices)
        self.features = gb.BasicFeatureStore(
            {("node", None, "feat"): gb.TorchBasedFeature(self.data.features)})

    def versions(self) -> dict[str, str]:
        import dgl
        return {"dgl": dgl.__version__, "torch": torch.__version__}

    def _pipe(self, ids: torch.Tensor, shuffle: bool, epoch: int, features: bool) -> Any:
        gb = self.gb
        ids = self.epoch_order(ids, shuffle, epoch)  # the shuffle, seeded per epoch
        labels = self.data.labels[ids]
        ids = ids.to(self.graph.indices.dtype)  # GraphBolt's seeds are in the graph's id type
        items = gb.ItemSet((ids, labels), names=("seed_nodes", "labels"))
        pipe = gb.ItemSampler(items, batch_size=self.batch_size, shuffle=False)
        pipe = pipe.sample_neighbor(self.graph, self.fanouts)
        if features:
            pipe = pipe.fetch_feature(self.features, node_feature_keys=["feat"])
        return pipe

    def sample_stream(self, batches: torch.Tensor) -> Iterator[tuple[int, int]]:
        if batches.shape[1] != self.batch_size:
            raise ValueError(f"seed batches of {batches.shape[1]} ids, but batch_size is "
                             f"{self.batch_size}")
        for mb in self._pipe(batches.reshape(-1), shuffle=False, epoch=0, features=False):
            edges = sum(int(sg.sampled_csc.indices.numel()) for sg in mb.sampled_subgraphs)
            yield edges, int(mb.input_nodes.numel())

    def batches(self, ids: torch.Tensor, shuffle: bool, epoch: int) -> Iterator[tuple[Any, Any]]:
        loader = self.gb.DataLoader(self._pipe(ids, shuffle, epoch, features=True),
                                    num_workers=0)
        for mb in loader:
            yield (mb.blocks, mb.node_features["feat"]), mb.labels

    def to_device(self, batch: Any) -> Any:
        blocks, x = batch
        if self.device.type == "cpu":
            return batch
        return [block.to(self.device) for block in blocks], x.to(self.device)

    def make_model(self, hidden: int, dropout: float) -> nn.Module:
        dims = ([self.data.num_features] + [hidden] * (len(self.fanouts) - 1)
                + [self.data.num_classes])
        return _SAGE(dims, dropout)

    def logits(self, model: nn.Module, batch: Any) -> torch.Tensor:
        blocks, x = batch
        return model(blocks, x)
