"""Planted relations: typed edges whose endpoints share a latent class more often than chance.

Why: a synthetic heterogeneous dataset (mag-sim, igbh-sim) needs relations that reveal a
paper's label better than its own features do, with the heavy-tailed degrees of real
bibliographic graphs. Per relation one side "drives" it: its nodes get heavy-tailed degree
weights (floor + Lomax) apportioned to exactly the relation's edge count; each edge picks its
other end proportional to that side's own heavy-tailed popularity, with probability
`homophily` among the nodes of the driver's class, else among all. Repeated picks of one
driver (and, within one type, picking itself) are redrawn, so relations are simple.

Everything is vectorised numpy drawn from the caller's generator, so a seed gives the same
edges bit for bit. `chunk_edges` bounds the temporaries of a large relation: drivers are
processed in runs of about that many edges (a driver's edges never straddle two runs, so
distinctness is kept); without it the whole relation is one run.
"""
from __future__ import annotations

import numpy as np

__all__ = ["Pool", "RelationModel", "degrees", "distinct_picks", "relation_edges", "weights"]

_MAX_ROUNDS, _UNIFORM_AFTER = 60, 20  # redraw rounds; later rounds pick uniformly among all

#: (driver side "src" or "dst", (floor, Lomax shape) of the driver's degree weights,
#: (floor, Lomax shape) of the picked side's popularity weights).
RelationModel = tuple[str, tuple[float, float], tuple[float, float]]


def weights(rng: np.random.Generator, n: int, floor_and_shape: tuple[float, float]) -> np.ndarray:
    """float64 heavy-tailed weights of `n` nodes: floor + Lomax(shape)."""
    floor, shape = floor_and_shape
    return floor + rng.pareto(shape, size=n)


def degrees(weights: np.ndarray, total: int, cap: int) -> np.ndarray:
    """int64 degrees summing to exactly `total`, proportional to `weights` and at most `cap`
    (water-filling: the excess of the capped nodes goes to the others), rounded through the
    prefix sum."""
    limit = cap - 1.0  # rounding the prefix sums adds at most 1 to a node's share
    if total > limit * weights.size:
        raise ValueError(f"cannot place {total} edges on {weights.size} nodes of degree <= {cap}")
    share = weights * (total / weights.sum())
    while share.max() > limit:
        np.minimum(share, limit, out=share)
        free = share < limit
        share[free] *= (total - limit * (~free).sum()) / share[free].sum()
    ends = np.rint(np.cumsum(share)).astype(np.int64)
    ends[-1] = total
    return np.diff(ends, prepend=0)


class Pool:
    """The nodes of one type, drawn proportional to weight: from all, or from one class's."""

    def __init__(self, classes: np.ndarray, weights: np.ndarray, num_classes: int):
        self.order = np.argsort(classes, kind="stable")
        self.cum = np.cumsum(weights[self.order])
        sizes = np.bincount(classes, minlength=num_classes)
        ends = np.cumsum(sizes)
        bounds = np.concatenate(([0.0], self.cum))
        self.lo, self.hi = bounds[ends - sizes], bounds[ends]

    def draw(self, rng: np.random.Generator, classes: np.ndarray, same: np.ndarray) -> np.ndarray:
        """One node per entry: of class `classes[i]` where `same[i]` (and that class has
        nodes), else of any class."""
        same &= self.hi[classes] > self.lo[classes]
        lo = np.where(same, self.lo[classes], 0.0)
        hi = np.where(same, self.hi[classes], self.cum[-1])
        pos = np.searchsorted(self.cum, lo + rng.random(classes.size) * (hi - lo), side="right")
        return self.order[np.minimum(pos, self.order.size - 1)]


def distinct_picks(rng: np.random.Generator, drivers: np.ndarray, driver_classes: np.ndarray,
                   pool: Pool, homophily: float, no_self: bool, name: str) -> np.ndarray:
    """int64 picked node per edge, no driver picking one node twice (nor itself if
    `no_self`): repeats are redrawn, uniformly among all nodes after _UNIFORM_AFTER rounds."""
    n = pool.order.size
    picked = np.empty(drivers.size, dtype=np.int64)
    todo = np.arange(drivers.size)
    for round_ in range(_MAX_ROUNDS):
        if round_ < _UNIFORM_AFTER:
            picked[todo] = pool.draw(rng, driver_classes[todo], rng.random(todo.size) < homophily)
        else:
            picked[todo] = rng.integers(0, n, size=todo.size)
        keys = drivers * n + picked
        order = np.argsort(keys, kind="stable")
        repeat = np.zeros(drivers.size, dtype=bool)
        repeat[order[1:][keys[order[1:]] == keys[order[:-1]]]] = True
        if no_self:
            repeat |= picked == drivers
        todo = np.flatnonzero(repeat)
        if todo.size == 0:
            return picked
    raise RuntimeError(f"{name}: {todo.size} repeated picks left after {_MAX_ROUNDS} rounds")


def relation_edges(rng: np.random.Generator, model: RelationModel, count: int,
                   src_classes: np.ndarray, dst_classes: np.ndarray, same_type: bool,
                   homophily: float, num_classes: int, name: str,
                   chunk_edges: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(src, dst) int64 ids of `count` distinct edges of one relation (model: module doc);
    `same_type`: both ends are one node type (no self-edges)."""
    side, driver_weights, pick_weights = model
    driver_classes, picked_classes = ((src_classes, dst_classes) if side == "src"
                                      else (dst_classes, src_classes))
    n_driver, n_picked = driver_classes.size, picked_classes.size
    per_driver = degrees(weights(rng, n_driver, driver_weights), count, max(2, n_picked // 4))
    pool = Pool(picked_classes, weights(rng, n_picked, pick_weights), num_classes)
    ends = np.cumsum(per_driver)
    if chunk_edges is None:
        cuts = [0, n_driver]
    else:  # driver boundaries about chunk_edges edges apart
        cuts = np.unique(np.concatenate(([0], np.searchsorted(
            ends, np.arange(chunk_edges, count, chunk_edges), side="right"), [n_driver])))
    picked = np.empty(count, dtype=np.int64)
    drivers_out = np.empty(count, dtype=np.int64)
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        begin = 0 if lo == 0 else int(ends[lo - 1])
        end = int(ends[hi - 1]) if hi else 0
        drivers = np.repeat(np.arange(lo, hi, dtype=np.int64), per_driver[lo:hi])
        picked[begin:end] = distinct_picks(rng, drivers, driver_classes[drivers], pool,
                                           homophily, same_type, name)
        drivers_out[begin:end] = drivers
    return (drivers_out, picked) if side == "src" else (picked, drivers_out)
