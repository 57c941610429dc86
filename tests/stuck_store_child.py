"""A `bench storage` child (gnnrepro.bench.storage_child) whose mmap store never finishes a
gather, as a baseline far slower than its time limit: for tests/test_bench_storage.py, run as
`python -m stuck_store_child` with tests/ on PYTHONPATH. The other stores run as usual.
"""
from __future__ import annotations

import time

from gnnrepro.bench import storage_child
from gnnrepro.bench.child_process import child_main
from gnnrepro.features import MmapFeatureStore


def _stuck(self, ids, out=None):
    time.sleep(3600)  # until the parent kills this process at its time limit


if __name__ == "__main__":
    MmapFeatureStore.gather = _stuck
    child_main(storage_child.child)
