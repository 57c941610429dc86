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

import shutil  # noqa: F401  (tests fake a full disk through igb_sim.shutil.disk_usage)
from pathlib import Path

import numpy as np
import torch

from gnnrepro.datasets import streamed
from gnnrepro.datasets.chung_lu import chung_lu_graph
from gnnrepro.datasets.class_rows import ClassRows
from gnnrepro.datasets.dataset import ARRAYS, Dataset
from gnnrepro.datasets.scaled import check_scale_and_seed
from gnnrepro.feature_file import ALIGN
from gnnrepro.progress import announce

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
ROWS = ClassRows(NUM_CLASSES, NUM_FEATURES, SIGNAL, GROUP_ROWS)


def load_igb_sim(root: str | Path | None = None, scale: float = 1.0, seed: int = 0) -> Dataset:
    """igb-sim at `scale` from the cache under `root`, built (or an interrupted build
    resumed) on the first call; the features stay on disk, memory-mapped."""
    params = _check_params(scale, seed)
    return streamed.load_streamed(root, NAME, params, NUM_CLASSES,
                                  lambda partial: _stages(partial, params))


def generate(scale: float = 1.0, seed: int = 0) -> Dataset:
    """igb-sim in memory (features included: for scales that fit), equal to the cached one."""
    params = _check_params(scale, seed)
    arrays = _graph_and_labels(**params)
    arrays["features"] = torch.from_numpy(ROWS.feature_rows(np.arange(arrays["labels"].numel()),
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


# ---- rows from (seed, node id): gnnrepro.datasets.class_rows ---------------------------------

def latent_classes(ids: np.ndarray, seed: int) -> np.ndarray:
    """int64 latent class of each node id: a hash of (seed, id) through the class prior."""
    return ROWS.latent_classes(ids, seed)


def _centroids(seed: int) -> np.ndarray:
    """float32 [NUM_CLASSES, NUM_FEATURES]: SIGNAL times a random unit vector per class."""
    return ROWS.centroids(seed)


def feature_rows(ids: np.ndarray, seed: int) -> np.ndarray:
    """float32 [len(ids), NUM_FEATURES]: the feature rows of node `ids`, regenerated from
    (seed, id) alone."""
    return ROWS.feature_rows(ids, seed)


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


# ---- the streaming build (gnnrepro.datasets.streamed) -------------------------------------

def _stages(partial: Path, params: dict) -> dict[str, int]:
    """Write every array into `partial` (resuming): the disk check, graph, then features."""
    nodes, pairs, _, _ = counts(params["scale"])
    streamed.check_disk(partial, NAME, params,
                        feature_bytes(params["scale"]) + nodes * 8 * 3 + pairs * 2 * 4)
    arrays = _graph_stage(partial, params)
    centroids = ROWS.centroids(params["seed"])
    streamed.write_features(
        partial, NAME, nodes, NUM_FEATURES,
        lambda start, stop: ROWS.range_rows(start, stop, params["seed"], centroids),
        GROUP_ROWS, _CHECKPOINT_BYTES)
    return {"num_nodes": arrays["labels"].numel(), "num_edges": arrays["indices"].numel(),
            "num_features": NUM_FEATURES,
            **{k: arrays[k].numel() for k in ("train_idx", "val_idx", "test_idx")}}


def _graph_stage(partial: Path, params: dict) -> dict[str, torch.Tensor]:
    """The graph, labels and splits: from an earlier partial build when it wrote them all."""
    if streamed.read_progress(partial, params) is not None:
        announce(f"igb-sim: resuming the interrupted build in {partial} (graph already written)")
        return {k: torch.from_numpy(np.load(partial / f"{k}.npy", mmap_mode="r"))
                for k in ARRAYS if k != "features"}
    streamed.fresh_partial(partial, NAME)
    announce(f"igb-sim: generating the graph of {counts(params['scale'])[0]} nodes")
    arrays = _graph_and_labels(**params)
    for key, tensor in arrays.items():
        np.save(partial / f"{key}.npy", tensor.numpy())
    streamed.write_progress(partial, params)
    return arrays


def _check_params(scale: float, seed: int) -> dict[str, float | int]:
    """Validated, canonical parameters (they name the cache directory)."""
    return check_scale_and_seed(NAME, scale, seed, FULL_NODES, MIN_NODES)
