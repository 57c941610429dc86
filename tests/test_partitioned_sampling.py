"""Partitioned sampling and features over simulated machines (threads of one process, the
exchange as a function): the blocks are bit-identical to the single-machine FusedSampler's
for the same seeds and batch ids, and the rows are the dataset's."""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
import torch

from gnnrepro.datasets import Dataset, load
from gnnrepro.distributed.partitioned.exchange import ThreadExchange
from gnnrepro.distributed.partitioned.features import PartitionedFeatures
from gnnrepro.distributed.partitioned.loader import partitioned_loader, rank_share
from gnnrepro.distributed.partitioned.sampler import PartitionedSampler, relabel
from gnnrepro.partition import Partition, load_partition, partition_dataset
from gnnrepro.sampling import FusedSampler


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    return load("products-sim", root=tmp_path_factory.mktemp("data"), scale=0.003)


@pytest.fixture(scope="module")
def partitions(small: Dataset, tmp_path_factory: pytest.TempPathFactory) -> dict[int, Partition]:
    root = tmp_path_factory.mktemp("parts")
    out = {}
    for parts in (2, 3):
        partition_dataset(small, parts, root / f"p{parts}")
        out[parts] = load_partition(root / f"p{parts}")
    return out


def on_machines(parts: int, body: Callable[[int, Any], Any]) -> list[Any]:
    """body(rank, exchange) on `parts` simulated machines (threads); their results by rank."""
    hub = ThreadExchange(parts, timeout_s=60)
    results: list[Any] = [None] * parts
    errors: list[BaseException] = []

    def run(rank: int) -> None:
        try:
            results[rank] = body(rank, hub.endpoint(rank))
        except BaseException as exc:  # re-raised below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(r,)) for r in range(parts)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


def test_relabel_is_the_ops_rule():
    src, local = relabel(torch.tensor([7, 3]), torch.tensor([5, 7, 5, 9, 3, 2]))
    assert src.tolist() == [7, 3, 5, 9, 2]
    assert local.tolist() == [2, 0, 2, 3, 1, 4]


@pytest.mark.parametrize("parts", [2, 3])
@pytest.mark.parametrize("fanouts,replace", [([15, 10, 5], False), ([-1, 4], False),
                                             ([6, 3], True)])
def test_blocks_identical_to_fused_sampler(small: Dataset, partitions: dict[int, Partition],
                                           parts: int, fanouts: list[int], replace: bool):
    pt = partitions[parts]
    batch = 40

    def body(rank: int, exchange: Any) -> list:
        sampler = PartitionedSampler(pt.part(rank), pt.node_part, fanouts, exchange,
                                     list(range(parts)), replace=replace, seed=11)
        features = PartitionedFeatures(pt.part(rank), pt.node_part, pt.node_local, exchange,
                                       list(range(parts)))
        out = []
        for b in range(2):  # every machine samples its own seeds, all at once
            batch_id = b * parts + rank
            seeds = small.train_idx[batch_id * batch:(batch_id + 1) * batch]
            mb = sampler.sample(seeds, batch_id)
            out.append((seeds, batch_id, mb, features.gather(mb.input_nodes)))
        return [out, sampler.stats, dict(exchange.bytes_sent), features.stats]

    results = on_machines(parts, body)
    single = FusedSampler(small.graph, fanouts, replace=replace, seed=11)
    for batches, stats, sent, rows in results:
        for seeds, batch_id, mb, x in batches:
            want = single.sample(seeds, batch_id)
            assert len(mb.blocks) == len(want.blocks)
            for got, ref in zip(mb.blocks, want.blocks):
                assert got.num_dst == ref.num_dst
                assert torch.equal(got.indptr, ref.indptr)
                assert torch.equal(got.indices, ref.indices)
                assert torch.equal(got.src_nodes, ref.src_nodes)
            assert torch.equal(mb.input_nodes, want.input_nodes)
            assert torch.equal(x, small.features[mb.input_nodes])
        assert 0 < stats["remote_edges"] < stats["edges"]
        assert 0 < rows["remote_rows"] < rows["rows"]
        assert sent["sampling"] > 0 and sent["features"] > 0


