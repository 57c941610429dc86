"""Shared fixtures: small random graphs with the awkward cases samplers must handle, a small
dataset, one torch thread. Helper functions that tests import live in tests/helpers.py."""
from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from helpers import random_graph

from gnnrepro import CSCGraph
from gnnrepro.datasets import Dataset, load


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


@pytest.fixture
def bench_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """For a benchmark run in this process: a private dataset cache, and torch's thread count
    (which benchmarks set) restored afterwards."""
    monkeypatch.setenv("GNNREPRO_DATA", str(tmp_path / "cache"))
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Record (and refuse) every attempt to resolve or connect: the test fails on any."""
    attempts: list[str] = []

    def refuse(*args: object, **_kwargs: object) -> None:
        attempts.append(repr(args[:2]))
        raise OSError("network access in a test")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    yield attempts
    ogb_version = sys.modules.get("ogb.version")
    if ogb_version is not None and hasattr(ogb_version, "thread"):
        ogb_version.thread.join()  # ogb's PyPI check, if anything started it
    assert attempts == []


# The slowest files (about 20-290 s each on 2 cores), slowest first. `make test` hands whole
# files to its pytest-xdist workers in collection order (--dist loadfile
# --no-loadscope-reorder): started first, they overlap the many short files instead of running
# alone at the end (longest-first scheduling; xdist's default order is by test count).
SLOW_FILES_FIRST = ("test_notebooks.py", "test_checkpoint.py", "test_gpu_session_dry_run.py",
                    "test_readme.py", "test_partitioned_training.py", "test_bench_end_to_end.py",
                    "test_distributed.py", "test_distdgl_machines.py", "test_layer_by_layer.py",
                    "test_browser.py", "test_bench_typed_disk.py", "test_machine_share.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Puts SLOW_FILES_FIRST's tests first, in that order (a stable sort: each file's own
    order and the other files' order are kept)."""
    rank = {name: i for i, name in enumerate(SLOW_FILES_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
