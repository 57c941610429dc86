"""igbh-sim: a synthetic stand-in for IGBH, MLPerf's R-GAT dataset, whose features exceed memory.

Why: MLPerf's GNN benchmark trains R-GAT on IGBH-Full (547M nodes, 1024-dim features on every
node type); this reproduces its schema, as MLPerf's reference builds it, at a size that a
single machine holds on disk, with features larger than its memory.

Schema (MLPerf's reference, IGBH large/full): node types paper, author, institute, fos,
journal, conference; relations paper-cites-paper (made symmetric, with a self-loop per paper),
paper-written_by-author, author-affiliated_to-institute, paper-topic-fos,
paper-published-journal, paper-venue-conference and the reverses rev_written_by,
rev_affiliated_to, rev_topic, rev_published, rev_venue. Papers are classified into 2,983
classes (IGBH's label_2K).

Size: scale 1.0 has IGB-medium's 10M papers and the other types in IGBH-Full's proportions to
its papers (10,292,360 authors, 999 institutes, 26,470 fields, 1,821 journals, 169
conferences; every type at least one node at small scales). Mean degrees approximate IGBH-Full's
(cites 14.8 per paper before symmetrising, 2.7 authors and 3.9 topics per paper); the journal
(0.4 per paper), conference (0.2) and affiliation (0.1 per author) shares are our estimates of
their order. Features: 1024 float16 per node of every type, written as one feature file per
type (`feat-<type>.gnnf`), 41.6 GB at 1.0 (`disk_bytes`), 2 KiB rows that never straddle a
4 KiB block. Splits: 60% of papers train, 0.5% validation (MLPerf's share), 20% test.

Model: every node of every type has a latent class, a hash of (seed, type, id) through the
prior p_c proportional to 1/(c+10) (gnnrepro.datasets.class_rows); relations are planted
(gnnrepro.datasets.planted: heavy-tailed degrees, HOMOPHILY of picks within the driver's
class); feature rows are SIGNAL * (unit centroid of the class, per type) + N(0, 1) noise, any
row regenerable from (seed, type, id) alone (`feature_rows`); a paper's label is its class
except a LABEL_NOISE share replaced by a uniform class.

Built streaming into `<entry>.partial/` and renamed into place when complete
(gnnrepro.datasets.streamed): the graph, labels and splits first, then each type's features
chunk by chunk; an interrupted build resumes.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from gnnrepro.datasets import streamed, typed_cache
from gnnrepro.datasets.class_rows import ClassRows, splitmix64
from gnnrepro.datasets.mag_schema import csc_from_edges
from gnnrepro.datasets.planted import RelationModel, relation_edges
from gnnrepro.datasets.scaled import check_scale_and_seed
from gnnrepro.datasets.typed_dataset import TypedDataset
from gnnrepro.feature_file import ALIGN, read_header
from gnnrepro.progress import announce
from gnnrepro.typed_graph import Relation, TypedGraph

__all__ = ["NAME", "NODE_TYPES", "RELATIONS", "counts", "disk_bytes", "feature_rows",
           "generate", "latent_classes", "load_igbh_sim"]

NAME = "igbh-sim"
TARGET = "paper"
NODE_TYPES = ("paper", "author", "institute", "fos", "journal", "conference")
_IGBH_FULL = {"paper": 269_346_174, "author": 277_220_883, "institute": 26_918,
              "fos": 712_960, "journal": 49_052, "conference": 4_547}
PAPERS = 10_000_000  # IGB-medium's papers at scale 1.0
FULL_NODES = {t: round(PAPERS * n / _IGBH_FULL["paper"]) for t, n in _IGBH_FULL.items()}

CITES: Relation = ("paper", "cites", "paper")
#: The planted relations with their mean degree per source node and their model
#: (gnnrepro.datasets.planted); cites is then made symmetric with self-loops, the others get
#: reverses named as MLPerf's reference names them.
PLANTED: dict[Relation, tuple[float, RelationModel]] = {
    CITES: (14.8, ("src", (0.3, 3.0), (0.05, 2.0))),
    ("paper", "written_by", "author"): (2.7, ("src", (0.3, 3.0), (0.1, 2.5))),
    ("author", "affiliated_to", "institute"): (0.1, ("src", (1.0, 50.0), (0.05, 1.5))),
    ("paper", "topic", "fos"): (3.9, ("src", (0.5, 4.0), (0.05, 1.5))),
    ("paper", "published", "journal"): (0.4, ("src", (1.0, 50.0), (0.05, 1.5))),
    ("paper", "venue", "conference"): (0.2, ("src", (1.0, 50.0), (0.05, 1.5))),
}
RELATIONS: tuple[Relation, ...] = (
    *PLANTED, *((d, f"rev_{name}", s) for s, name, d in PLANTED if (s, name, d) != CITES))

NUM_FEATURES = 1024
NUM_CLASSES = 2983  # IGBH's label_2K
TRAIN_SHARE, VAL_SHARE, TEST_SHARE = 0.6, 0.005, 0.2
SIGNAL = 3.0
HOMOPHILY = 0.4
LABEL_NOISE = 0.2
GROUP_ROWS = 16
MIN_NODES = 4_000  # all types together
_CHUNK_EDGES = 1 << 24  # edges planted per run: bounds the generator's temporaries
_CHECKPOINT_BYTES = 1 << 30
_EDGE_STREAM, _LABEL_STREAM, _SPLIT_STREAM = 1, 2, 3
ROWS = ClassRows(NUM_CLASSES, NUM_FEATURES, SIGNAL, GROUP_ROWS)


def load_igbh_sim(root: str | Path | None = None, scale: float = 1.0,
                  seed: int = 0) -> TypedDataset:
    """igbh-sim at `scale` from the cache under `root`, built (or an interrupted build
    resumed) on the first call; the features stay on disk, memory-mapped."""
    params = _check_params(scale, seed)
    return streamed.load_streamed(root, NAME, params, NUM_CLASSES,
                                  lambda partial: _stages(partial, params),
                                  read=typed_cache.read_entry)


def generate(scale: float = 1.0, seed: int = 0) -> TypedDataset:
    """igbh-sim in memory (features included: for scales that fit), equal to the cached one."""
    params = _check_params(scale, seed)
    graph, labels, splits = _graph_and_labels(**params)
    features = {t: torch.from_numpy(feature_rows(t, np.arange(n), params["seed"]))
                for t, n in graph.num_nodes.items()}
    return TypedDataset(graph, features, labels, TARGET, *splits, num_classes=NUM_CLASSES,
                        name=NAME, params=params)


def counts(scale: float) -> tuple[dict[str, int], dict[Relation, int]]:
    """(nodes per type, edges per planted relation before symmetrising) at `scale`. A
    relation's count is capped where its target type is too small to hold it as a simple
    relation (tiny scales only)."""
    nodes = {t: max(1, round(n * scale)) for t, n in FULL_NODES.items()}
    edges = {}
    for rel, (per_node, _) in PLANTED.items():
        cap = max(2, nodes[rel[2]] // 4)  # planted.relation_edges' cap per driver
        edges[rel] = min(round(per_node * nodes[rel[0]]), (cap - 1) * nodes[rel[0]] // 2)
    return nodes, edges


def disk_bytes(scale: float) -> int:
    """Bytes of the cache entry at `scale`: feature files, indices (int32, symmetric cites
    and reverses included), indptrs, labels and splits."""
    nodes, edges = counts(scale)
    stored = sum(2 * e for e in edges.values()) + nodes[TARGET]  # self-loops of cites
    indptr = sum(nodes[rel[2]] + 1 for rel in RELATIONS) * 8
    features = sum(ALIGN + n * NUM_FEATURES * 2 for n in nodes.values())
    return features + stored * 4 + indptr + nodes[TARGET] * 16


def type_seed(seed: int, node_type: str) -> int:
    """The seed of one node type's classes and rows: a hash of (seed, type)."""
    key = np.array([seed], dtype=np.uint64) + np.uint64(NODE_TYPES.index(node_type))
    return int(splitmix64(key)[0] >> np.uint64(1))