def test_rank_share_splits_every_id_once(small: Dataset, partitions: dict[int, Partition]):
    pt = partitions[2]
    shares = [rank_share(small.train_idx, pt.node_part, 4, r) for r in range(4)]
    assert torch.equal(torch.sort(torch.cat(shares)).values, torch.sort(small.train_idx).values)
    sizes = [s.numel() for s in shares]
    assert max(sizes) - min(sizes) <= 1
    # ranks 0-1 are machine 0's, 2-3 machine 1's: each mostly gets its own part's seeds
    assert float((pt.node_part[torch.cat(shares[:2])] == 0).float().mean()) > 0.9
    with pytest.raises(ValueError, match="rank"):
        rank_share(small.train_idx, pt.node_part, 2, 2)


def test_loader_epochs_use_every_id_once(small: Dataset, partitions: dict[int, Partition]):
    pt = partitions[2]

    def body(rank: int, exchange: Any) -> list:
        sampler = PartitionedSampler(pt.part(rank), pt.node_part, [4, 3], exchange, [0, 1])
        features = PartitionedFeatures(pt.part(rank), pt.node_part, pt.node_local, exchange,
                                       [0, 1])
        with partitioned_loader(sampler, features, pt.labels, pt.train_idx, 64, rank=rank,
                                world_size=2, prefetch=2) as loader:
            return [[(mb.seeds, mb.y, mb.input_nodes, mb.x.clone(), mb.batch_id)
                     for mb in loader] for _ in range(2)]

    ranks = on_machines(2, body)
    for epoch in range(2):
        seeds = torch.cat([s for r in ranks for s, *_ in r[epoch]])
        assert torch.equal(torch.sort(seeds).values, torch.sort(small.train_idx).values)
        assert len(ranks[0][epoch]) == len(ranks[1][epoch])
        for r in ranks:
            for s, y, nodes, x, _ in r[epoch]:
                assert torch.equal(y, small.labels[s])
                assert torch.equal(x, small.features[nodes])  # rows from both machines
    # batch ids: the global step's, the same on both ranks, unique over steps and epochs
    ids = [[b for e in r for *_, b in e] for r in ranks]
    assert ids[0] == ids[1] and len(set(ids[0])) == len(ids[0])
    assert ranks[0][0][0][0].tolist() != ranks[0][1][0][0].tolist()  # reshuffled per epoch


def test_bad_arguments(partitions: dict[int, Partition]):
    pt = partitions[2]
    hub = ThreadExchange(2)
    with pytest.raises(ValueError, match="rank_of_part"):
        PartitionedSampler(pt.part(0), pt.node_part, [3], hub.endpoint(0), [0])
    with pytest.raises(ValueError, match="fanouts"):
        PartitionedSampler(pt.part(0), pt.node_part, [0], hub.endpoint(0), [0, 1])
    with pytest.raises(ValueError, match="rank_of_part"):
        PartitionedFeatures(pt.part(0), pt.node_part, pt.node_local, hub.endpoint(0), [1, 0])
    with pytest.raises(ValueError, match="sends"):
        hub.endpoint(0).all_to_all([torch.zeros(1)], "x")


def test_several_ranks_per_machine(small: Dataset, partitions: dict[int, Partition]):
    """2 machines x 2 ranks: rank r = machine * 2 + local rank asks the rank of its local rank
    on the owner machine; blocks stay the single machine's."""
    pt = partitions[2]

    def body(rank: int, exchange: Any) -> list:
        machine, local = divmod(rank, 2)
        sampler = PartitionedSampler(pt.part(machine), pt.node_part, [5, 3], exchange,
                                     [local, 2 + local], seed=3)
        seeds = small.train_idx[rank * 30:(rank + 1) * 30]
        return [seeds, sampler.sample(seeds, rank)]

    single = FusedSampler(small.graph, [5, 3], seed=3)
    for rank, (seeds, mb) in enumerate(on_machines(4, body)):
        want = single.sample(seeds, rank)
        for got, ref in zip(mb.blocks, want.blocks):
            assert torch.equal(got.indices, ref.indices)
            assert torch.equal(got.src_nodes, ref.src_nodes)
