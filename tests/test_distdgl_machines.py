"""DistDGL on two "machines" of one host (gnnrepro.bench.partitioned_dgl): each machine's
process has its own /dev/shm (a private mount namespace) and tells its trainer its machine id,
so both machines train; nothing is left in the host's /dev/shm. Needs DGL and root
(CAP_SYS_ADMIN for the mount namespace); skipped otherwise."""
from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import pytest

from gnnrepro.bench.partitioned_dgl import private_shared_memory, run_distdgl
from gnnrepro.config import TrainConfig
from gnnrepro.datasets import load
from helpers import require_dgl

SHM = Path("/dev/shm")


def _mark_private(name: str, queue: multiprocessing.Queue) -> None:
    try:
        private_shared_memory()
    except OSError as exc:
        queue.put(f"error: {exc}")
        return
    (SHM / name).write_text("x")
    queue.put(sorted(p.name for p in SHM.iterdir()))


def _private_listing(name: str) -> list[str] | str:
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    child = context.Process(target=_mark_private, args=(name, queue))
    child.start()
    listing = queue.get(timeout=60)
    child.join()
    return listing


def _require_namespaces() -> None:
    listing = _private_listing(f"gnnrepro-probe-{os.getpid()}")
    if isinstance(listing, str):
        pytest.skip(f"no private /dev/shm here ({listing})")


def test_a_private_shared_memory_is_empty_and_invisible_to_the_host():
    _require_namespaces()
    name = f"gnnrepro-test-{os.getpid()}"
    assert _private_listing(name) == [name]  # empty before: only what the child wrote
    assert not (SHM / name).exists()


def test_distdgl_trains_on_two_machines_of_one_host(tmp_path):
    require_dgl()
    _require_namespaces()
    data = load("products-sim", root=tmp_path / "data", scale=0.005)
    before = set(os.listdir(SHM))
    config = TrainConfig(fanouts=(4, 3), batch_size=128, epochs=2, hidden=16, threads=1,
                         device="cpu")
    result = run_distdgl(data, 2, config, tmp_path, timeout_s=300)
    assert result["ran"], result
    assert result["own_shared_memory"] and result["batch_size_per_rank"] == 64
    assert len(result["epochs_s"]) == 2 and 0 <= result["test_acc"] <= 1
    assert result["steps_per_rank"] >= 2  # at least one step per epoch
    assert result["loopback_bytes_per_step"] > 0
    assert set(os.listdir(SHM)) <= before  # nothing left behind on the host
