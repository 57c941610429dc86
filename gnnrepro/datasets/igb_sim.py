"""igb-sim: a synthetic stand-in for IGB (GIDS's dataset) whose features exceed host memory.

Why: GIDS trains on IGB, whose 1024-wide float32 features do not fit in a host's
memory. At scale 1.0 igb-sim has IGB-medium's 10M nodes, so its features take 41 GB (1.6x a
25 GB machine), on a power-law graph of 13 mean degree with 19 classes and IGB's 60/20/20
splits.

Model: every node's latent class comes from a hash of (seed, node id) with a mildly
imbalanced prior; Chung-Lu edges (gnnrepro.datasets.chung_lu) with heavy-tailed weights, most
inside a class; features = SIGNAL * (unit centroid of the class) + N(0, 1) noise, the noise of
each GROUP_ROWS-row group drawn from a Philox stream keyed by (seed, group); labels = the class
except a LABEL_NOISE share replaced by a uniform class. So any feature row is a function of
(seed, node id) alone: `feature_rows` regenerates rows to check what a store returns, without
a second copy of the table.

Built streaming (`load_igb_sim`): the graph, labels and splits first (well under 4 GiB at
scale 1.0), then the features written chunk by chunk straight into the cache entry's feature
file (`features.gnnf`, dense rows of exactly 4 KiB: also the block-packed layout the disk
store reads), by as many threads as the process may use. Free disk is checked before
anything is written. The build happens in `<entry>.partial/`, renamed into place when
complete, so an interrupted build is never taken for a dataset: the next call resumes it
(from the last checkpoint of the features, or after the graph) and says so.
"""
from __future__ import annotations

import errno
import fcntl
import json
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import torch

from gnnrepro.datasets import cache
from gnnrepro.datasets.chung_lu import chung_lu_graph
from gnnrepro.datasets.dataset import ARRAYS, Dataset
from gnnrepro.datasets.scaled import check_scale_and_seed
from gnnrepro.feature_file import ALIGN, FeatureFileWriter
from gnnrepro.progress import Progress, announce

__all__ = ["NAME", "feature_rows", "generate", "latent_classes", "load_igb_sim"]

NAME = "igb-sim"

FULL_NODES = 10_000_000  # IGB-medium
MEAN_DEGREE = 13.0  # directed edges per node, both directions of every pair counted
NUM_FEATURES = 1024  # IGB's width: one 4 KiB row
NUM_CLASSES = 19  # IGB's coarse labels
TRAIN_SHARE, VAL_SHARE = 0.6, 0.2  # IGB's splits; the rest is test

HOMOPHILY = 0.75
PARETO_SHAPE = 2.5
WEIGHT_FLOOR = 0.05
SIGNAL = 1.5  # centroid norm against unit-variance noise per feature
LABEL_NOISE = 0.2
MIN_NODES = 1000
GROUP_ROWS = 16  # rows per noise stream: regenerating one row draws 64 KiB
_CHECKPOINT_BYTES = 1 << 30  # features made durable (and resumable) this often
_CENTROID_STREAM = 1


def load_igb_sim(root: str | Path | None = None, scale: float = 1.0, seed: int = 0) -> Dataset:
    """igb-sim at `scale` from the cache under `root`, built (or an interrupted build
    resumed) on the first call; the features stay on disk, memory-mapped."""
    params = _check_params(scale, seed)
    directory = cache.entry_dir(cache.default_root() if root is None else root, NAME, params)
    dataset = cache.read_entry(directory, NAME, params)
    if dataset is None:
        _build(directory, params)
        dataset = cache.read_entry(directory, NAME, params)
    if dataset is None:
        raise RuntimeError(f"cache entry {directory} is unreadable right after building it")
    return dataset


def generate(scale: float = 1.0, seed: int = 0) -> Dataset:
    """igb-sim in memory (features included: for scales that fit), equal to the cached one."""
    params = _check_params(scale, seed)
    arrays = _graph_and_labels(**params)
    arrays["features"] = torch.from_numpy(feature_rows(np.arange(arrays["labels"].numel()),
                                                       seed))
    return Dataset.from_arrays(arrays, num_classes=NUM_CLASSES, name=NAME, params=params)


def counts(scale: float) -> tuple[int, int, int, int]:
    """(nodes, undirected pairs, train, val) at `scale`; test is every remaining node."""
    nodes = round(FULL_NODES * scale)
    return (nodes, round(nodes * MEAN_DEGREE / 2), round(nodes * TRAIN_SHARE),
            round(nodes * VAL_SHARE))


def feature_bytes(scale: float) -> int:
    """Bytes of the feature file at `scale` (header included)."""
    return ALIGN + counts(scale)[0] * NUM_FEATURES * 4


