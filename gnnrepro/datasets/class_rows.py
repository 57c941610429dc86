"""Node attributes as functions of (seed, node id): the row model igb-sim and papers-sim share.

Why: a dataset whose features exceed memory is written chunk by chunk, possibly by several
threads, and checked without a second copy of its table. So nothing a node gets may depend on
the order in which nodes are generated: its uniforms come from a hash of (seed, stream, id),
its latent class from a uniform through a mildly imbalanced prior (p_c proportional to
1/(c+10)), and its feature row is SIGNAL * (unit centroid of the class) + N(0, 1) noise, the
noise of each `group_rows`-row group drawn from a Philox stream keyed by (seed, group). Any row
regenerates from (seed, id) alone (`ClassRows.feature_rows`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ClassRows", "node_uniforms", "splitmix64"]

_CENTROID_STREAM = 1


def splitmix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser on uint64 arrays (wrapping arithmetic)."""
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def node_uniforms(ids: np.ndarray, seed: int, stream: int = 0) -> np.ndarray:
    """float64 uniforms in [0, 1), one per node id: a hash of (seed, stream, id). Streams
    are independent draws per node (stream 0 picks the latent class)."""
    key = splitmix64(np.array([seed], dtype=np.uint64))
    if stream:
        key = splitmix64(key ^ np.uint64(stream))
    return (splitmix64(np.asarray(ids, dtype=np.uint64) ^ key) >> np.uint64(11)) * 2.0 ** -53


@dataclass(frozen=True)
class ClassRows:
    """Latent classes and class-signal feature rows of one dataset's shape."""

    num_classes: int
    num_features: int
    signal: float  # centroid norm against unit-variance noise per feature
    group_rows: int  # rows per noise stream: regenerating one row draws this many

    def class_prior(self) -> np.ndarray:
        """float64 [num_classes]: each class's share of the nodes (expected)."""
        prior = 1.0 / (np.arange(self.num_classes) + 10.0)
        return prior / prior.sum()

    def latent_classes(self, ids: np.ndarray, seed: int) -> np.ndarray:
        """int64 latent class of each node id: a hash of (seed, id) through the class prior."""
        cdf = np.cumsum(self.class_prior())
        u = node_uniforms(ids, seed)
        return np.minimum(np.searchsorted(cdf, u, side="right"), self.num_classes - 1)

    def centroids(self, seed: int) -> np.ndarray:
        """float32 [num_classes, num_features]: signal times a random unit vector per class."""
        c = np.random.default_rng([seed, _CENTROID_STREAM]).standard_normal(
            (self.num_classes, self.num_features))
        return (c * (self.signal / np.linalg.norm(c, axis=1, keepdims=True))).astype(np.float32)

    def _noise_group(self, seed: int, group: int, out: np.ndarray) -> None:
        """The noise of rows [group * group_rows, +group_rows) into `out` (its first rows)."""
        rng = np.random.Generator(np.random.Philox(key=[seed, group]))
        full = rng.standard_normal((self.group_rows, self.num_features), dtype=np.float32)
        out[:] = full[: out.shape[0]]

    def range_rows(self, start: int, stop: int, seed: int, centroids: np.ndarray) -> np.ndarray:
        """Rows of nodes [start, stop), start a multiple of group_rows (`centroids`: the
        seed's, computed once by the caller)."""
        g = self.group_rows
        out = np.empty((stop - start, self.num_features), dtype=np.float32)
        for lo in range(start, stop, g):
            self._noise_group(seed, lo // g, out[lo - start: min(lo + g, stop) - start])
        out += centroids[self.latent_classes(np.arange(start, stop), seed)]
        return out

    def feature_rows(self, ids: np.ndarray, seed: int) -> np.ndarray:
        """float32 [len(ids), num_features]: the rows of node `ids`, regenerated from
        (seed, id) alone (each distinct group is drawn once)."""
        ids = np.asarray(ids, dtype=np.int64)
        out = np.empty((ids.size, self.num_features), dtype=np.float32)
        groups, where = np.unique(ids // self.group_rows, return_inverse=True)
        by_group = np.argsort(where, kind="stable")
        bounds = np.searchsorted(where[by_group], np.arange(groups.size + 1))
        block = np.empty((self.group_rows, self.num_features), dtype=np.float32)
        for g, group in enumerate(groups.tolist()):
            self._noise_group(seed, group, block)
            mine = by_group[bounds[g]:bounds[g + 1]]
            out[mine] = block[ids[mine] - group * self.group_rows]
        out += self.centroids(seed)[self.latent_classes(ids, seed)]
        return out
