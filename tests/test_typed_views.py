"""A typed batch as PyG's heterogeneous NeighborLoader and DGL's DataLoader hand one over:
every relation present, the union numbering with seeds first, edges that exist, and PyG's
HeteroConv and DGL's HeteroGraphConv models running on them unchanged."""
from __future__ import annotations

import pytest
import torch

from gnnrepro.baselines.dgl_import import dgl_available, import_dgl
from gnnrepro.interop.typed_views import to_dgl_hetero, to_pyg_hetero
from gnnrepro.sampling import FusedSampler
from gnnrepro.typed_graph import TypedGraph

NUM = {"paper": 400, "author": 250, "field": 30}


@pytest.fixture(scope="module")
def edges() -> dict:
    gen = torch.Generator().manual_seed(0)

    def rnd(s: str, d: str, e: int) -> tuple[torch.Tensor, torch.Tensor]:
        return (torch.randint(0, NUM[s], (e,), generator=gen),
                torch.randint(0, NUM[d], (e,), generator=gen))

    w, t = rnd("author", "paper", 1600), rnd("paper", "field", 900)
    return {("author", "writes", "paper"): w, ("paper", "rev_writes", "author"): w[::-1],
            ("paper", "cites", "paper"): rnd("paper", "paper", 2000),
            ("paper", "has_topic", "field"): t, ("field", "rev_has_topic", "paper"): t[::-1],
            ("field", "unused", "author"): (torch.empty(0, dtype=torch.long),) * 2}


@pytest.fixture(scope="module")
def batch(edges: dict):
    g = TypedGraph.from_edges(NUM, edges, keep_edge_ids=True)
    mb = FusedSampler(g, [3, 2, 4], seed=1, edge_ids=True).sample({"paper": torch.arange(20)})
    gen = torch.Generator().manual_seed(1)
    mb.x = {t: torch.randn(mb.input_nodes[t].numel(), 8, generator=gen) for t in ("paper", "field")}
    mb.y = torch.arange(20) % 3
    return mb


def test_pyg_view_numbers_the_union_and_keeps_real_edges(batch, edges: dict) -> None:
    data = to_pyg_hetero(batch)
    assert data["paper"].batch_size == 20 and torch.equal(data["paper"].n_id[:20],
                                                          torch.arange(20))
    for t in NUM:
        assert sum(data[t].num_sampled_nodes) == data[t].n_id.numel()
    for rel, (src, dst) in edges.items():
        ei, e_id = data[rel].edge_index, data[rel].e_id
        assert sum(data[rel].num_sampled_edges) == ei.shape[1]
        # each edge is the graph's edge e_id, in the union numbering of its types
        assert torch.equal(data[rel[0]].n_id[ei[0]], src[e_id])
        assert torch.equal(data[rel[2]].n_id[ei[1]], dst[e_id])
    # a node's in-edges come from one hop only (the block where it is first a destination)
    cites = data[("paper", "cites", "paper")]
    first, last = cites.num_sampled_edges[0], cites.edge_index.shape[1]
    assert int(cites.edge_index[1][:first].max()) < 20  # the seeds' hop
    assert int(cites.edge_index[1][first:last].min()) >= 20


def test_pyg_heteroconv_runs_on_the_view(batch) -> None:
    pyg_nn = pytest.importorskip("torch_geometric.nn")
    data = to_pyg_hetero(batch)
    x = dict(data.x_dict)
    x["author"] = torch.zeros(data["author"].num_nodes, 8)  # a featureless type's stand-in
    conv = pyg_nn.HeteroConv({rel: pyg_nn.SAGEConv((-1, -1), 4) for rel in data.edge_types},
                             aggr="sum")
    out = conv(x, data.edge_index_dict)
    assert out["paper"][: data["paper"].batch_size].shape == (20, 4)


@pytest.mark.skipif(not dgl_available(), reason="DGL is not installed")
def test_dgl_view_blocks_hold_our_edges_and_run_heterographconv(batch) -> None:
    dgl = import_dgl()
    from dgl.nn import HeteroGraphConv, SAGEConv
    _, output_nodes, blocks = to_dgl_hetero(batch)
    assert torch.equal(output_nodes["paper"], torch.arange(20))
    for tb, block in zip(batch.blocks, blocks):
        for rel, ours in tb.blocks.items():
            src, dst = block.edges(etype=rel)
            assert torch.equal(src.long(), ours.indices)
            assert torch.equal(dst.long(), ours.edge_dst())
            assert torch.equal(block.edges[rel].data[dgl.EID], ours.edge_ids)
    conv = HeteroGraphConv({rel[1]: SAGEConv(8, 4, "mean") for rel in batch.blocks[0].blocks},
                           aggregate="sum")
    feats = {t: blocks[0].srcnodes[t].data["feat"] for t in ("paper", "field")}
    feats["author"] = torch.zeros(batch.blocks[0].num_src["author"], 8)  # featureless
    out = conv(blocks[0], feats)
    assert out["paper"].shape == (batch.blocks[0].num_dst["paper"], 4)
    assert torch.equal(blocks[-1].dstnodes["paper"].data["label"], batch.y)


def test_views_refuse_a_homogeneous_batch(batch) -> None:
    homo = type(batch)(torch.arange(3), torch.arange(3), [])
    for view in (to_pyg_hetero, to_dgl_hetero):
        with pytest.raises(TypeError, match="typed gnnrepro MiniBatch"):
            view(homo)