# ---- rows from (seed, node id) -----------------------------------------------------------

def _splitmix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser on uint64 arrays (wrapping arithmetic)."""
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def latent_classes(ids: np.ndarray, seed: int) -> np.ndarray:
    """int64 latent class of each node id: a hash of (seed, id) through the class prior."""
    key = _splitmix64(np.array([seed], dtype=np.uint64))
    u = (_splitmix64(np.asarray(ids, dtype=np.uint64) ^ key) >> np.uint64(11)) * 2.0 ** -53
    prior = 1.0 / (np.arange(NUM_CLASSES) + 10.0)
    cdf = np.cumsum(prior / prior.sum())
    return np.minimum(np.searchsorted(cdf, u, side="right"), NUM_CLASSES - 1)


def _centroids(seed: int) -> np.ndarray:
    """float32 [NUM_CLASSES, NUM_FEATURES]: SIGNAL times a random unit vector per class."""
    c = np.random.default_rng([seed, _CENTROID_STREAM]).standard_normal(
        (NUM_CLASSES, NUM_FEATURES))
    return (c * (SIGNAL / np.linalg.norm(c, axis=1, keepdims=True))).astype(np.float32)


def _noise_group(seed: int, group: int, out: np.ndarray) -> None:
    """The noise of rows [group * GROUP_ROWS, +GROUP_ROWS) into `out` (its first rows)."""
    rng = np.random.Generator(np.random.Philox(key=[seed, group]))
    full = rng.standard_normal((GROUP_ROWS, NUM_FEATURES), dtype=np.float32)
    out[:] = full[: out.shape[0]]


def _range_rows(start: int, stop: int, seed: int, centroids: np.ndarray) -> np.ndarray:
    """Rows of nodes [start, stop), start a multiple of GROUP_ROWS."""
    out = np.empty((stop - start, NUM_FEATURES), dtype=np.float32)
    for lo in range(start, stop, GROUP_ROWS):
        _noise_group(seed, lo // GROUP_ROWS, out[lo - start: min(lo + GROUP_ROWS, stop) - start])
    out += centroids[latent_classes(np.arange(start, stop), seed)]
    return out


def feature_rows(ids: np.ndarray, seed: int) -> np.ndarray:
    """float32 [len(ids), NUM_FEATURES]: the feature rows of node `ids`, regenerated from
    (seed, id) alone (each distinct GROUP_ROWS group is drawn once)."""
    ids = np.asarray(ids, dtype=np.int64)
    out = np.empty((ids.size, NUM_FEATURES), dtype=np.float32)
    groups, where = np.unique(ids // GROUP_ROWS, return_inverse=True)
    by_group = np.argsort(where, kind="stable")
    bounds = np.searchsorted(where[by_group], np.arange(groups.size + 1))
    block = np.empty((GROUP_ROWS, NUM_FEATURES), dtype=np.float32)
    for g, group in enumerate(groups.tolist()):
        _noise_group(seed, group, block)
        mine = by_group[bounds[g]:bounds[g + 1]]
        out[mine] = block[ids[mine] - group * GROUP_ROWS]
    out += _centroids(seed)[latent_classes(ids, seed)]
    return out


# ---- the graph, labels and splits ---------------------------------------------------------

def _graph_and_labels(scale: float, seed: int) -> dict[str, torch.Tensor]:
    """Every array but the features, from one default_rng(seed) stream."""
    num_nodes, num_pairs, num_train, num_val = counts(scale)
    rng = np.random.default_rng(seed)
    classes = latent_classes(np.arange(num_nodes), seed)
    weights = WEIGHT_FLOOR + rng.pareto(PARETO_SHAPE, size=num_nodes)
    graph = chung_lu_graph(rng, classes, weights, num_pairs, NUM_CLASSES, HOMOPHILY)
    del weights
    labels = classes
    noisy = rng.random(num_nodes) < LABEL_NOISE
    labels[noisy] = rng.integers(0, NUM_CLASSES, size=int(noisy.sum()))
    perm = rng.permutation(num_nodes)
    train, val, test = (np.sort(s) for s in np.split(perm, [num_train, num_train + num_val]))
    return {"indptr": graph.indptr, "indices": graph.indices,
            "labels": torch.from_numpy(labels), "train_idx": torch.from_numpy(train),
            "val_idx": torch.from_numpy(val), "test_idx": torch.from_numpy(test)}


# ---- the streaming build -------------------------------------------------------------------

def _build(directory: Path, params: dict) -> None:
    """Build the entry in `<directory>.partial/` (resuming one left there), then rename it."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    partial = directory.with_name(directory.name + ".partial")
    with open(directory.with_name(directory.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one builder at a time; the others wait, then read
        if cache.read_entry(directory, NAME, params) is not None:
            return
        if directory.exists():
            shutil.rmtree(directory)  # incomplete or stale: read_entry refused it
        _check_disk(partial, params)
        arrays = _graph_stage(partial, params)
        _feature_stage(partial, params)
        cache.write_meta(partial, NAME, NUM_CLASSES, params, {
            "num_nodes": arrays["labels"].numel(), "num_edges": arrays["indices"].numel(),
            "num_features": NUM_FEATURES,
            **{k: arrays[k].numel() for k in ("train_idx", "val_idx", "test_idx")}})
        os.replace(partial, directory)


def _check_disk(partial: Path, params: dict) -> None:
    """OSError(ENOSPC) naming the bytes needed and free when the rest of the build won't fit."""
    nodes, pairs, _, _ = counts(params["scale"])
    need = feature_bytes(params["scale"]) + nodes * 8 * 3 + pairs * 2 * 4
    have = sum(f.stat().st_size for f in partial.glob("*")) if partial.exists() else 0
    free = shutil.disk_usage(partial.parent).free
    if free < need - have:
        raise OSError(errno.ENOSPC, f"igb-sim at scale {params['scale']} needs {need - have} "
                                    f"more bytes of disk ({need / 1e9:.1f} GB in all) under "
                                    f"{partial.parent}, but {free} are free; free some space "
                                    f"or set GNNREPRO_DATA to a larger disk")


def _graph_stage(partial: Path, params: dict) -> dict[str, torch.Tensor]:
    """The graph, labels and splits: from an earlier partial build when it wrote them all."""
    done = partial / "graph.json"
    if done.exists() and json.loads(done.read_text()) == {"params": params,
                                                          "version": cache.FORMAT_VERSION}:
        announce(f"igb-sim: resuming the interrupted build in {partial} (graph already written)")
        return {k: torch.from_numpy(np.load(partial / f"{k}.npy", mmap_mode="r"))
                for k in ARRAYS if k != "features"}
    if partial.exists():
        announce(f"igb-sim: starting over: {partial} holds no usable graph")
        shutil.rmtree(partial)
    partial.mkdir()
    announce(f"igb-sim: generating the graph of {counts(params['scale'])[0]} nodes")
    arrays = _graph_and_labels(**params)
    for key, tensor in arrays.items():
        np.save(partial / f"{key}.npy", tensor.numpy())
    done.write_text(json.dumps({"params": params, "version": cache.FORMAT_VERSION}))
    return arrays


def _feature_stage(partial: Path, params: dict) -> None:
    """Write the feature file, resuming after its last checkpoint."""
    nodes, seed = counts(params["scale"])[0], params["seed"]
    writer = FeatureFileWriter(partial / cache.FEATURE_FILE, nodes, NUM_FEATURES, torch.float32,
                               partial=partial / f"{cache.FEATURE_FILE}.partial", resume=True)
    if writer.rows_done:
        announce(f"igb-sim: resuming the features at row {writer.rows_done} of {nodes}")
    else:
        announce(f"igb-sim: writing {writer.total_bytes / 1e9:.1f} GB of features to "
                 f"{partial / cache.FEATURE_FILE}")
    step = max(GROUP_ROWS, writer.chunk_rows // GROUP_ROWS * GROUP_ROWS)
    starts = list(range(writer.rows_done, nodes, step))
    every = max(1, _CHECKPOINT_BYTES // (step * NUM_FEATURES * 4))
    centroids = _centroids(seed)
    workers = max(1, len(os.sched_getaffinity(0)))
    try:
        with ThreadPoolExecutor(workers) as pool, \
                Progress("igb-sim features", nodes - writer.rows_done, "rows") as bar:
            pending = [pool.submit(_range_rows, s, min(s + step, nodes), seed, centroids)
                       for s in starts[:workers + 1]]
            for i in range(len(starts)):
                rows = pending.pop(0).result()
                if i + workers + 1 < len(starts):  # keep the threads busy, memory bounded
                    s = starts[i + workers + 1]
                    pending.append(pool.submit(_range_rows, s, min(s + step, nodes), seed,
                                               centroids))
                writer.append(rows)
                bar.update(rows.shape[0])
                if (i + 1) % every == 0:
                    writer.checkpoint()
        writer.finish()
    except BaseException:
        writer.close()  # the partial file stays: the next build resumes at its checkpoint
        raise


def _check_params(scale: float, seed: int) -> dict[str, float | int]:
    """Validated, canonical parameters (they name the cache directory)."""
    return check_scale_and_seed(NAME, scale, seed, FULL_NODES, MIN_NODES)
