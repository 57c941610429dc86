"""The feature-store benchmarks' own settings: `bench storage` and notebook 06_storage
(`STORAGE_DEFAULTS`), `bench disk-training` (`DISK_TRAINING_DEFAULTS`); the command line's
defaults, the benchmark functions' and the notebook's, each written once here.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DISK_TRAINING_DEFAULTS", "STORAGE_DEFAULTS", "DiskTrainingDefaults",
           "StorageDefaults"]


@dataclass(frozen=True)
class StorageDefaults:
    """`bench storage`'s settings, shared by the command line, gnnrepro.bench.storage.measure
    and notebook 06_storage (whose stored results were measured with them): feature stores on
    data larger than the memory a memory cgroup lets them use."""

    #: The disk store's hot set + cache, as fractions of the feature file. The first is the
    #: default (`budget_fraction`) and the notebook's run with every store; the notebook runs
    #: the disk store alone at the others, to show how it fares as its memory shrinks.
    budgets: tuple[float, ...] = (0.10, 0.02, 0.05)
    #: What a capped store may use beyond the training process's own needs (page cache and
    #: the store's buffers), as a fraction of the feature file: well under the whole file, so
    #: that no store can keep the features cached and each must read from the device.
    memory_fraction: float = 0.25
    #: The disk store's hot set as a share of its budget; the rest is its CLOCK cache.
    hot_share: float = 0.5
    #: Batches per measured epoch of gathers: the same batches for every store, so each is
    #: hashed once in memory and every store's rows are checked against those hashes.
    batches: int = 6
    #: Epochs of gathers: the last one, with the cache warmed by the ones before, is reported.
    epochs: int = 2
    #: Batches of the end-to-end training epoch: a few give the time per batch, from which a
    #: slow store's whole epoch is extrapolated.
    train_batches: int = 3
    #: The longest a store's measured epoch may take (gathers and the end-to-end epoch): a
    #: slow baseline (mmap under the cap) reports the batches it did instead of taking hours.
    epoch_seconds: float = 20.0
    #: Batches the disk store reads ahead. Each batch read ahead holds its rows in memory,
    #: charged to the cap, and the batches are a sizable share of a capped file: more would
    #: take the cap's memory from the cache.
    lookahead: int = 1
    #: Seconds of each device-ceiling measurement (fio or our reader: several block sizes and
    #: queue depths per run); random reads reach a steady rate well within this.
    ceiling_seconds: float = 1.0
    #: The disk store's reads in flight and I/O threads (its pread engine's pool).
    queue_depth: int = 32
    io_threads: int = 16
    #: The notebook's batches: a batch of the training batch size with every fanout would read
    #: most of a small file's rows, and hold more than the cap, so at most this many seeds and
    #: the innermost `max_layers` fanouts.
    max_batch_size: int = 128
    max_layers: int = 2

    @property
    def budget_fraction(self) -> float:
        """The default budget: the first of `budgets`."""
        return self.budgets[0]


@dataclass(frozen=True)
class DiskTrainingDefaults:
    """`bench disk-training`'s settings (the command line's and
    gnnrepro.bench.disk_training.measure's): GIDS's setting on a CPU, a different benchmark
    from `bench storage`. The features are larger than this machine's memory and uncapped,
    the batches are GIDS's, and the baselines are too slow to train more than a few steps."""

    #: The dataset and scale whose features are larger than a common machine's memory.
    dataset: str = "igb-sim"
    scale: float = 1.0
    #: GIDS's fanouts.
    fanouts: tuple[int, ...] = (10, 5, 5)
    #: The disk store's hot set + cache, as a fraction of the feature file, and the hot set's
    #: share of it (the rest is the CLOCK cache): as in `bench storage`.
    budget_fraction: float = 0.10
    hot_share: float = 0.5
    #: Batches the disk store reads ahead: one. Each batch read ahead holds all its input rows
    #: in memory, and at GIDS's batch size and fanouts a batch is a sizable share of the budget.
    lookahead: int = 1
    #: The disk store's reads in flight, deeper than `bench storage`'s: every batch reads a
    #: great many whole-block rows, and the device delivered more of them per second at this
    #: depth than at half of it (benchmarks/NOTES.md, "The measurement: `bench
    #: disk-training`"). And its I/O threads (its pread engine's pool).
    queue_depth: int = 128
    io_threads: int = 16
    #: The disk store's batches gathered back to back and training steps: enough for steady
    #: rates; the epoch is extrapolated from the time per step.
    gather_batches: int = 10
    train_batches: int = 200
    #: The baselines' (mmap, mmap-random, LMDB) batches and steps: few, as each takes long.
    baseline_gather_batches: int = 2
    baseline_train_batches: int = 2
    #: The longest a baseline gathers; it trains only if one step's gather fits in it.
    baseline_seconds: float = 300.0
    #: Test (and val) ids evaluated through the disk store: a sample, as evaluating every id
    #: would read the whole file again.
    eval_ids: int = 4096
    #: Sampled batches whose rows are checked against regenerated rows.
    check_batches: int = 2
    #: Seconds of each device-ceiling measurement (fio, or our reader where fio is absent).
    ceiling_seconds: float = 4.0


STORAGE_DEFAULTS = StorageDefaults()
DISK_TRAINING_DEFAULTS = DiskTrainingDefaults()
