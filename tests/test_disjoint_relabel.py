"""The CUDA op's relabel of disjoint (temporal) layers, csrc/sampling/disjoint_relabel.h: it is
written in ATen ops, so these CPU runs execute the code the GPU runs. It must number sources
as the CPU op's hash map does (per type: destinations, then new sources by first appearance)."""
from __future__ import annotations

import pytest
import torch

from gnnrepro import _C
from gnnrepro.graph import CSCGraph
from gnnrepro.sampling import FusedSampler
from gnnrepro.typed_graph import TypedGraph


def reference(dst_keys: list[int], dst_begin: list[int], edge_keys: list[int],
              offsets: list[int], mask: int) -> tuple[list[int], list[list[int]]]:
    """The numbering written plainly: per type a dict from key to id."""
    types = len(offsets) - 1
    sources = [dst_keys[dst_begin[t]:dst_begin[t + 1]] for t in range(types)]
    ids = [{k: i for i, k in enumerate(s)} for s in sources]
    out = []
    for key in edge_keys:
        if key < 0:
            out.append(0)
            continue
        t = max(u for u in range(types) if offsets[u] <= (key & mask))
        if key not in ids[t]:
            ids[t][key] = len(sources[t])
            sources[t].append(key)
        out.append(ids[t][key])
    return out, sources


