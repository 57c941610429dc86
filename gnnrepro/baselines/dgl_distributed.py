"""DGL's own distributed training (DistDGL) as the partitioned baseline - as far as DGL 2.1
runs on this torch.

DistDGL's pipeline starts with `dgl.distributed.partition_graph` (METIS, halo, its on-disk
format), then graph/KV servers, `DistGraph`, `DistDataLoader` with `NeighborSampler`.
`attempt_partition` runs that first step on the same graph, features, labels and training
mask, and reports what happened; whatever fails is reported with the step and the exception
(the benchmark's JSON and the notebook show it) instead of a number.
"""
from __future__ import annotations

import sys
import time
import traceback
from pathlib import Path
from typing import Any

import torch

from gnnrepro.baselines.dgl_import import import_dgl
from gnnrepro.datasets.dataset import Dataset

__all__ = ["attempt_partition", "prepare_distdgl"]


def prepare_distdgl(dgl: Any) -> None:
    """Mend what DistDGL needs of a DGL imported by import_dgl: the FFI object base class and
    one GraphBolt name.

    import_dgl retries `import dgl` with GraphBolt stubbed out after the plain import failed
    half way; the retry re-executes dgl._ffi.object_generic (its _CLASS_OBJECT_BASE back to
    None) but not DGL's compiled FFI core, which registered the base class once, in the first
    attempt. Every DGL function that converts Python values to DGL objects (save_graphs, so
    partition_graph) then fails with "isinstance() arg 2 must be a type"."""
    from dgl._ffi import object as ffi_object
    from dgl._ffi import object_generic

    if object_generic._CLASS_OBJECT_BASE is None:
        object_generic._set_class_object_base(ffi_object._ObjectBase)
    # DistDGL's servers and samplers test `isinstance(graph, gb.FusedCSCSamplingGraph)` even
    # with use_graphbolt=False; against the empty GraphBolt stand-in, a class of which no
    # graph is an instance gives the answer DGL's non-GraphBolt path expects.
    graphbolt = sys.modules["dgl.graphbolt"]
    if not hasattr(graphbolt, "FusedCSCSamplingGraph"):
        graphbolt.FusedCSCSamplingGraph = type("FusedCSCSamplingGraph", (), {})


def attempt_partition(dataset: Dataset, num_parts: int, out: str | Path,
                      graph_name: str = "graph") -> dict[str, Any]:
    """Try `dgl.distributed.partition_graph(g, graph_name, num_parts, out,
    part_method="metis")` on `dataset` (features, labels, train and test masks):
    {"ran", "step", "seconds" | "reason", "traceback_tail"}."""
    step = "import dgl (gnnrepro.baselines.dgl_import, GraphBolt stubbed)"
    try:
        dgl = import_dgl()
        prepare_distdgl(dgl)
        step = "import dgl.distributed"
        import dgl.distributed as dist_dgl

        step = "build the DGLGraph with feat, label, train_mask, test_mask"
        g = dgl.graph((dataset.graph.indices.to(torch.int64),
                       torch.repeat_interleave(torch.arange(dataset.num_nodes),
                                               dataset.graph.in_degrees())),
                      num_nodes=dataset.num_nodes)
        masks = {}
        for split in ("train", "test"):
            masks[f"{split}_mask"] = torch.zeros(dataset.num_nodes, dtype=torch.bool)
            masks[f"{split}_mask"][getattr(dataset, f"{split}_idx")] = True
        g.ndata.update(feat=dataset.features, label=dataset.labels, **masks)
        step = "dgl.distributed.partition_graph(part_method='metis')"
        start = time.perf_counter()
        dist_dgl.partition_graph(g, graph_name, num_parts, str(out), part_method="metis")
        return {"ran": True, "step": step, "seconds": time.perf_counter() - start}
    except Exception as exc:  # the baseline's failure is a result, not an error
        return {"ran": False, "step": step, "reason": f"{type(exc).__name__}: {exc}",
                "traceback_tail": traceback.format_exc().strip().splitlines()[-8:]}
