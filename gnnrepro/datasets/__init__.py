"""Datasets by name: `load("products-sim", scale=0.25)`, `load("ogbn-products")`, ...

Every dataset is built once, cached under `$GNNREPRO_DATA` (default `~/.cache/gnnrepro`) and
memory-mapped on later loads; see `cache` (and `typed_cache` for the heterogeneous
TYPED_DATASETS, which load as a TypedDataset).
"""
from __future__ import annotations

import functools
import inspect
from pathlib import Path
from typing import Any, Callable

from gnnrepro.datasets.citation_sim import NAME as CITATION_SIM
from gnnrepro.datasets.citation_sim import load_citation_sim
from gnnrepro.datasets.dataset import Dataset
from gnnrepro.datasets.igb_sim import NAME as IGB_SIM
from gnnrepro.datasets.igb_sim import load_igb_sim
from gnnrepro.datasets.igbh_sim import NAME as IGBH_SIM
from gnnrepro.datasets.igbh_sim import load_igbh_sim
from gnnrepro.datasets.link_dataset import LinkDataset
from gnnrepro.datasets.mag_sim import NAME as MAG_SIM
from gnnrepro.datasets.mag_sim import load_mag_sim
from gnnrepro.datasets.ogb_loader import OGB_DATASETS, load_ogb
from gnnrepro.datasets.ogb_mag import NAME as OGBN_MAG
from gnnrepro.datasets.ogb_mag import load_ogbn_mag
from gnnrepro.datasets.ogbl_loader import OGBL_DATASETS, load_ogbl, refuse_unsupported
from gnnrepro.datasets.papers_sim import NAME as PAPERS_SIM
from gnnrepro.datasets.papers_sim import load_papers_sim
from gnnrepro.datasets.products_sim import NAME as PRODUCTS_SIM
from gnnrepro.datasets.products_sim import load_products_sim
from gnnrepro.datasets.temporal_dataset import TemporalDataset
from gnnrepro.datasets.temporal_sim import NAME as TEMPORAL_SIM
from gnnrepro.datasets.temporal_sim import load_temporal_sim
from gnnrepro.datasets.typed_dataset import TypedDataset
from gnnrepro.datasets.typed_link_dataset import TypedLinkDataset, hold_out_relation

__all__ = ["Dataset", "KNOWN_DATASETS", "LINK_DATASETS", "LinkDataset", "SCALED_DATASETS",
           "TYPED_DATASETS", "TemporalDataset", "TypedDataset", "TypedLinkDataset",
           "hold_out_relation", "load", "load_scaled"]

_LOADERS: dict[str, Callable[..., Dataset | TypedDataset]] = {
    PRODUCTS_SIM: load_products_sim,
    IGB_SIM: load_igb_sim,
    PAPERS_SIM: load_papers_sim,
    MAG_SIM: load_mag_sim,
    IGBH_SIM: load_igbh_sim,
    TEMPORAL_SIM: load_temporal_sim,
    CITATION_SIM: load_citation_sim,
    **{name: functools.partial(load_ogb, name) for name in OGB_DATASETS},
    OGBN_MAG: load_ogbn_mag,
    **{name: functools.partial(load_ogbl, name) for name in OGBL_DATASETS},
}
KNOWN_DATASETS: tuple[str, ...] = tuple(_LOADERS)
#: The synthetic datasets, which take a scale.
SCALED_DATASETS: tuple[str, ...] = (PRODUCTS_SIM, IGB_SIM, PAPERS_SIM, MAG_SIM, IGBH_SIM,
                                    TEMPORAL_SIM, CITATION_SIM)
#: The heterogeneous datasets: `load` returns a TypedDataset for them.
TYPED_DATASETS: tuple[str, ...] = (MAG_SIM, IGBH_SIM, OGBN_MAG)
#: The link-prediction datasets: `load` returns a LinkDataset (no node labels) for them.
LINK_DATASETS: tuple[str, ...] = (CITATION_SIM, *OGBL_DATASETS)


def load(name: str, root: str | Path | None = None,
         **kwargs: Any) -> Dataset | TypedDataset:
    """Load dataset `name`, building and caching it on first use.

    `root` is the cache directory for the synthetic datasets (default `$GNNREPRO_DATA`) and
    the OGB data directory for ogbn-* and ogbl-* (default `$GNNREPRO_OGB_ROOT` or `~/data/ogb`).
    products-sim, igb-sim (features larger than memory at scale 1.0: 41 GB), papers-sim
    (ogbn-papers100M's size at 1.0: 65 GB of disk), mag-sim (ogbn-mag's shape, typed: 0.6 GB
    at 1.0), igbh-sim (MLPerf's IGBH schema, typed: 44 GB at 1.0, float16 features larger
    than memory), temporal-sim (products-sim's size with edge and label times whose future
    leaks labels: a TemporalDataset) and citation-sim (ogbl-citation2's shape, for link
    prediction) take `scale` (float > 0, default 1.0) and `seed` (int >= 0, default 0); ogbn-*
    and ogbl-citation2 take no options. mag-sim, igbh-sim and ogbn-mag (TYPED_DATASETS) return
    a TypedDataset; citation-sim and ogbl-citation2 (LINK_DATASETS) a LinkDataset, without node
    labels. The other ogbl-* raise NotImplementedError saying why (ogbl_loader.UNSUPPORTED_OGBL).
    """
    refuse_unsupported(name)
    if name not in _LOADERS:
        raise ValueError(f"unknown dataset {name!r}; known datasets: {', '.join(KNOWN_DATASETS)}")
    loader = _LOADERS[name]
    options = [p for p in inspect.signature(loader).parameters if p != "root"]
    unknown = sorted(set(kwargs) - set(options))
    if unknown:
        raise TypeError(f"{name} does not take option(s) {', '.join(unknown)}; it takes: "
                        f"{', '.join(options) or 'none'}")
    return loader(root=root, **kwargs)


def load_scaled(name: str, root: str | Path | None = None,
                scale: float | None = None) -> Dataset | TypedDataset:
    """`load(name, root)` with a synthetic dataset at `scale` (None: its default); the OGB
    datasets have one size, so `scale` is ignored for them (what the benchmarks' --scale
    means)."""
    scalable = name in _LOADERS and "scale" in inspect.signature(_LOADERS[name]).parameters
    return load(name, root=root, **({"scale": scale} if scalable and scale is not None else {}))
