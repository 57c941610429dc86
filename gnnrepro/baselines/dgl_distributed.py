"""DGL's own distributed training (DistDGL) as the partitioned baseline - as far as DGL 2.1
runs on this torch.

DistDGL's pipeline starts with `dgl.distributed.partition_graph` (METIS, halo, its on-disk
format), then graph/KV servers, `DistGraph`, `DistDataLoader` with `NeighborSampler`.
`attempt_partition` runs that first step on the same graph, features, labels and training
mask, and reports what happened; whatever fails is reported with the step and the exception
(the benchmark's JSON and the notebook show it) instead of a number.
"""
from __future__ import annotations

import time
import traceback
from pathlib import Path
from typing import Any

import torch

from gnnrepro.baselines.dgl_import import import_dgl
from gnnrepro.datasets.dataset import Dataset

__all__ = ["attempt_partition"]


def attempt_partition(dataset: Dataset, num_parts: int, out: str | Path) -> dict[str, Any]:
    """Try `dgl.distributed.partition_graph(g, ..., num_parts, out, part_method="metis")` on
    `dataset`: {"ran", "step", "seconds" | "reason", "traceback_tail"}."""
    step = "import dgl (gnnrepro.baselines.dgl_import, GraphBolt stubbed)"
    try:
        dgl = import_dgl()
        step = "import dgl.distributed"
        import dgl.distributed as dist_dgl

        step = "build the DGLGraph with feat/label/train_mask"
        g = dgl.graph((dataset.graph.indices.to(torch.int64),
                       torch.repeat_interleave(torch.arange(dataset.num_nodes),
                                               dataset.graph.in_degrees())),
                      num_nodes=dataset.num_nodes)
        mask = torch.zeros(dataset.num_nodes, dtype=torch.bool)
        mask[dataset.train_idx] = True
        g.ndata.update(feat=dataset.features, label=dataset.labels, train_mask=mask)
        step = "dgl.distributed.partition_graph(part_method='metis')"
        start = time.perf_counter()
        dist_dgl.partition_graph(g, "graph", num_parts, str(out), part_method="metis")
        return {"ran": True, "step": step, "seconds": time.perf_counter() - start}
    except Exception as exc:  # the baseline's failure is a result, not an error
        return {"ran": False, "step": step, "reason": f"{type(exc).__name__}: {exc}",
                "traceback_tail": traceback.format_exc().strip().splitlines()[-8:]}
