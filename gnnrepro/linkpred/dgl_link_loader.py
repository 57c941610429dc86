"""DGLLinkLoader: DGL 2.1's edge-prediction pipeline, as a DGL user writes it, yielding our
EdgeBatch so the identical model trains on it.

`dgl.dataloading.as_edge_prediction_sampler(NeighborSampler(fanouts, prefetch_node_feats=
["feat"]), exclude=..., reverse_eids=..., negative_sampler=negative_sampler.Uniform(k))` in a
`dgl.dataloading.DataLoader` over the training edge ids. The DGL graph is the dataset's graph
with int32 ids where they fit, in CSC (what sampling reads) and COO (DGL's edge-prediction
sampler looks the seed edges up in it), and its edge ids are CSC positions: the training ids
and the reverse map are translated into that id space once. DGL's Uniform negatives are drawn
as ours ("uniform", k per positive, the positive's source repeated), from DGL's own RNG, so
the two pipelines draw different but identically distributed negatives. Shuffling is seeded as
DGLLoader's (numpy's global generator for DGL's shuffle, restored after).
"""
from __future__ import annotations

from collections.abc import Iterator

import torch

from gnnrepro.baselines.dgl_import import import_dgl, set_dgl_threads
from gnnrepro.baselines.dgl_loader import seeded_epoch
from gnnrepro.baselines.dgl_samplers import dgl_graph, from_dgl_block, install_fused_mapping
from gnnrepro.checks import check_int
from gnnrepro.graph import CSCGraph
from gnnrepro.linkpred.edge_batch import EdgeBatch
from gnnrepro.linkpred.link_sampler import EXCLUDE_MODES
from gnnrepro.sampling.args import check_fanouts
from gnnrepro.sampling.exclusion import EdgePositions

__all__ = ["DGLEpochs", "DGLLinkLoader", "ExcludedCopies", "MappedSampler"]


class MappedSampler:
    """DGL's NeighborSampler with its fused-path relabel maps installed in the graph's id type
    before every call (dgl_samplers.install_fused_mapping: DGL 2.1 corrupts them on int32
    graphs from the second batch on otherwise); everything else is the NeighborSampler's."""

    def __init__(self, neighbor_sampler, g, idtype: torch.dtype):
        self._sampler, self._g, self._idtype = neighbor_sampler, g, idtype

    def sample(self, g, seed_nodes, exclude_eids=None):
        install_fused_mapping(self._sampler, self._g, self._idtype)
        return self._sampler.sample(g, seed_nodes, exclude_eids)

    def __getattr__(self, name: str):
        return getattr(self._sampler, name)


class ExcludedCopies:
    """DGL's `exclude` as the callable it also takes: a batch's edge ids and, given `reverse`
    (a map in DGL's id space), their reverses; on a heterograph (seed edges by relation) a
    relation's ids and the same ids in `reverse_relations[relation]` (DGL's "reverse_types").
    Always copies: DGL 2.1's sample_neighbors sorts the excluded ids in place, and those its own
    "self" and "reverse_types" modes hand it are the pair graph's edge-id tensor, whose order
    that breaks (the positives' ids then no longer those of the pair graph's edges)."""

    def __init__(self, reverse: torch.Tensor | None = None,
                 reverse_relations: dict | None = None):
        self.reverse, self.reverse_relations = reverse, reverse_relations or {}

    def __call__(self, seed_edges):
        if isinstance(seed_edges, dict):
            out = {rel: ids.clone() for rel, ids in seed_edges.items()}
            for rel, ids in seed_edges.items():
                if self.reverse_relations.get(rel) is not None:
                    out[self.reverse_relations[rel]] = ids.clone()
            return out
        if self.reverse is None:
            return seed_edges.clone()
        return torch.cat([seed_edges, self.reverse[seed_edges.long()]])


class DGLEpochs:
    """What DGL's edge-prediction loaders share: `len()` of their DataLoader `_loader`, and each
    epoch's batches shuffled by (seed, epoch), with DGL on this thread's torch threads."""

    _loader: object
    _epoch: int
    seed: int

    def __len__(self) -> int:
        return len(self._loader)

    def _epoch_batches(self) -> Iterator:
        epoch, self._epoch = self._epoch, self._epoch + 1
        set_dgl_threads(torch.get_num_threads())
        return seeded_epoch(self._loader, self.seed, epoch)


class DGLLinkLoader(DGLEpochs):
    """Edge batches of `train_edge_ids` (ids of `features`' graph) from DGL's pipeline; see the
    module docstring. Iterate it once per epoch; `len()` is its batches per epoch."""

    def __init__(self, graph: CSCGraph, features: torch.Tensor, train_edge_ids: torch.Tensor,
                 fanouts: list[int], batch_size: int, num_negatives: int = 1,
                 exclude: str | None = None, reverse_eids: torch.Tensor | None = None,
                 seed: int = 0, shuffle: bool = True):
        dgl = import_dgl()
        self._dgl = dgl
        if exclude not in EXCLUDE_MODES:
            raise ValueError(f"exclude must be one of {EXCLUDE_MODES}, got {exclude!r}")
        self.fanouts = check_fanouts(fanouts)
        self.batch_size = check_int("batch_size", batch_size, 1)
        self.num_negatives = check_int("num_negatives", num_negatives, 1)
        self.seed = seed
        g, idtype = dgl_graph(dgl, graph)
        g = g.formats(["csc", "coo"])
        g.ndata["feat"] = features
        self._g = g
        # DGL's edge ids are CSC positions: ours map to them once (None: ours are positions).
        position = EdgePositions(graph).build()
        reverse = None
        if reverse_eids is not None:  # DGL's space: reverse[pos(e)] = pos(reverse_eids[e])
            if position is None:
                reverse = reverse_eids.to(idtype)
            else:
                reverse = torch.empty(graph.num_edges, dtype=torch.int64)
                reverse[position] = position[reverse_eids]
                reverse = reverse.to(idtype)
        self._graph_edge_ids = graph.edge_ids
        neighbors = MappedSampler(
            dgl.dataloading.NeighborSampler(list(self.fanouts), prefetch_node_feats=["feat"]),
            g, idtype)
        sampler = dgl.dataloading.as_edge_prediction_sampler(
            neighbors, exclude=None if exclude is None else ExcludedCopies(reverse),
            negative_sampler=dgl.dataloading.negative_sampler.Uniform(self.num_negatives))
        eids = train_edge_ids.to(torch.int64)
        eids = (eids if position is None else position[eids]).to(idtype)
        dgl.seed(seed)
        self._loader = dgl.dataloading.DataLoader(g, eids, sampler, batch_size=self.batch_size,
                                                  shuffle=shuffle, drop_last=False)
        self._epoch = 0

    def __iter__(self) -> Iterator[EdgeBatch]:
        batches = self._epoch_batches()
        nid, eid = self._dgl.NID, self._dgl.EID
        for b, (input_nodes, pair, neg_pair, blocks) in enumerate(batches):
            u, v = pair.edges()
            _, neg_v = neg_pair.edges()
            edge_ids = pair.edata[eid].long()
            if self._graph_edge_ids is not None:  # back to the graph's own ids
                edge_ids = self._graph_edge_ids[edge_ids]
            yield EdgeBatch(blocks[-1].dstdata[nid].long(), input_nodes.long(),
                            [from_dgl_block(blk, nid) for blk in blocks],
                            x=blocks[0].srcdata["feat"], batch_id=b,
                            pos=torch.stack([u.long(), v.long()]),
                            neg_dst=neg_v.long().reshape(u.numel(), self.num_negatives),
                            edge_ids=edge_ids)
