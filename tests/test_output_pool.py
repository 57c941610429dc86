"""The pool the CPU sampler's large outputs come from (csrc/common/output_pool.h): reused memory
must never change a tensor the caller still holds, and the pool stays within its cap."""
from __future__ import annotations

import torch

from helpers import random_graph
from gnnrepro import _ops
from gnnrepro.sampling import FusedSampler

FANOUTS = [10, 10]


def _stats() -> dict[str, int]:
    cached, cap, hits, misses = _ops._C.output_pool_stats()
    return {"cached": cached, "cap": cap, "hits": hits, "misses": misses}


def _sampler() -> tuple[FusedSampler, int]:
    # Large enough that the widest block's indices (~400k int64) come from the pool.
    graph = random_graph(60_000, 600_000, power_law=False, seed=0)
    return FusedSampler(graph, FANOUTS, seed=3), graph.num_nodes


def _seeds(num_nodes: int, batch: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(batch)
    return torch.randperm(num_nodes, generator=gen)[:4096]


def test_outputs_held_by_the_caller_survive_reuse_of_freed_ones():
    sampler, n = _sampler()
    held = sampler.sample(_seeds(n, 0), 0)
    tensors = [t for b in held.blocks for t in (b.indptr, b.indices, b.src_nodes)]
    copies = [t.clone() for t in tensors]
    assert tensors[-2].numel() * 8 >= 256 << 10, "the test needs an output the pool serves"
    before = _stats()
    for batch in range(1, 8):  # each batch's outputs are freed before the next is sampled
        mb = sampler.sample(_seeds(n, batch), batch)
        expected = sampler.sample(_seeds(n, batch), batch)  # drawn while mb is alive
        for got, want in zip(mb.blocks, expected.blocks):
            assert torch.equal(got.indices, want.indices)
            assert got.indices.data_ptr() != want.indices.data_ptr()
        del mb, expected
    after = _stats()
    assert after["hits"] > before["hits"], "freed outputs were not reused"
    for tensor, copy in zip(tensors, copies):
        assert torch.equal(tensor, copy), "a held output changed when the pool reused memory"


def test_cached_bytes_stay_within_the_cap():
    sampler, n = _sampler()
    kept = [sampler.sample(_seeds(n, b), b) for b in range(12)]  # ~50 MB of outputs
    del kept  # all returned at once: more than the cap
    stats = _stats()
    assert 0 < stats["cached"] <= stats["cap"]


def test_pooled_outputs_resize_share_and_pin_like_torch_tensors():
    sampler, n = _sampler()
    indices = sampler.sample(_seeds(n, 0), 0).blocks[0].indices
    copy = indices.clone()
    indices.resize_(indices.numel() * 2)  # grows through the pool's allocator, keeping the data
    assert torch.equal(indices[:copy.numel()], copy)
    indices.resize_(copy.numel())
    indices.share_memory_()  # moves the pooled storage into shared memory (process workers)
    assert indices.is_shared() and torch.equal(indices, copy)
    if torch.cuda.is_available():
        assert torch.equal(indices.pin_memory(), copy)