def latent_classes(node_type: str, ids: np.ndarray, seed: int) -> np.ndarray:
    """int64 latent class of each `node_type` id."""
    return ROWS.latent_classes(ids, type_seed(seed, node_type))


def feature_rows(node_type: str, ids: np.ndarray, seed: int) -> np.ndarray:
    """float16 [len(ids), NUM_FEATURES]: the rows of `node_type` nodes `ids`, regenerated
    from (seed, type, id) alone."""
    return ROWS.feature_rows(ids, type_seed(seed, node_type)).astype(np.float16)


def _graph_and_labels(scale: float, seed: int
                      ) -> tuple[TypedGraph, torch.Tensor, tuple[torch.Tensor, ...]]:
    """The typed graph, paper labels and (train, val, test) paper ids."""
    nodes, edges = counts(scale)
    classes = {t: latent_classes(t, np.arange(n), seed) for t, n in nodes.items()}
    rng = np.random.default_rng([seed, _EDGE_STREAM])
    relations = {}
    for rel, (_, model) in PLANTED.items():
        announce(f"{NAME}: planting {edges[rel]} {rel[1]} edges")
        src, dst = relation_edges(rng, model, edges[rel], classes[rel[0]], classes[rel[2]],
                                  rel[0] == rel[2], HOMOPHILY, NUM_CLASSES, NAME, _CHUNK_EDGES)
        n_src, n_dst = nodes[rel[0]], nodes[rel[2]]
        if rel == CITES:  # symmetric, with self-loops, as MLPerf's reference builds it
            loops = np.arange(n_src, dtype=np.int64)
            src, dst = np.concatenate((src, dst, loops)), np.concatenate((dst, src, loops))
            relations[rel] = csc_from_edges(src, dst, n_src, n_dst)
        else:
            relations[rel] = csc_from_edges(src, dst, n_src, n_dst)
            relations[(rel[2], f"rev_{rel[1]}", rel[0])] = csc_from_edges(dst, src, n_dst, n_src)
        del src, dst
    graph = TypedGraph(nodes, {rel: relations[rel] for rel in RELATIONS})

    labels = classes[TARGET].copy()
    label_rng = np.random.default_rng([seed, _LABEL_STREAM])
    noisy = label_rng.random(labels.size) < LABEL_NOISE
    labels[noisy] = label_rng.integers(0, NUM_CLASSES, size=int(noisy.sum()))
    papers = nodes[TARGET]
    sizes = [round(papers * share) for share in (TRAIN_SHARE, VAL_SHARE, TEST_SHARE)]
    perm = np.random.default_rng([seed, _SPLIT_STREAM]).permutation(papers)
    bounds = np.cumsum(sizes)
    splits = tuple(torch.from_numpy(np.sort(perm[lo:hi]))
                   for lo, hi in zip((0, *bounds[:-1]), bounds))
    return graph, torch.from_numpy(labels), splits


