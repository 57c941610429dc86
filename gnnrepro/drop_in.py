"""Drop-in loaders with the peers' call signatures: a DGL or PyG script changes two lines.

`DataLoader(g, train_idx, fanouts, device=..., batch_size=...)` takes DGL's DataLoader's
arguments (a DGLGraph with ndata "feat" and "label", the training ids, and the fanouts DGL's
NeighborSampler takes, input layer first) and yields DGL's `(input_nodes, output_nodes,
blocks)`. `NeighborLoader(data, num_neighbors=..., batch_size=..., input_nodes=...)` takes
PyG's (a Data, fanouts from the seeds outward) and yields its batches. Both are our fused
sampler and pinned, multi-worker loader underneath (gnnrepro.training.make_loader with the
fused+pinned pipeline; any TrainConfig setting passes through `settings`); iterate them epoch
after epoch, `len()` is the batches per epoch, `close()` stops the workers.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import torch

from gnnrepro.config import TrainConfig
from gnnrepro.interop import BatchView, from_dgl, from_pyg, to_dgl, to_pyg, to_pyg_sparse
from gnnrepro.interop.convert import pyg_graph_is_adj_t
from gnnrepro.training.pipelines import make_loader

__all__ = ["DataLoader", "NeighborLoader"]


class _DropIn(BatchView):
    """A BatchView that owns its Loader."""

    def close(self) -> None:
        self.loader.close()

    def __enter__(self) -> "_DropIn":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _config(fanouts: Sequence[int], device: Any, batch_size: int, settings: dict) -> TrainConfig:
    """The loader's settings; a peer's argument that is no setting of ours is named (a
    TypeError), with what our loader does instead where that is the question."""
    known = {f.name for f in dataclasses.fields(TrainConfig)}
    unknown = sorted(set(settings) - known)
    if unknown:
        raise TypeError(f"{', '.join(unknown)}: not settings of gnnrepro's loader (training "
                        f"ids are shuffled by (seed, epoch) every epoch, the last partial "
                        f"batch is kept, workers are chosen from the machine unless "
                        f"workers=... is given); its settings: {', '.join(sorted(known))}")
    device = str(device) if isinstance(device, torch.device) else device
    return TrainConfig(fanouts=tuple(fanouts), batch_size=batch_size, device=device,
                       **settings)


def DataLoader(g: Any, train_idx: Any, fanouts: Sequence[int], *, device: Any = "cpu",  # noqa: N802
               batch_size: int = 1024, feat: str = "feat", label: str = "label",
               **settings: Any) -> _DropIn:
    """DGL's `DataLoader(g, train_idx, NeighborSampler(fanouts), device=..., batch_size=...)`
    on our loader: yields `(input_nodes, output_nodes, blocks)` with the batch's features in
    `blocks[0].srcdata["feat"]` and labels in `blocks[-1].dstdata["label"]`."""
    data = from_dgl(g, train_idx, feat=feat, label=label)
    return _DropIn(make_loader(data, _config(fanouts, device, batch_size, settings)), to_dgl)


def NeighborLoader(data: Any, num_neighbors: Sequence[int], *, batch_size: int = 1024,  # noqa: N802
                   input_nodes: Any = None, device: Any = "cpu", **settings: Any) -> _DropIn:
    """PyG's `NeighborLoader(data, num_neighbors, batch_size=..., input_nodes=...)` on our
    loader (sampled on our side, every batch on `device`): yields Data batches with `x`,
    `edge_index`, `y`, `batch_size` and `n_id` (`adj_t` in place of `edge_index` where `data`'s
    graph is an adj_t, as PyG's NeighborLoader does). `num_neighbors` counts from the seeds, as in
    PyG; `input_nodes` is the training ids or mask (default: data.train_mask)."""
    dataset = from_pyg(data, train_idx=input_nodes)
    fanouts = list(reversed(list(num_neighbors)))  # ours count from the input layer
    sparse = pyg_graph_is_adj_t(data)
    return _DropIn(make_loader(dataset, _config(fanouts, device, batch_size, settings)),
                   to_pyg_sparse if sparse else to_pyg)
