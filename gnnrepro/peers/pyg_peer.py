"""PyG as its examples use it: a NeighborLoader (over one NeighborSampler) feeding SAGEConv
layers that run on the whole sampled subgraph, the seeds' rows of the output scored. Without
pyg-lib PyG samples with torch-sparse's `neighbor_sample` op. Runs only in the pyg environment.

PyG counts hops from the seeds, so its num_neighbors is our fanouts reversed (ours, like DGL's,
are listed input layer first). The graph is handed over as `adj_t`, the CSC arrays of the cache
as a SparseTensor, so PyG builds no second copy of the edges. The model takes each batch's
`adj_t` (SpMM, as in PyG's OGB examples) where torch-sparse runs on the model's device; on a GPU
with a torch-sparse built without CUDA ops the batch's `adj_t` becomes torch's own sparse CSR
tensor on the CPU, before the copy: the layout PyG also takes, and the one our PyG view hands
over (gnnrepro.interop.pyg_adj_t), so the model's path stays the same on both sides.

Training on a GPU follows PyG's own OGB example (examples/ogbn_train.py): x and y on the GPU
(`data.to(device, 'x', 'y')`, so NeighborLoader gathers each batch's rows there) and the
sampling in NeighborLoader's worker processes, 12 where the machine has the cores. On the CPU
the model takes every core, so the loader samples in the training process, as before.
"""
from __future__ import annotations

import copy
import os
import warnings
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from gnnrepro.peers.adapter import PeerAdapter
from gnnrepro.peers.pyg_model import PyGSAGE

__all__ = ["Adapter"]

#: NeighborLoader's workers in PyG's OGB example on a GPU (its --num_workers default).
EXAMPLE_WORKERS = 12


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
        self.sparse_has_cuda = torch_sparse_has_cuda()  # fixed for this process

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

    def loader_workers(self) -> int:
        """NeighborLoader's worker processes: PyG's example's 12 on a GPU, leaving two cores
        to the training process; none on the CPU (see the module doc)."""
        if self.device.type == "cpu":
            return 0
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
            os.cpu_count() or 1)
        return min(EXAMPLE_WORKERS, max(0, cores - 2))

    def train(self, epochs: int, lr: float, hidden: int, dropout: float,
              device: str = "cpu", eval_ids: int | None = None) -> dict[str, Any]:
        """PeerAdapter.train, with x and y on `device` meanwhile where it is a GPU (PyG's
        example); the loader's own timing and the sampler keep them on the CPU."""
        on_cpu = self.pyg_data
        if torch.device(device).type != "cpu":
            self.pyg_data = copy.copy(on_cpu).to(device, "x", "y")  # its own x and y only
        try:
            return super().train(epochs, lr, hidden, dropout, device, eval_ids)
        finally:
            self.pyg_data, self.device = on_cpu, torch.device("cpu")

    def batches(self, ids: torch.Tensor, shuffle: bool, epoch: int) -> Iterator[tuple[Any, Any]]:
        from torch_geometric.loader import NeighborLoader
        loader = NeighborLoader(self.pyg_data, list(reversed(self.fanouts)),
                                input_nodes=self.epoch_order(ids, shuffle, epoch),
                                batch_size=self.batch_size, shuffle=False,
                                num_workers=self.loader_workers(),
                                neighbor_sampler=self.sampler)
        for batch in loader:
            yield batch, batch.y[:batch.batch_size]

    def make_model(self, hidden: int, dropout: float) -> nn.Module:
        return PyGSAGE(self.data.num_features, hidden, self.data.num_classes,
                       len(self.fanouts), dropout)

    def to_device(self, batch: Any) -> Any:
        """The batch on the model's device; its adj_t as torch's sparse CSR first where
        torch-sparse's ops cannot run there (see the module doc)."""
        if self.device.type != "cpu" and not self.sparse_has_cuda:
            batch = with_torch_csr(batch)
        return super().to_device(batch)

    def logits(self, model: nn.Module, batch: Any) -> torch.Tensor:
        # A graph given as adj_t comes back as the batch's adj_t (a SparseTensor), which
        # PyG's layers take directly (its sparse-matrix path, as in PyG's OGB examples).
        return model(batch.x, batch.adj_t)[:batch.batch_size]


def torch_sparse_has_cuda() -> bool:
    """Whether the installed torch-sparse was built with its CUDA ops."""
    import torch_sparse  # noqa: F401  (registers torch.ops.torch_sparse)
    return int(torch.ops.torch_sparse.cuda_version()) != -1


def with_torch_csr(batch: Any) -> Any:
    """`batch` with its adj_t (torch-sparse's SparseTensor, row = target) as torch's sparse
    CSR tensor of the same rows and columns, values ones of x's dtype."""
    with warnings.catch_warnings():  # torch's "sparse CSR support is in beta" notice
        warnings.simplefilter("ignore", UserWarning)
        batch.adj_t = batch.adj_t.to_torch_sparse_csr_tensor(dtype=batch.x.dtype)
    return batch
