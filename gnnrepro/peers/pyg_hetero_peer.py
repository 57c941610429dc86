"""PyG on a typed graph, as its ogbn-mag examples use it: a HeteroData, one NeighborLoader over
every relation (a fanout list per relation, hops counted from the seeds), and a heterogeneous
GraphSAGE (one SAGEConv per relation, summed into each destination type: what `to_hetero(...,
aggr="sum")` builds in examples/hetero/to_hetero_mag.py), with a learnt embedding table per
node type without features (sparse gradients, torch's SparseAdam; Adam for the rest). Without
pyg-lib PyG samples with torch-sparse's `hetero_neighbor_sample`. Runs only in the pyg
environment, for the typed datasets (gnnrepro.datasets.TYPED_DATASETS).

Each relation is handed over as `adj_t`, the cache's CSC arrays as a SparseTensor (rows: the
destination type), so PyG builds no second copy of the edges; the model takes each batch's
`adj_t_dict`.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from gnnrepro.peers.adapter import PeerAdapter
from gnnrepro.peers.embedding_optimizer import DenseAndSparseAdam
from gnnrepro.peers.pyg_model import PyGHeteroSAGE

__all__ = ["Adapter"]


class Adapter(PeerAdapter):
    """PyG's heterogeneous sampler, loader and model (see the module doc)."""

    def build(self) -> None:
        from torch_geometric.data import HeteroData
        from torch_geometric.sampler import NeighborSampler
        from torch_sparse import SparseTensor
        graph, data = self.data.graph, self.data
        hetero = HeteroData()
        for ntype, n in graph.num_nodes.items():
            hetero[ntype].num_nodes = n
        for ntype, x in data.features.items():
            hetero[ntype].x = x if x.dtype == torch.float32 else x.float()
        hetero[data.target].y = data.labels
        for (src, name, dst), csc in graph.relations.items():
            hetero[src, name, dst].adj_t = SparseTensor(
                rowptr=csc.indptr, col=csc.indices.long(),
                sparse_sizes=(graph.num_nodes[dst], graph.num_nodes[src]), is_sorted=True,
                trust_data=True)
        self.hetero = hetero
        self.num_neighbors = {rel: list(reversed(self.fanouts)) for rel in graph.relations}
        self.sampler = NeighborSampler(hetero, self.num_neighbors)

    def versions(self) -> dict[str, str]:
        import torch_geometric
        import torch_geometric.typing as pyg_typing
        import torch_sparse
        return {"torch_geometric": torch_geometric.__version__,
                "torch_sparse": torch_sparse.__version__, "torch": torch.__version__,
                "pyg_lib": str(pyg_typing.WITH_PYG_LIB)}

    def sample_stream(self, batches: torch.Tensor) -> Iterator[tuple[int, int]]:
        from torch_geometric.sampler import NodeSamplerInput
        target = self.data.target
        for seeds in batches:
            out = self.sampler.sample_from_nodes(
                NodeSamplerInput(input_id=None, node=seeds, input_type=target))
            yield (sum(int(rows.numel()) for rows in out.row.values()),
                   sum(int(nodes.numel()) for nodes in out.node.values()))

    def batches(self, ids: torch.Tensor, shuffle: bool, epoch: int) -> Iterator[tuple[Any, Any]]:
        from torch_geometric.loader import NeighborLoader
        target = self.data.target
        loader = NeighborLoader(self.hetero, self.num_neighbors,
                                input_nodes=(target, self.epoch_order(ids, shuffle, epoch)),
                                batch_size=self.batch_size, shuffle=False,
                                neighbor_sampler=self.sampler)
        for batch in loader:
            yield batch, batch[target].y[:batch[target].batch_size]

    def make_model(self, hidden: int, dropout: float) -> nn.Module:
        data = self.data
        return PyGHeteroSAGE(list(data.graph.relations), data.graph.num_nodes,
                             data.num_features, hidden, data.num_classes, len(self.fanouts),
                             dropout, data.target)

    def make_optimizer(self, model: nn.Module, lr: float) -> torch.optim.Optimizer:
        """Adam for the dense weights, torch's SparseAdam for the embedding tables."""
        return DenseAndSparseAdam(model, lr)

    def logits(self, model: nn.Module, batch: Any) -> torch.Tensor:
        return model(batch)
