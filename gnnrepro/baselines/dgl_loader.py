"""DGLLoader: DGL 2.1's own training pipeline as a gnnrepro BatchSource (the "dgl" pipeline).

What a DGL user writes: `dgl.dataloading.DataLoader` over the training ids with a
`NeighborSampler(fanouts, prefetch_node_feats=["feat"], prefetch_labels=["label"])`, the
features and labels in `g.ndata`, so DGL slices them itself (its feature "prefetch"). On a CUDA
output device DGL's defaults apply (pinned prefetch buffers, a prefetch thread, an alternate
stream). The graph is the same int32 CSC-only DGL graph as the sampling baselines' (DGL at its
best), and DGL's batches are converted to our MiniBatch so the identical model trains on them;
the conversion (a few small tensor casts) is counted in extract.

Timing: DGL samples inside the DataLoader's collate function and slices features afterwards,
both within `next()`. The sampler is wrapped so its time is measured; the rest of `next()` is
extract. With a prefetch thread (CUDA) both run outside `next()`, so `in_process` is False there.

Reproducibility: DGL shuffles with numpy's global generator, which is seeded by (seed, epoch)
for the shuffle and then restored (torch's is left untouched too), so the order of batches
depends only on the seed and no other user of either generator is disturbed; DGL's sampling RNG
is seeded once (`dgl.seed`). DGL's multi-threaded sampling is not bit-reproducible (see
dgl_samplers).

A TypedDataset is loaded the same way as DGL's heterogeneous examples do it: a CSC-only
heterograph, the featured types' rows in `g.nodes[type].data["feat"]`, the target's labels,
per-relation fanouts, and {target: training ids}; its batches become typed MiniBatches.

Data parallelism (world_size > 1): DGL's own multi-GPU path, `DataLoader(use_ddp=True)`, as a
DGL user writes it (torch.distributed must be initialized). Unlike gnnrepro's Loader, DGL gives
each rank a fixed contiguous ceil(N / world_size) slice of the training ids (shuffled within the
rank each epoch), padded with repeats of the rank's own ids, so with N not a multiple of
world_size some ids are trained twice per epoch. Each rank builds its own DGL graph (the CSC
arrays in DGL's id type): a copy per rank, which is the memory a DGL user pays.
"""
from __future__ import annotations

import time
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch

from gnnrepro.baselines.dgl_import import import_dgl, set_dgl_threads
from gnnrepro.baselines.dgl_samplers import dgl_graph, from_dgl_block, install_fused_mapping
from gnnrepro.checks import check_bool, check_device, check_int
from gnnrepro.baselines.dgl_typed_samplers import dgl_heterograph, from_dgl_typed_block
from gnnrepro.datasets.dataset import Dataset
from gnnrepro.datasets.typed_dataset import TypedDataset
from gnnrepro.pipeline.spans import Span
from gnnrepro.sampling.args import check_fanouts, stream_seed
from gnnrepro.sampling.block import MiniBatch
from gnnrepro.sampling.typed import check_typed_fanouts
from gnnrepro.pinning import share_memory_in_place

__all__ = ["DGLLoader"]


def _check_process_group(rank: int, world_size: int) -> None:
    """DGL's use_ddp path reads rank and world size from torch.distributed: they must agree."""
    import torch.distributed as dist
    if not (dist.is_available() and dist.is_initialized()):
        raise RuntimeError("DGLLoader with world_size > 1 needs torch.distributed initialized "
                           "(DGL's use_ddp=True); see gnnrepro.distributed")
    if (dist.get_rank(), dist.get_world_size()) != (rank, world_size):
        raise ValueError(f"rank={rank}, world_size={world_size} disagree with the process "
                         f"group's rank {dist.get_rank()} of {dist.get_world_size()}")


def seeded_epoch(loader: Any, seed: int, epoch: int) -> Iterator:
    """iter() of DGL's DataLoader `loader`, its shuffle seeded by (seed, epoch). DGL shuffles
    its id array in place with numpy's global generator, in iter(): seed it for this epoch,
    then put the caller's generator state back. torch's DataLoader draws a base seed from
    torch's global generator there too: fork it, so the model's dropout stream is the same as
    in our pipelines."""
    state = np.random.get_state()
    try:
        np.random.seed(stream_seed(seed, epoch))
        with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*CPU affinity.*")
            return iter(loader)
    finally:
        np.random.set_state(state)


