"""GraphBolt on a typed graph, as DGL 2.1's GraphBolt R-GCN example for ogbn-mag
(examples/sampling/graphbolt/rgcn) uses it: one FusedCSCSamplingGraph over every node type
(their ids side by side, `node_type_offset`) whose in-edges per node are sorted by relation
(`type_per_edge`), seeds given per type (an ItemSetDict), `sample_neighbor` (one fanout for all
relations), `fetch_feature` of the featured types, and DGL's HeteroGraphConv on the mini-batch's
heterogeneous blocks: a SAGEConv('mean') per relation summed into each destination type, with a
learnt embedding table per featureless type (sparse gradients, torch's SparseAdam). Runs only in
the graphbolt environment (torch 2.2.1), for the typed datasets.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import torch
from torch import nn

from gnnrepro.peers.adapter import PeerAdapter
from gnnrepro.peers.embedding_optimizer import (DenseAndSparseAdam, embedding_tables,
                                                 layer_widths)

__all__ = ["Adapter", "fused_typed_csc"]


def fused_typed_csc(num_nodes: Mapping[str, int], relations: Mapping[tuple[str, str, str], Any]
                    ) -> dict[str, Any]:
    """One CSC over every node type (type t's nodes at offset[t]), each destination's in-edges
    ordered by relation (stable: a relation's own order kept), as GraphBolt's heterogeneous
    graph holds them: the keyword arguments of gb.fused_csc_sampling_graph."""
    types = list(num_nodes)
    offset = dict(zip(types, torch.tensor([0, *num_nodes.values()]).cumsum(0).tolist()))
    total = sum(num_nodes.values())
    sources, destinations, kinds = [], [], []
    for kind, ((src, _, dst), csc) in enumerate(relations.items()):
        degrees = csc.indptr[1:] - csc.indptr[:-1]
        destinations.append(torch.repeat_interleave(
            torch.arange(num_nodes[dst], dtype=torch.int64), degrees) + offset[dst])
        sources.append(csc.indices.to(torch.int64) + offset[src])
        kinds.append(torch.full((csc.indices.numel(),), kind, dtype=torch.int64))
    dst, src, kind = torch.cat(destinations), torch.cat(sources), torch.cat(kinds)
    order = torch.sort(dst * len(relations) + kind, stable=True).indices
    indptr = torch.zeros(total + 1, dtype=torch.int64)
    indptr[1:] = torch.bincount(dst, minlength=total).cumsum(0)
    index_dtype = torch.int32 if total < 2**31 else torch.int64
    return {"csc_indptr": indptr, "indices": src[order].to(index_dtype),
            "node_type_offset": torch.tensor([offset[t] for t in types] + [total]),
            "type_per_edge": kind[order],
            "node_type_to_id": {t: i for i, t in enumerate(types)},
            "edge_type_to_id": {":".join(rel): i for i, rel in enumerate(relations)}}


class _HeteroSAGE(nn.Module):
    """HeteroGraphConv layers of a SAGEConv('mean') per relation (aggregate 'sum'), ReLU and
    dropout between them, embedding tables for the featureless types."""

    def __init__(self, relations: Sequence[tuple[str, str, str]], num_nodes: Mapping[str, int],
                 in_dims: Mapping[str, int], hidden: int, out_dim: int, num_layers: int,
                 dropout: float, target: str):
        super().__init__()
        from dgl.nn import HeteroGraphConv, SAGEConv
        self.embeddings = embedding_tables(num_nodes, in_dims)
        self.layers = nn.ModuleList(
            HeteroGraphConv({rel: SAGEConv((dims[src], dims[dst]), width, "mean")
                             for src, rel, dst in relations}, aggregate="sum")
            for dims, width in layer_widths(num_nodes, in_dims, hidden, out_dim, num_layers))
        self.dropout = nn.Dropout(dropout)
        self.target = target

    def forward(self, blocks: list, features: dict[str, torch.Tensor],
                input_nodes: dict[str, torch.Tensor]) -> torch.Tensor:
        h = dict(features)
        h |= {t: table(input_nodes[t]) for t, table in self.embeddings.items()
              if t in input_nodes}
        for i, (layer, block) in enumerate(zip(self.layers, blocks)):
            h = layer(block, h)
            if i < len(self.layers) - 1:
                h = {t: self.dropout(torch.relu(rows)) for t, rows in h.items()}
        return h[self.target]


class Adapter(PeerAdapter):
    """GraphBolt's heterogeneous sampler, loader and DGL's HeteroGraphConv (module doc)."""

    def build(self) -> None:
        import dgl.graphbolt as gb
        self.gb = gb
        graph = self.data.graph
        self.graph = gb.fused_csc_sampling_graph(**fused_typed_csc(graph.num_nodes,
                                                                    graph.relations))
        self.features = gb.BasicFeatureStore(
            {("node", t, "feat"): gb.TorchBasedFeature(x if x.dtype == torch.float32
                                                       else x.float())
             for t, x in self.data.features.items()})

    def versions(self) -> dict[str, str]:
        import dgl
        return {"dgl": dgl.__version__, "torch": torch.__version__}

    def _pipe(self, ids: torch.Tensor, shuffle: bool, epoch: int, features: bool) -> Any:
        gb, target = self.gb, self.data.target
        ids = self.epoch_order(ids, shuffle, epoch)
        labels = self.data.labels[ids]
        items = gb.ItemSetDict({target: gb.ItemSet((ids.to(self.graph.indices.dtype), labels),
                                                   names=("seed_nodes", "labels"))})
        pipe = gb.ItemSampler(items, batch_size=self.batch_size, shuffle=False)
        pipe = pipe.sample_neighbor(self.graph, self.fanouts)
        if features:
            pipe = pipe.fetch_feature(self.features, node_feature_keys={
                t: ["feat"] for t in self.data.features})
        return pipe

    def sample_stream(self, batches: torch.Tensor) -> Iterator[tuple[int, int]]:
        if batches.shape[1] != self.batch_size:
            raise ValueError(f"seed batches of {batches.shape[1]} ids, but batch_size is "
                             f"{self.batch_size}")
        for mb in self._pipe(batches.reshape(-1), shuffle=False, epoch=0, features=False):
            edges = sum(int(csc.indices.numel()) for sg in mb.sampled_subgraphs
                        for csc in sg.sampled_csc.values())
            yield edges, sum(int(ids.numel()) for ids in mb.input_nodes.values())

    def batches(self, ids: torch.Tensor, shuffle: bool, epoch: int) -> Iterator[tuple[Any, Any]]:
        loader = self.gb.DataLoader(self._pipe(ids, shuffle, epoch, features=True),
                                    num_workers=0)
        target = self.data.target
        for mb in loader:
            features = {t: mb.node_features[(t, "feat")] for t in self.data.features}
            yield (mb.blocks, features, mb.input_nodes), mb.labels[target]

    def make_model(self, hidden: int, dropout: float) -> nn.Module:
        data = self.data
        return _HeteroSAGE(list(data.graph.relations), data.graph.num_nodes, data.num_features,
                           hidden, data.num_classes, len(self.fanouts), dropout, data.target)

    def make_optimizer(self, model: nn.Module, lr: float) -> torch.optim.Optimizer:
        return DenseAndSparseAdam(model, lr)

    def logits(self, model: nn.Module, batch: Any) -> torch.Tensor:
        return model(*batch)
