"""DGL's CPU neighbour samplers behind gnnrepro's sampler API: the baselines of the paper.

* `DGLUnfusedSampler` ("dgl-unfused"): per layer `dgl.sampling.sample_neighbors` then
  `dgl.to_block`, the two-operator pair the paper fuses (DGL's `NeighborSampler(fused=False)`).
* `DGLFusedSampler` ("dgl-fused"): `dgl.dataloading.NeighborSampler` with its default
  `fused=True`, which on CPU calls `sample_neighbors_fused` with a dense relabel mapping.

`sample_native()` returns DGL's own output (what a DGL user gets) and is what a benchmark should
time; `sample()` adds the conversion to gnnrepro's `MiniBatch`, a cost our samplers do not pay.

Threads: DGL and torch share one OpenMP runtime (torch's libgomp is loaded first), but OpenMP's
thread count is per calling thread, so each call sets DGL's count to `torch.get_num_threads()`:
the baselines use exactly the threads our samplers do, from whichever Python thread samples.

Caveats of DGL 2.1.0 on CPU (verified against its sources):
* `NeighborSampler` takes the fused path only when DGL's OpenMP thread count is > 1; with one
  thread "dgl-fused" runs the unfused operators (what a DGL user gets).
* DGL's RNG is global: `sample*()` reseeds it (`dgl.seed`) from (seed, batch_id), mutating the
  global state. Each OpenMP thread's stream is seeded with `seed + thread id` (ids given in
  first-use order), so with one thread the output is reproducible within a process. With more
  threads only the seed layer is: `to_block`'s concurrent hash map and the fused kernel's
  compare-and-swap relabel number new source nodes in an order decided by a thread race, and
  that order decides which thread's random stream samples each next-layer destination.
"""
from __future__ import annotations

import os

import torch

from gnnrepro.baselines.dgl_import import import_dgl
from gnnrepro.checks import check_bool
from gnnrepro.graph import CSCGraph
from gnnrepro.sampling.args import (check_fanouts, check_graph, check_seed, check_seeds,
                                    stream_seed)
from gnnrepro.sampling.block import Block, MiniBatch

__all__ = ["DGLFusedSampler", "DGLUnfusedSampler", "dgl_graph", "from_dgl_block",
           "install_fused_mapping"]

_INT32_LIMIT = 2**31  # graphs with fewer nodes and edges than this get int32 ids


def from_dgl_block(dgl_block, nid: str) -> Block:
    """Convert one DGL block (MFG) into our Block; DGL's CSC already holds local source ids."""
    indptr, indices, _ = dgl_block.adj_tensors("csc")
    return Block(indptr.long(), indices.long(), dgl_block.srcdata[nid].long(),
                 dgl_block.num_dst_nodes())


def dgl_graph(dgl, graph: CSCGraph):
    """`graph` as a CSC-only DGL graph with int32 ids when they fit; returns (g, idtype).

    int32 ids: DGL's kernels then move half the bytes and run faster than on int64 (measured:
    benchmarks/NOTES.md, "DGL's id type"), so DGL is measured at its best. Only CSC
    (in-neighbour rows) is allowed: sampling in-edges reads it directly, and DGL can never
    build COO/CSR (an O(E) conversion) behind our back. An empty
    eid array means "edge i is the i-th entry of indices", so DGL stores no edge-id array.
    """
    fits32 = graph.num_edges < _INT32_LIMIT and graph.num_nodes < _INT32_LIMIT
    idtype = torch.int32 if fits32 else torch.int64
    g = dgl.graph(("csc", (graph.indptr.to(idtype), graph.indices.to(idtype),
                           torch.empty(0, dtype=idtype))),
                  num_nodes=graph.num_nodes, idtype=idtype).formats("csc")
    return g, idtype


def install_fused_mapping(neighbor_sampler, g, idtype: torch.dtype) -> None:
    """Give DGL's NeighborSampler its fused-path relabel maps in the graph's id type.

    The fused CPU kernel relabels through a dense map per node type that NeighborSampler keeps
    per process (allocated on the first call, reset sparsely after each layer). DGL 2.1 always
    allocates them as int64 while the kernel reads them with the graph's id type, which
    corrupts them for int32 graphs from the second call on; we install them with the right
    dtype, under DGL's own key, before DGL would allocate them. Call before every batch (cheap
    when installed).
    """
    key = f"__mapping{os.getpid()}"  # dgl.sampling.neighbor._sample_neighbors's key
    if neighbor_sampler.g is not g or key not in neighbor_sampler.mapping:
        neighbor_sampler.g = g  # NeighborSampler drops the mapping when g changes
        neighbor_sampler.mapping = {key: [torch.full((g.num_nodes(t),), -1, dtype=idtype)
                                          for t in g.ntypes]}


