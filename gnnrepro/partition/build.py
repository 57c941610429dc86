"""`partition_dataset`: METIS parts with 1-hop halos, written as a partition directory
(gnnrepro.partition.manifest) atomically: in full under a temporary sibling, checksummed, the
manifest last, then renamed into place - an interrupted run leaves nothing half written.
"""
from __future__ import annotations

import json
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from gnnrepro.checks import check_bool, check_int
from gnnrepro.datasets.dataset import Dataset
from gnnrepro.env import environment
from gnnrepro.partition.manifest import (FORMAT, FORMAT_VERSION, GLOBAL_ARRAYS, PART_ARRAYS,
                                         file_sha256, part_dir)
from gnnrepro.partition.metis import edge_cut, metis_parts
from gnnrepro.progress import Progress

__all__ = ["partition_dataset", "split_parts"]


#: Graphs with at least this many edges print each stage as it starts (METIS alone takes
#: minutes at ogbn-products' size).
LARGE_EDGES = 10_000_000


def split_parts(dataset: Dataset,
                parts: np.ndarray) -> tuple[np.ndarray, list[dict[str, np.ndarray]]]:
    """node_local (int64 [N]) and, per part, its arrays (PART_ARRAYS, see the manifest module)
    for the node -> part assignment `parts`."""
    indptr = dataset.graph.indptr.numpy()
    indices = dataset.graph.indices.numpy()
    degree = np.diff(indptr)
    node_local = np.empty(parts.size, dtype=np.int64)
    out = []
    for p in range(int(parts.max()) + 1 if parts.size else 0):
        owned = np.flatnonzero(parts == p)
        node_local[owned] = np.arange(owned.size)
        local_indptr = np.zeros(owned.size + 1, dtype=np.int64)
        np.cumsum(degree[owned], out=local_indptr[1:])
        # position of every owned node's every in-edge in the global indices
        offsets = np.repeat(indptr[owned] - local_indptr[:-1], degree[owned])
        neighbours = indices[offsets + np.arange(local_indptr[-1])].astype(np.int64)
        remote = parts[neighbours] != p
        halo = np.unique(neighbours[remote])
        local = np.where(remote, owned.size + np.searchsorted(halo, neighbours),
                         node_local[neighbours])
        out.append({"orig_ids": np.concatenate([owned, halo]), "indptr": local_indptr,
                    "indices": local.astype(indices.dtype),
                    "features": dataset.features.numpy()[owned]})
    return node_local, out


def partition_dataset(dataset: Dataset, num_parts: int, out: str | Path, *,
                      overwrite: bool = False) -> dict[str, Any]:
    """Partition `dataset` into `num_parts` parts with METIS (balanced on training nodes and
    edges) and write them to the directory `out`; return the manifest. An existing `out` is
    replaced only with `overwrite` (after the new one is complete)."""
    check_int("num_parts", num_parts, 1)
    check_bool("overwrite", overwrite)
    out = Path(out)
    if out.exists() and not overwrite:
        raise FileExistsError(f"{out} exists: pass overwrite=True (--overwrite) to replace it")
    start = time.perf_counter()
    bar = Progress(f"partition into {num_parts}", 3, "stages", every_s=0.0 if
                   dataset.graph.num_edges >= LARGE_EDGES else 10.0)
    bar.update(0, note="METIS")
    parts = metis_parts(dataset, num_parts)
    metis_s = time.perf_counter() - start
    bar.update(note="split into parts")
    node_local, part_arrays = split_parts(dataset, parts)
    cut = edge_cut(dataset, parts)
    bar.update(note="write and checksum")
    num_edges = dataset.graph.num_edges
    owned = [int(a["indptr"].size - 1) for a in part_arrays]
    halo = [int(a["orig_ids"].size) - o for a, o in zip(part_arrays, owned)]
    train_parts = np.bincount(parts[dataset.train_idx.numpy()], minlength=num_parts)

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    umask = os.umask(0)
    os.umask(umask)
    tmp.chmod(0o777 & ~umask)  # mkdtemp's 0700 would hide the directory from other users
    try:
        globals_ = {"node_part": parts, "node_local": node_local,
                    **{k: getattr(dataset, k).numpy()
                       for k in ("labels", "train_idx", "val_idx", "test_idx")}}
        files = {f"{k}.npy": globals_[k] for k in GLOBAL_ARRAYS}
        for p, arrays in enumerate(part_arrays):
            (tmp / part_dir(p)).mkdir()
            files |= {f"{part_dir(p)}/{k}.npy": arrays[k] for k in PART_ARRAYS}
        for name, array in files.items():
            np.save(tmp / name, array)
        total_s = time.perf_counter() - start
        manifest = {
            "format": FORMAT, "format_version": FORMAT_VERSION,
            "dataset": dataset.name, "dataset_params": dataset.params, "num_parts": num_parts,
            "params": {"method": "metis (pymetis)", "balance": ["train_nodes", "in_edges"],
                       "halo_hops": 1},
            "counts": {"num_nodes": dataset.num_nodes, "num_edges": num_edges,
                       "num_features": dataset.num_features,
                       "num_classes": dataset.num_classes,
                       **{k: getattr(dataset, k).numel()
                          for k in ("train_idx", "val_idx", "test_idx")}},
            "parts": [{"num_owned": o, "num_halo": h,
                       "num_edges": int(a["indices"].size), "num_train": int(t)}
                      for o, h, a, t in zip(owned, halo, part_arrays, train_parts)],
            "stats": {"partition_s": total_s, "metis_s": metis_s,
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "edge_cut": cut, "edge_cut_fraction": cut / max(num_edges, 1),
                      "halo_fraction": sum(halo) / max(dataset.num_nodes, 1)},
            "checksums": {name: file_sha256(tmp / name) for name in files},
            "env": environment(),
        }
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
        bar.update(note=f"done: METIS {metis_s:.0f} s, all {total_s:.0f} s")
        bar.close()
        if out.exists():  # aside first: a rename cannot replace a non-empty directory
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
            os.replace(out, old / out.name)
            os.replace(tmp, out)
            shutil.rmtree(old)
        else:
            os.replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return manifest
