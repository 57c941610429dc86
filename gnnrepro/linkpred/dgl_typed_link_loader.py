"""DGLTypedLinkLoader: DGL 2.1's heterogeneous edge-prediction pipeline on one relation, as a
DGL user writes it, yielding our typed EdgeBatch so the identical model trains on it.

`dgl.dataloading.as_edge_prediction_sampler(NeighborSampler(fanouts, prefetch_node_feats=
{type: ["feat"]}), exclude=..., negative_sampler=negative_sampler.Uniform(k))` in a
`dgl.dataloading.DataLoader` over `{relation: training edge ids}`, on the held-out dataset
(gnnrepro.datasets.hold_out_relation): its relation and reverse relation keep their edge ids
(edge i of both is training edge i and its twin), which the DGL heterograph takes as its own, so
excluding each batch's ids in both relations is DGL's exclude="reverse_types" (just "self"
where the relation has no reverse), given as copies (dgl_link_loader.ExcludedCopies). DGL's
Uniform negatives are drawn as ours (k destinations of the relation's destination type per
positive, its source kept), from DGL's own RNG. Shuffling is seeded as DGLLoader's.
"""
from __future__ import annotations

from collections.abc import Iterator

import torch

from gnnrepro.baselines.dgl_import import import_dgl
from gnnrepro.baselines.dgl_typed_samplers import dgl_heterograph, from_dgl_typed_block
from gnnrepro.checks import check_int
from gnnrepro.datasets import TypedLinkDataset
from gnnrepro.linkpred.dgl_link_loader import DGLEpochs, ExcludedCopies, MappedSampler
from gnnrepro.linkpred.edge_batch import EdgeBatch
from gnnrepro.sampling.args import check_fanouts

__all__ = ["DGLTypedLinkLoader"]


class DGLTypedLinkLoader(DGLEpochs):
    """Edge batches of the relation's training edges from DGL's heterogeneous pipeline; see
    the module docstring. Iterate it once per epoch; `len()` is its batches per epoch."""

    def __init__(self, data: TypedLinkDataset, fanouts: list[int], batch_size: int,
                 num_negatives: int = 1, seed: int = 0, shuffle: bool = True):
        if not isinstance(data, TypedLinkDataset):
            raise TypeError(f"data must be a TypedLinkDataset (hold_out_relation), got "
                            f"{type(data).__name__}")
        dgl = self._dgl = import_dgl()
        self.fanouts = check_fanouts(fanouts)
        self.batch_size = check_int("batch_size", batch_size, 1)
        self.num_negatives = check_int("num_negatives", num_negatives, 1)
        self.seed, self.relation = seed, data.relation
        self._relations = data.graph.canonical_relations
        self._featured = list(data.features)
        g, idtype = dgl_heterograph(dgl, data.graph, edge_ids=True)  # with COO: the
        # sampler looks the seed edges up in it
        for ntype, x in data.features.items():
            g.nodes[ntype].data["feat"] = x
        neighbors = MappedSampler(dgl.dataloading.NeighborSampler(  # DGL 2.1's int32 maps
            list(self.fanouts), prefetch_node_feats={t: ["feat"] for t in self._featured}),
            g, idtype)
        rel, rev = data.relation, data.reverse
        sampler = dgl.dataloading.as_edge_prediction_sampler(
            neighbors, exclude=ExcludedCopies(reverse_relations={rel: rev}),
            negative_sampler=dgl.dataloading.negative_sampler.Uniform(self.num_negatives))
        dgl.seed(seed)
        self._loader = dgl.dataloading.DataLoader(
            g, {rel: torch.arange(data.num_train_edges, dtype=idtype)}, sampler,
            batch_size=self.batch_size, shuffle=shuffle, drop_last=False)
        self._epoch = 0

    def __iter__(self) -> Iterator[EdgeBatch]:
        nid, eid, rel = self._dgl.NID, self._dgl.EID, self.relation
        for b, (_, pair, neg_pair, blocks) in enumerate(self._epoch_batches()):
            u, v = pair.edges(etype=rel)
            _, neg_v = neg_pair.edges(etype=rel)
            ours = [from_dgl_typed_block(blk, nid, self._relations, eid) for blk in blocks]
            seeds = {t: blocks[-1].dstnodes[t].data[nid].long() for t in blocks[-1].dsttypes}
            yield EdgeBatch(seeds, ours[0].src_nodes, ours,
                            x={t: blocks[0].srcnodes[t].data["feat"] for t in self._featured},
                            batch_id=b, pos=torch.stack([u.long(), v.long()]),
                            neg_dst=neg_v.long().reshape(u.numel(), self.num_negatives),
                            edge_ids=pair.edges[rel].data[eid].long(), relation=rel)