class _DGLSampler:
    """Shared construction, validation, seeding and conversion of the DGL baselines."""

    name = ""
    #: Not in Loader worker threads: dgl.seed is process-wide, so threads would race on it.
    thread_use = None

    def __init__(self, graph: CSCGraph, fanouts: list[int], replace: bool = False,
                 seed: int = 0, prob: torch.Tensor | None = None):
        self.graph = check_graph(graph)
        if graph.device.type != "cpu":
            raise ValueError(f"graph must be on the CPU for DGL's CPU samplers, is on "
                             f"{graph.device}")
        self.fanouts = check_fanouts(fanouts)
        self.replace = check_bool("replace", replace)
        self.seed = check_seed(seed)
        self._dgl = import_dgl()
        self._g, self._idtype = dgl_graph(self._dgl, graph)
        # DGL's weighted sampling (`prob`): one weight per edge in CSC order, as edata.
        self.prob = prob
        self._prob = None
        if prob is not None:
            if prob.shape != (graph.num_edges,):
                raise ValueError(f"prob must hold one weight per edge ({graph.num_edges}), got "
                                 f"shape {tuple(prob.shape)}")
            self._g.edata["prob"] = prob.to(torch.float32)
            self._prob = "prob"

    def __getstate__(self) -> dict:
        # DGL objects do not travel well (the dgl module does not pickle at all): a worker
        # process rebuilds them from the constructor's arguments.
        return {"graph": self.graph, "fanouts": self.fanouts, "replace": self.replace,
                "seed": self.seed, "prob": self.prob}

    def __setstate__(self, state: dict) -> None:
        self.__init__(**state)

    def sample_native(self, seeds: torch.Tensor,
                      batch_id: int = 0) -> tuple[torch.Tensor, torch.Tensor, list]:
        """DGL's own output `(input_nodes, output_nodes, blocks)`, blocks input layer first.

        Ids are in the DGL graph's id type (int32 unless the graph is too large). Sets DGL's
        thread count to `torch.get_num_threads()` and reseeds DGL's global RNG first.
        """
        # DGL silently builds wrong blocks for repeated seeds: check_seeds rejects them.
        seeds = check_seeds(seeds, self.graph).to(self._idtype)
        batch_id = check_seed(batch_id, "batch_id")
        self._dgl.utils.set_num_threads(torch.get_num_threads())
        self._dgl.seed(stream_seed(self.seed, batch_id))
        return self._sample_blocks(seeds)

    def sample(self, seeds: torch.Tensor, batch_id: int = 0) -> MiniBatch:
        """`sample_native` converted to a MiniBatch (blocks input layer first, like DGL)."""
        input_nodes, output_nodes, blocks = self.sample_native(seeds, batch_id)
        nid = self._dgl.NID
        return MiniBatch(output_nodes.long(), input_nodes.long(),
                         [from_dgl_block(b, nid) for b in blocks], batch_id=batch_id)

    def _sample_blocks(self, seeds: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, list]:
        raise NotImplementedError

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(fanouts={self.fanouts}, replace={self.replace}, "
                f"seed={self.seed}, graph={self.graph!r})")


class DGLUnfusedSampler(_DGLSampler):
    """Per layer `dgl.sampling.sample_neighbors` + `dgl.to_block` (NeighborSampler(fused=False))."""

    name = "dgl-unfused"

    def _sample_blocks(self, seeds: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, list]:
        dgl, nid, eid = self._dgl, self._dgl.NID, self._dgl.EID
        nodes, blocks = seeds, []
        for fanout in reversed(self.fanouts):
            frontier = dgl.sampling.sample_neighbors(self._g, nodes, fanout, replace=self.replace,
                                                     prob=self._prob)
            block = dgl.to_block(frontier, nodes)
            block.edata[eid] = frontier.edata[eid]
            nodes = block.srcdata[nid]
            blocks.insert(0, block)
        return nodes, seeds, blocks


class DGLFusedSampler(_DGLSampler):
    """`dgl.dataloading.NeighborSampler(fanouts)` (fused=True): `sample_neighbors_fused` on CPU,
    with DGL 2.1's int32 relabel-map bug worked around (see `install_fused_mapping`)."""

    name = "dgl-fused"

    def __init__(self, graph: CSCGraph, fanouts: list[int], replace: bool = False,
                 seed: int = 0, prob: torch.Tensor | None = None):
        super().__init__(graph, fanouts, replace, seed, prob)
        self._sampler = self._dgl.dataloading.NeighborSampler(self.fanouts, replace=replace,
                                                              prob=self._prob)

    def _sample_blocks(self, seeds: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, list]:
        install_fused_mapping(self._sampler, self._g, self._idtype)
        return self._sampler.sample_blocks(self._g, seeds)