@pytest.mark.parametrize("types", [1, 3])
@pytest.mark.parametrize("seed", range(4))
def test_random_layers_equal_the_reference(types: int, seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    shift = 7
    sizes = torch.randint(0, 40, (types,), generator=gen).tolist()
    sizes[0] = max(sizes[0], 1)
    offsets = [0]
    for s in sizes:
        offsets.append(offsets[-1] + s)
    seeds = 9
    # destinations: distinct keys, grouped by type
    dst_begin, dst_keys = [0], []
    for t in range(types):
        if sizes[t]:
            keys = {(int(torch.randint(0, seeds, (), generator=gen)) << shift)
                    | (offsets[t] + int(torch.randint(0, sizes[t], (), generator=gen)))
                    for _ in range(int(torch.randint(0, 12, (), generator=gen)))}
            dst_keys += sorted(keys, key=lambda k: int(torch.randint(0, 1000, (), generator=gen)))
        dst_begin.append(len(dst_keys))
    edges = []
    for _ in range(int(torch.randint(0, 300, (), generator=gen))):
        if torch.rand((), generator=gen) < 0.05:
            edges.append(-1)  # a bad index
        elif dst_keys and torch.rand((), generator=gen) < 0.3:
            edges.append(dst_keys[int(torch.randint(0, len(dst_keys), (), generator=gen))])
        else:
            t = int(torch.randint(0, types, (), generator=gen))
            if sizes[t] == 0:
                continue
            edges.append((int(torch.randint(0, seeds, (), generator=gen)) << shift)
                         | (offsets[t] + int(torch.randint(0, sizes[t], (), generator=gen))))
    mask = (1 << shift) - 1
    ids, sources = _C.disjoint_relabel(torch.tensor(dst_keys, dtype=torch.int64), dst_begin,
                                       torch.tensor(edges, dtype=torch.int64), offsets, mask)
    want_ids, want_sources = reference(dst_keys, dst_begin, edges, offsets, mask)
    assert ids.tolist() == want_ids
    assert [s.tolist() for s in sources] == want_sources


def _keys(ids: torch.Tensor, seed_index: torch.Tensor, offset: int, shift: int) -> torch.Tensor:
    return (seed_index << shift) | (ids + offset)


def _check_layers(blocks: list, relations: list, node_types: list[str], offsets: dict[str, int],
                  shift: int) -> None:
    """Each layer's source lists and block indices, as the CPU op's hash map numbered them,
    rebuilt by disjoint_relabel from the layer's keys."""
    for block in blocks:
        src_keys = {t: _keys(block.src_nodes[t], block.seed_index[t], offsets[t], shift)
                    for t in node_types}
        dst_keys = torch.cat([src_keys[t][:block.num_dst[t]] for t in node_types])
        dst_begin = [0]
        for t in node_types:
            dst_begin.append(dst_begin[-1] + block.num_dst[t])
        edge_keys = torch.cat([src_keys[rel[0]][block.blocks[rel].indices] for rel in relations])
        bounds = [offsets[t] for t in node_types] + [1 << shift]
        ids, sources = _C.disjoint_relabel(dst_keys, dst_begin, edge_keys, bounds,
                                           (1 << shift) - 1)
        assert ids.tolist() == torch.cat([block.blocks[r].indices for r in relations]).tolist()
        for t, keys in zip(node_types, sources):
            assert keys.tolist() == src_keys[t].tolist()


@pytest.mark.parametrize("strategy", ["uniform", "last"])
def test_it_numbers_the_cpu_ops_typed_temporal_layers(strategy: str) -> None:
    gen = torch.Generator().manual_seed(3)
    g = TypedGraph.from_edges(
        {"paper": 60, "author": 25},
        {("paper", "cites", "paper"): (torch.randint(0, 60, (500,), generator=gen),
                                       torch.randint(0, 60, (500,), generator=gen)),
         ("author", "writes", "paper"): (torch.randint(0, 25, (150,), generator=gen),
                                         torch.randint(0, 60, (150,), generator=gen)),
         ("paper", "rev_writes", "author"): (torch.randint(0, 60, (150,), generator=gen),
                                             torch.randint(0, 25, (150,), generator=gen))})
    sampler = FusedSampler(g, [4, 3, 5], times={"cites": torch.randint(0, 20, (500,),
                                                                        generator=gen)},
                           temporal_strategy=strategy,
                           node_time={"paper": torch.randint(0, 20, (60,), generator=gen)})
    mb = sampler.sample({"paper": torch.tensor([3, 3, 9, 41, 17, 3])})
    shift = (85 - 1).bit_length()
    offsets = {"paper": 0, "author": 60} if g.node_types[0] == "paper" else {"author": 0,
                                                                            "paper": 25}
    _check_layers(mb.blocks, list(g.canonical_relations), list(g.node_types), offsets, shift)


def test_it_numbers_the_cpu_ops_homogeneous_temporal_layers() -> None:
    gen = torch.Generator().manual_seed(5)
    n = 300
    g = CSCGraph.from_edges(torch.randint(0, n, (4000,), generator=gen),
                            torch.randint(0, n, (4000,), generator=gen), n)
    sampler = FusedSampler(g, [5, 10], times=torch.randint(0, 50, (4000,), generator=gen),
                           time_window=20)
    mb = sampler.sample(torch.randint(0, n, (64,), generator=gen),
                        seed_time=torch.randint(0, 50, (64,), generator=gen))
    shift = (n - 1).bit_length()
    for block in mb.blocks:
        keys = _keys(block.src_nodes, block.seed_index, 0, shift)
        ids, sources = _C.disjoint_relabel(keys[:block.num_dst], [0, block.num_dst],
                                           keys[block.indices], [0, n], (1 << shift) - 1)
        assert ids.tolist() == block.indices.tolist()
        assert sources[0].tolist() == keys.tolist()


def test_empty_layers_and_bad_arguments() -> None:
    ids, sources = _C.disjoint_relabel(torch.tensor([5, 9]), [0, 2], torch.empty(0, dtype=torch.int64),
                                       [0, 16], 15)
    assert ids.numel() == 0 and sources[0].tolist() == [5, 9]
    ids, sources = _C.disjoint_relabel(torch.empty(0, dtype=torch.int64), [0, 0],
                                       torch.tensor([-1, 3, 3]), [0, 16], 15)
    assert ids.tolist() == [0, 0, 0] and sources[0].tolist() == [3]
    with pytest.raises(RuntimeError, match="dst_begin must run from 0"):
        _C.disjoint_relabel(torch.tensor([5]), [0, 2], torch.tensor([1]), [0, 16], 15)
    with pytest.raises(RuntimeError, match="int64 vectors"):
        _C.disjoint_relabel(torch.tensor([5], dtype=torch.int32), [0, 1], torch.tensor([1]),
                            [0, 16], 15)