class _TimedSampler:
    """Forwards DGL's `sample(g, seeds)` to a NeighborSampler, noting when each call ran."""

    def __init__(self, neighbor_sampler, g, idtype: torch.dtype):
        self._sampler, self._g, self._idtype = neighbor_sampler, g, idtype
        self.calls: list[tuple[float, float]] = []

    def sample(self, g, seeds):
        start = time.perf_counter()
        install_fused_mapping(self._sampler, self._g, self._idtype)
        out = self._sampler.sample(g, seeds)
        self.calls.append((start, time.perf_counter()))
        return out


class DGLLoader:
    """Iterate `dataset`'s training ids in mini-batches prepared by DGL 2.1's DataLoader.

    Same interface as gnnrepro's Loader (a BatchSource): each `iter()` is one epoch of
    MiniBatch objects with `x` (input features) and `y` (labels) on `device`. Their blocks are
    gnnrepro Blocks, or with `native_blocks` DGL's own blocks, unconverted (for DGL's model:
    the "dgl-native" pipeline).
    """

    def __init__(self, dataset: Dataset | TypedDataset, fanouts: list, device: str | torch.device,
                 batch_size: int, shuffle: bool = True, seed: int = 0,
                 drop_last: bool = False, *, rank: int = 0, world_size: int = 1,
                 native_blocks: bool = False):
        if not isinstance(dataset, (Dataset, TypedDataset)):
            raise TypeError(f"dataset must be a gnnrepro Dataset or TypedDataset, got "
                            f"{type(dataset).__name__}")
        self.typed = isinstance(dataset, TypedDataset)
        self.fanouts = (check_typed_fanouts(fanouts, dataset.graph) if self.typed
                        else check_fanouts(fanouts))
        self.device = check_device(device)
        self.batch_size = check_int("batch_size", batch_size, 1)
        self.seed = check_int("seed", seed, 0)
        self.shuffle = check_bool("shuffle", shuffle)
        self.drop_last = check_bool("drop_last", drop_last)
        self.rank = check_int("rank", rank, 0)
        self.world_size = check_int("world_size", world_size, 1)
        self.native_blocks = check_bool("native_blocks", native_blocks)
        if world_size > 1:
            _check_process_group(rank, world_size)
        self.dataset = dataset
        self.in_process = self.device.type == "cpu"  # CUDA: DGL's prefetch thread does the work

        dgl = self._dgl = import_dgl()
        # DGL keeps raw pointers to the arrays it is given (zero-copy). A Loader with workers
        # moves the dataset into shared memory in place, which frees the old memory: move
        # them first, so that move is a no-op and DGL never reads freed memory.
        dataset.graph.share_memory_()
        features = dataset.features if self.typed else {"_N": dataset.features}
        for array in (*features.values(), dataset.labels):
            share_memory_in_place(array)
        if self.typed:
            self._g, idtype = dgl_heterograph(dgl, dataset.graph)
            for t, x in features.items():
                self._g.nodes[t].data["feat"] = x
            self._g.nodes[dataset.target].data["label"] = dataset.labels
            rels = dataset.graph.canonical_relations
            neighbor = dgl.dataloading.NeighborSampler(
                [dict(zip(rels, layer)) for layer in self.fanouts],
                prefetch_node_feats={t: ["feat"] for t in features},
                prefetch_labels={dataset.target: ["label"]})
            train_ids = {dataset.target: dataset.train_idx.to(idtype)}
        else:
            self._g, idtype = dgl_graph(dgl, dataset.graph)
            self._g.ndata["feat"] = dataset.features
            self._g.ndata["label"] = dataset.labels
            neighbor = dgl.dataloading.NeighborSampler(
                self.fanouts, prefetch_node_feats=["feat"], prefetch_labels=["label"])
            train_ids = dataset.train_idx.to(idtype)
        self.sampler = neighbor  # what samples the batches (timed through _TimedSampler)
        self._sampler = _TimedSampler(neighbor, self._g, idtype)
        dgl.seed(self.seed if world_size == 1 else stream_seed(self.seed, rank))
        self._loader = dgl.dataloading.DataLoader(
            self._g, train_ids, self._sampler, device=self.device,
            batch_size=self.batch_size, shuffle=self.shuffle, drop_last=self.drop_last,
            num_workers=0, use_ddp=world_size > 1, ddp_seed=self.seed)
        self._epoch = 0
        self._work = {"sample": 0.0, "extract": 0.0}
        self._spans: list[Span] = []

    def __len__(self) -> int:
        return len(self._loader)

    def work_seconds(self) -> dict[str, float]:
        """Seconds of sample and extract work in the current (or last) epoch."""
        return dict(self._work)

    def spans(self) -> list[Span]:
        """The current (or last) epoch's sample and extract spans (lane "dgl")."""
        return list(self._spans)

    def dgl_tensors(self) -> list[torch.Tensor]:
        """The arrays DGL holds for its graph (CSC indptr and indices in DGL's id type, and the
        node data), as zero-copy tensors: what this loader keeps beside the dataset."""
        indptr, indices, _ = self._g.adj_tensors("csc")
        return [indptr, indices, self._g.ndata["feat"], self._g.ndata["label"]]

    def __iter__(self) -> Iterator[MiniBatch]:
        return self._run_epoch(self.native_epoch())

    def native_epoch(self) -> Iterator:
        """The next epoch as DGL's own DataLoader yields it - (input_nodes, output_nodes,
        blocks) with the features and labels sliced into the blocks - what a DGL user's loop
        sees, without the conversion to our MiniBatch (the loader benchmark times this)."""
        epoch, self._epoch = self._epoch, self._epoch + 1
        self._work = {"sample": 0.0, "extract": 0.0}
        self._spans = []
        self._sampler.calls.clear()
        set_dgl_threads(torch.get_num_threads())
        return seeded_epoch(self._loader, self.seed, epoch)

    def _run_epoch(self, batches: Iterator) -> Iterator[MiniBatch]:
        nid = self._dgl.NID
        for b in range(len(self)):
            start = time.perf_counter()
            try:
                input_nodes, output_nodes, blocks = next(batches)
            except StopIteration:
                return
            mb = (self._typed_batch(input_nodes, output_nodes, blocks, b) if self.typed else
                  MiniBatch(output_nodes.long(), input_nodes.long(),
                            blocks if self.native_blocks
                            else [from_dgl_block(blk, nid) for blk in blocks],
                            x=blocks[0].srcdata["feat"], y=blocks[-1].dstdata["label"],
                            batch_id=b))
            end = time.perf_counter()
            sample_start, sample_end = self._sampler.calls[b]
            sample_s = sample_end - sample_start
            self._work["sample"] += sample_s
            if self.in_process:
                self._work["extract"] += (end - start) - sample_s
                self._spans += [Span(b, "sample", "dgl", sample_start, sample_end),
                                Span(b, "extract", "dgl", sample_end, end)]
            else:  # sampled by DGL's prefetch thread; here only the hand-over is visible
                self._work["extract"] += end - start
                self._spans += [Span(b, "sample", "dgl thread", sample_start, sample_end),
                                Span(b, "extract", "dgl", start, end)]
            yield mb

    def _typed_batch(self, input_nodes: dict, output_nodes: dict, blocks: list,
                     b: int) -> MiniBatch:
        """A DGL heterogeneous batch as our typed MiniBatch (its blocks DGL's own with
        native_blocks)."""
        nid, target = self._dgl.NID, self.dataset.target
        rels = self.dataset.graph.canonical_relations
        ours = [from_dgl_typed_block(blk, nid, rels) for blk in blocks]
        x = {t: blocks[0].srcnodes[t].data["feat"] for t in self.dataset.features}
        return MiniBatch({target: output_nodes[target].long()}, ours[0].src_nodes,
                         blocks if self.native_blocks else ours, x=x,
                         y=blocks[-1].dstnodes[target].data["label"], batch_id=b)

    def close(self) -> None:
        """Nothing to stop (no worker processes); here for the BatchSource interface."""

    def __enter__(self) -> "DGLLoader":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        ranks = (f", rank={self.rank}, world_size={self.world_size}"
                 if self.world_size > 1 else "")
        native = ", native_blocks=True" if self.native_blocks else ""
        return (f"DGLLoader(batches={len(self)}, batch_size={self.batch_size}, "
                f"fanouts={self.fanouts}, device={self.device}, seed={self.seed}{ranks}"
                f"{native})")
