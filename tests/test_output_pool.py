"""The pool the CPU sampler's large outputs come from (csrc/common/output_pool.h): reused memory
must never change a tensor the caller still holds, and the pool stays within its cap."""
from __future__ import annotations

import os
import signal
import threading
import time

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


def test_a_block_larger_than_the_cap_bypasses_the_pool():
    """A block the cache could never keep is neither taken from the pool (no hit or miss
    counted) nor given back to it (the cache keeps what it had)."""
    sampler, n = _sampler()
    indices = sampler.sample(_seeds(n, 0), 0).blocks[0].indices
    cap = _stats()["cap"]
    before = _stats()
    indices.resize_(cap // indices.element_size() + 1)  # the old block returns to the pool
    resized = _stats()
    assert (resized["hits"], resized["misses"]) == (before["hits"], before["misses"])
    del indices
    assert _stats() == resized


def test_a_child_forked_while_a_thread_samples_gets_a_working_sampler_and_pool():
    """A fork takes the pool's lock first, and the child's FusedSampler gets a fresh lock and
    node map: sampling in the child, with the sampler a parent thread was using, neither hangs
    nor changes the blocks."""
    sampler, n = _sampler()
    expected = sampler.sample(_seeds(n, 99), 99)
    stop = threading.Event()

    def keep_sampling() -> None:
        batch = 0
        while not stop.is_set():
            sampler.sample(_seeds(n, batch), batch)
            batch += 1

    thread = threading.Thread(target=keep_sampling)
    thread.start()
    try:
        for _ in range(5):
            pid = os.fork()
            if pid == 0:  # the child: one batch, compared, then out without cleanup
                torch.set_num_threads(1)
                got = sampler.sample(_seeds(n, 99), 99)
                same = all(torch.equal(a.indices, b.indices) and torch.equal(a.src_nodes,
                                                                             b.src_nodes)
                           for a, b in zip(got.blocks, expected.blocks))
                os._exit(0 if same else 1)
            assert _wait(pid, timeout_s=60) == 0
    finally:
        stop.set()
        thread.join()


def _wait(pid: int, timeout_s: float) -> int:
    """The child's exit code, or a failure (after killing it) if it is still running."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    raise AssertionError(f"forked child {pid} hung for {timeout_s} s")
