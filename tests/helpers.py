"""Helpers the tests import (conftest.py holds only fixtures): graph builders, edge counts,
the DGL skip, and loading a script that is not a package module."""
from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest
import torch

from gnnrepro import CSCGraph
from gnnrepro.baselines.dgl_import import dgl_available


def random_graph(num_nodes: int, num_edges: int, *, power_law: bool, seed: int,
                 index_dtype: torch.dtype = torch.int64, simple: bool = False) -> CSCGraph:
    """A random multigraph with self loops; power_law skews both endpoints (hubs and leaves);
    `simple` drops parallel edges (no neighbour repeats).

    The top 5% of node ids get no in-edges, so some nodes are isolated destinations.
    """
    gen = torch.Generator().manual_seed(seed)
    receivers = int(num_nodes * 0.95)
    if power_law:
        weights = (torch.arange(1, num_nodes + 1, dtype=torch.float64) ** -1.1)
        weights = weights[torch.randperm(num_nodes, generator=gen)]
        src = torch.multinomial(weights, num_edges, replacement=True, generator=gen)
        dst = torch.multinomial(weights[:receivers], num_edges, replacement=True, generator=gen)
    else:
        src = torch.randint(0, num_nodes, (num_edges,), generator=gen)
        dst = torch.randint(0, receivers, (num_edges,), generator=gen)
    loops = torch.arange(0, receivers, 7)
    src, dst = torch.cat([src, loops]), torch.cat([dst, loops])
    if simple:
        src, dst = torch.unique(torch.stack([src, dst]), dim=1)
    return CSCGraph.from_edges(src, dst, num_nodes, index_dtype=index_dtype)


def edge_multiplicity(graph: CSCGraph) -> dict[tuple[int, int], int]:
    """(dst, src) -> number of parallel edges, over the whole graph."""
    deg = graph.in_degrees()
    dst = torch.repeat_interleave(torch.arange(graph.num_nodes), deg)
    out: dict[tuple[int, int], int] = {}
    for d, s in zip(dst.tolist(), graph.indices.tolist()):
        out[(d, s)] = out.get((d, s), 0) + 1
    return out


def require_dgl() -> None:
    """Skip the calling test where DGL cannot be imported (gnnrepro's own modules import
    without DGL, so importorskip on them would never skip)."""
    if not dgl_available():
        pytest.skip("DGL cannot be imported (pip install dgl==2.1.0 torchdata==0.9.0 pydantic)")


def load_script(path: Path) -> ModuleType:
    """The Python file at `path` (a script under benchmarks/, tools/ or notebooks/, not a
    package module) imported as a module named after it."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_csv_gz(path: Path, data: object, header: bool = False) -> None:
    """`data` (an array or DataFrame) as a gzipped CSV at `path`, as OGB's raw files are."""
    import pandas as pd
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(data).to_csv(path, header=header, index=False, compression="gzip")


def check_edge_batches(loader: object, link: object, features: torch.Tensor,
                       num_edges: int) -> None:
    """Every batch `loader` yields is what `link.sample` gives its edges (seeds, rows,
    negatives) with its input nodes' features, the batches cover `num_edges` edges, and the
    loader closes."""
    seen = 0
    for batch in loader:
        ref = link.sample(batch.edge_ids, batch.batch_id)
        assert torch.equal(batch.seeds, ref.seeds) and torch.equal(batch.pos, ref.pos)
        assert torch.equal(batch.neg_dst, ref.neg_dst)
        assert torch.equal(batch.x, features[batch.input_nodes])
        seen += batch.edge_ids.numel()
    assert seen == num_edges
    loader.close()