def _stages(partial: Path, params: dict) -> None:
    """Write the entry into `partial` (resuming): the disk check, the graph, labels, splits
    and meta.json, then each type's features."""
    scale, seed = params["scale"], params["seed"]
    streamed.check_disk(partial, NAME, params, disk_bytes(scale))
    nodes, _ = counts(scale)
    if streamed.read_progress(partial, params) is not None:
        announce(f"{NAME}: resuming the interrupted build in {partial} (graph already written)")
    else:
        streamed.fresh_partial(partial, NAME)
        announce(f"{NAME}: generating the graph of {sum(nodes.values())} nodes")
        graph, labels, splits = _graph_and_labels(scale, seed)
        names = ("train_idx", "val_idx", "test_idx")
        typed_cache.write_arrays(partial, graph, labels, dict(zip(names, splits)))
        typed_cache.write_meta(partial, NAME, NUM_CLASSES, params, graph, TARGET,
                               {t: (n, NUM_FEATURES, torch.float16) for t, n in nodes.items()},
                               {k: s.numel() for k, s in zip(names, splits)},
                               feature_files=NODE_TYPES)
        del graph
        streamed.write_progress(partial, params)
    for ntype, n in nodes.items():
        file_name = typed_cache.feature_file_name(ntype)
        if _complete(partial / file_name, n):
            continue  # written before the interruption
        key = type_seed(seed, ntype)
        centroids = ROWS.centroids(key)
        streamed.write_features(
            partial, f"{NAME} {ntype}", n, NUM_FEATURES,
            lambda start, stop, key=key, centroids=centroids:
                ROWS.range_rows(start, stop, key, centroids).astype(np.float16),
            GROUP_ROWS, _CHECKPOINT_BYTES, file_name=file_name,
            dtype=torch.float16)


def _complete(path: Path, rows: int) -> bool:
    """Whether `path` is a finished feature file of `rows` float16 rows of NUM_FEATURES."""
    try:
        info = read_header(path)
    except (OSError, ValueError):
        return False
    return (info.num_nodes, info.dim, info.dtype) == (rows, NUM_FEATURES, torch.float16)


def _check_params(scale: float, seed: int) -> dict[str, float | int]:
    """Validated, canonical parameters (they name the cache directory)."""
    return check_scale_and_seed(NAME, scale, seed, sum(FULL_NODES.values()), MIN_NODES)
