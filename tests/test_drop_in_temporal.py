"""PyG's temporal NeighborLoader on ours (gnnrepro.drop_in.NeighborLoader with time_attr,
input_time, temporal_strategy, disjoint): each seed on its own at its time, PyG's `batch`."""
from __future__ import annotations

import pytest
import torch

from gnnrepro.drop_in import NeighborLoader


def timed_data(n: int = 200, e: int = 3000, seed: int = 0):
    data_mod = pytest.importorskip("torch_geometric.data")
    gen = torch.Generator().manual_seed(seed)
    src, dst = torch.randint(0, n, (e,), generator=gen), torch.randint(0, n, (e,), generator=gen)
    return data_mod.Data(x=torch.randn(n, 4, generator=gen), y=torch.randint(0, 3, (n,)),
                         edge_index=torch.stack([src, dst]), num_nodes=n,
                         edge_time=torch.randint(0, 100, (e,), generator=gen))


@pytest.mark.parametrize("strategy", ["uniform", "last"])
def test_no_sampled_edge_is_later_than_its_seed(strategy):
    data = timed_data()
    seeds = torch.randperm(200, generator=torch.Generator().manual_seed(1))[:120]
    seed_time = torch.randint(0, 100, (120,), generator=torch.Generator().manual_seed(2))
    with NeighborLoader(data, [4, 3], input_nodes=seeds, input_time=seed_time,
                        time_attr="edge_time", temporal_strategy=strategy, batch_size=50,
                        threads=1) as loader:
        batches = list(loader)
    assert torch.equal(torch.cat([b.n_id[:b.batch_size] for b in batches]), seeds)
    done = 0
    for b in batches:
        times = seed_time[done:done + b.batch_size]
        target_seed = b.batch[b.edge_index[1]]
        assert torch.equal(b.batch[b.edge_index[0]], target_seed)  # each seed on its own
        assert bool((data.edge_time[b.e_id] <= times[target_seed]).all())
        assert torch.equal(data.edge_index[:, b.e_id], b.n_id[b.edge_index])  # real edges
        done += b.batch_size


def test_disjoint_without_times_and_bad_arguments():
    data = timed_data(seed=3)
    with NeighborLoader(data, [3], input_nodes=torch.arange(10), disjoint=True,
                        batch_size=10, threads=1) as loader:
        b = next(iter(loader))
    assert torch.equal(b.batch[:10], torch.arange(10))
    with pytest.raises(ValueError, match="input_time is needed with time_attr"):
        NeighborLoader(data, [3], input_nodes=torch.arange(10), time_attr="edge_time")
    with pytest.raises(ValueError, match="input_time needs time_attr"):
        NeighborLoader(data, [3], input_nodes=torch.arange(10), input_time=torch.zeros(10))
    data.node_stamp = torch.zeros(200, dtype=torch.long)
    with pytest.raises(ValueError, match="holds node times"):
        NeighborLoader(data, [3], input_nodes=torch.arange(10), time_attr="node_stamp",
                       input_time=torch.zeros(10, dtype=torch.long))
    with pytest.raises(ValueError, match="input_nodes must be distinct"):
        NeighborLoader(data, [3], input_nodes=torch.tensor([1, 1]), time_attr="edge_time",
                       input_time=torch.tensor([3, 4]))
    with pytest.raises(TypeError, match="input_time must be an integer tensor"):
        NeighborLoader(data, [3], input_nodes=torch.arange(10), time_attr="edge_time",
                       input_time=torch.zeros(10))
