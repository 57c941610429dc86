"""PyG as its examples use it: a NeighborLoader (over one NeighborSampler) feeding SAGEConv
layers that run on the whole sampled subgraph, the seeds' rows of the output scored. Without
pyg-lib PyG samples with torch-sparse's `neighbor_sample` op. Runs only in the pyg environment.

PyG counts hops from the seeds, so its num_neighbors is our fanouts reversed (ours, like DGL's,
are listed input layer first). The graph is handed over as `adj_t`, the CSC arrays of the cache
as a SparseTensor, so PyG builds no second copy of the edges. The model takes each batch's
`adj_t` (SpMM, as in PyG's OGB examples) where torch-sparse runs on the model's device; on a GPU
with a torch-sparse built without CUDA it takes the batch's `edge_index` (made from `adj_t` on
the CPU, before the copy), as NeighborLoader hands over a graph given as edge_index.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from gnnrepro.peers.adapter import PeerAdapter
from gnnrepro.peers.pyg_model import PyGSAGE

__all__ = ["Adapter"]


class Adapter(PeerAdapter):
    """PyG's sampler, loader and model (see the module doc)."""

    def build(self) -> None:
        from torch_geometric.data import Data
        from torch_geometric.sampler import NeighborSampler
        from torch_sparse import SparseTensor
        graph = self.data.graph
        n = graph.num_nodes
        adj_t = SparseTensor(rowptr=graph.indptr, col=graph.indices.long(), sparse_sizes=(n, n),
                             is_sorted=True, trust_data=True)
        self.pyg_data = Data(x=self.data.features, y=self.data.labels, adj_t=adj_t,
                             num_nodes=n)
        self.sampler = NeighborSampler(self.pyg_data, list(reversed(self.fanouts)))

    def versions(self) -> dict[str, str]:
        import torch_geometric
        import torch_geometric.typing as pyg_typing
        import torch_sparse
        return {"torch_geometric": torch_geometric.__version__,
                "torch_sparse": torch_sparse.__version__, "torch": torch.__version__,
                "pyg_lib": str(pyg_typing.WITH_PYG_LIB),
                "torch_sparse_cuda": str(torch_sparse_has_cuda())}

    def sample_stream(self, batches: torch.Tensor) -> Iterator[tuple[int, int]]:
        from torch_geometric.sampler import NodeSamplerInput
        for seeds in batches:
            out = self.sampler.sample_from_nodes(NodeSamplerInput(input_id=None, node=seeds))
            yield int(out.row.numel()), int(out.node.numel())

    def batches(self, ids: torch.Tensor, shuffle: bool, epoch: int) -> Iterator[tuple[Any, Any]]:
        from torch_geometric.loader import NeighborLoader
        loader = NeighborLoader(self.pyg_data, list(reversed(self.fanouts)),
                                input_nodes=self.epoch_order(ids, shuffle, epoch),
                                batch_size=self.batch_size, shuffle=False, num_workers=0,
                                neighbor_sampler=self.sampler)
        for batch in loader:
            yield batch, batch.y[:batch.batch_size]

    def make_model(self, hidden: int, dropout: float) -> nn.Module:
        return PyGSAGE(self.data.num_features, hidden, self.data.num_classes,
                       len(self.fanouts), dropout)

    def to_device(self, batch: Any) -> Any:
        """The batch on the model's device; its adj_t as edge_index first where torch-sparse's
        ops cannot run there (see the module doc)."""
        if self.device.type != "cpu" and not torch_sparse_has_cuda():
            batch = with_edge_index(batch)
        return super().to_device(batch)

    def logits(self, model: nn.Module, batch: Any) -> torch.Tensor:
        # A graph given as adj_t comes back as the batch's adj_t (a SparseTensor), which
        # PyG's layers take directly (its sparse-matrix path, as in PyG's OGB examples).
        edges = batch.adj_t if "adj_t" in batch else batch.edge_index
        return model(batch.x, edges)[:batch.batch_size]


def torch_sparse_has_cuda() -> bool:
    """Whether the installed torch-sparse was built with its CUDA ops."""
    import torch_sparse  # noqa: F401  (registers torch.ops.torch_sparse)
    return int(torch.ops.torch_sparse.cuda_version()) != -1


def with_edge_index(batch: Any) -> Any:
    """`batch` with its adj_t (row = target, column = source) replaced by edge_index
    [2, E] (source -> target), in adj_t's CSR order."""
    target, source, _ = batch.adj_t.coo()
    batch.edge_index = torch.stack([source, target])
    del batch.adj_t
    return batch
