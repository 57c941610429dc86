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
    with pytest.raises(ValueError, match="input_time must be 1-D with 2 entries"):
        NeighborLoader(data, [3], input_nodes=torch.tensor([1, 1]), time_attr="edge_time",
                       input_time=torch.tensor([3, 4, 5]))
    with pytest.raises(TypeError, match="input_time must be an integer tensor"):
        NeighborLoader(data, [3], input_nodes=torch.arange(10), time_attr="edge_time",
                       input_time=torch.zeros(10))


def test_an_input_node_repeats_at_its_own_times():
    """PyG lets a node come several times (a user at each purchase): each item is sampled at
    its own input_time. Fanout -1 at the seeds: item k's edges are exactly those into its node
    no later than its time."""
    data = timed_data(seed=5)
    seeds = torch.tensor([7, 7, 7, 12, 7, 12])
    seed_time = torch.tensor([0, 99, 50, 99, 20, 5])
    with NeighborLoader(data, [-1, 2], input_nodes=seeds, input_time=seed_time,
                        time_attr="edge_time", batch_size=6, threads=1) as loader:
        b = next(iter(loader))
    assert torch.equal(b.n_id[:6], seeds)
    target_seed = b.batch[b.edge_index[1]]
    for k in range(6):
        mine = b.e_id[(b.edge_index[1] < 6) & (target_seed == k)]
        want = torch.nonzero((data.edge_index[1] == seeds[k])
                             & (data.edge_time <= seed_time[k])).flatten()
        assert sorted(mine.tolist()) == want.tolist()
    with NeighborLoader(data, [2, 2], input_nodes=seeds, input_time=seed_time,
                        time_attr="edge_time", batch_size=4, shuffle=True, threads=1) as loader:
        items = torch.cat([b.n_id[:b.batch_size] for b in loader])
    assert sorted(items.tolist()) == sorted(seeds.tolist())  # every item once, repeats too


def node_timed_data(seed: int = 0):
    data = timed_data(seed=seed)
    data.time = torch.randint(0, 100, (data.num_nodes,),
                              generator=torch.Generator().manual_seed(seed + 1))
    return data


def test_node_times_keep_every_neighbour_no_later_than_its_seed():
    """time_attr naming node times (PyG's node-level temporal sampling, as RelBench uses it):
    no sampled node is later than its seed, seeds default to their own times, and the batches
    are those of edge times equal to each edge's source time."""
    data = node_timed_data()
    seeds = torch.arange(0, 200, 3)
    with NeighborLoader(data, [3, 3], input_nodes=seeds, time_attr="time", batch_size=32,
                        threads=1) as loader:
        batches = list(loader)
    data.src_time = data.time[data.edge_index[0]]
    with NeighborLoader(data, [3, 3], input_nodes=seeds, time_attr="src_time",
                        input_time=data.time[seeds], batch_size=32, threads=1) as loader:
        by_edges = list(loader)
    for b, e in zip(batches, by_edges):
        seed_time = data.time[b.n_id[:b.batch_size]]
        assert bool((data.time[b.n_id] <= seed_time[b.batch]).all())
        assert torch.equal(b.n_id, e.n_id) and torch.equal(b.edge_index, e.edge_index)
        assert torch.equal(b.e_id, e.e_id)


def test_weights_and_times_together_pick_positive_candidates():
    data = timed_data(seed=7)
    data.w = (torch.arange(data.edge_index.shape[1]) % 3 != 0).float()
    seeds = torch.arange(60)
    seed_time = torch.randint(0, 100, (60,), generator=torch.Generator().manual_seed(8))
    with NeighborLoader(data, [4, 4], input_nodes=seeds, input_time=seed_time,
                        time_attr="edge_time", weight_attr="w", batch_size=30,
                        threads=1) as loader:
        for b, start in zip(loader, (0, 30)):
            times = seed_time[start:start + 30]
            assert bool((data.w[b.e_id] > 0).all())
            assert bool((data.edge_time[b.e_id] <= times[b.batch[b.edge_index[1]]]).all())
