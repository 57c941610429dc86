"""Node features with a class signal: what products-sim, temporal-sim, citation-sim and
mag-sim draw (one function, so that one seed gives every one of them the same rows it always
did).

A row is SIGNAL times the unit centroid of its node's class plus unit-variance Gaussian noise:
the centroids are drawn first, then the noise of every row, from one generator, so the table is
a function of the generator's state and the classes. Filled a chunk of rows at a time (the
centroid rows gathered for a chunk stay ~100 MB), with progress where the caller names it.
"""
from __future__ import annotations

import numpy as np

from gnnrepro.progress import Progress

__all__ = ["centroid_features"]

_CHUNK_ROWS = 1 << 18


def centroid_features(rng: np.random.Generator, classes: np.ndarray, num_classes: int,
                      num_features: int, signal: float,
                      progress: str | None = None) -> np.ndarray:
    """float32 [len(classes), num_features] (module docstring)."""
    centroids = rng.standard_normal((num_classes, num_features))
    centroids *= signal / np.linalg.norm(centroids, axis=1, keepdims=True)
    centroids = centroids.astype(np.float32)
    features = np.empty((classes.size, num_features), dtype=np.float32)
    rng.standard_normal(out=features, dtype=np.float32)
    bar = Progress(progress, classes.size, "nodes") if progress else None
    for start in range(0, classes.size, _CHUNK_ROWS):
        features[start:start + _CHUNK_ROWS] += centroids[classes[start:start + _CHUNK_ROWS]]
        if bar is not None:
            bar.update(min(_CHUNK_ROWS, classes.size - start))
    if bar is not None:
        bar.close()
    return features
