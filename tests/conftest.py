"""Shared fixtures: small random graphs with the awkward cases samplers must handle."""
from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

from gnnrepro import CSCGraph
from gnnrepro.baselines.dgl_import import dgl_available
from gnnrepro.datasets import Dataset, load


def random_graph(num_nodes: int, num_edges: int, *, power_law: bool, seed: int,
                 index_dtype: torch.dtype = torch.int64) -> CSCGraph:
    """A random multigraph with self loops; power_law skews both endpoints (hubs and leaves).

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
    return CSCGraph.from_edges(src, dst, num_nodes, index_dtype=index_dtype)


@pytest.fixture(scope="module")
def one_thread() -> Iterator[None]:
    """One torch thread for a module: tiny batches gain nothing from threads, and on a small,
    busy machine lose 10-50x to them."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    """A small products-sim (~7k nodes, 590 training ids) in a private cache directory."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GNNREPRO_DATA", str(tmp_path_factory.mktemp("data")))
        return load("products-sim", scale=0.003)


@pytest.fixture(params=["uniform", "power-law"])
def graph(request) -> CSCGraph:
    return random_graph(600, 6000, power_law=request.param == "power-law", seed=1,
                        index_dtype=torch.int32 if request.param == "uniform" else torch.int64)


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
