"""A typed batch as PyG's heterogeneous NeighborLoader and DGL's DataLoader hand one over:
every relation present, the union numbering with seeds first, edges that exist, and PyG's
HeteroConv and DGL's HeteroGraphConv models running on them unchanged."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from gnnrepro.baselines.dgl_import import dgl_available, import_dgl
from gnnrepro.interop.typed_views import to_dgl_hetero, to_pyg_hetero
from gnnrepro.models import RGAT
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


class MLPerfRGNN(nn.Module):
    """MLPerf's reference RGNN (model="rgat") as its file writes it: HeteroConv(sum) of GATConv
    per relation, trim_to_layer before each layer, leaky_relu between layers, Linear on the
    papers; called on a PyG NeighborLoader batch's dicts."""

    def __init__(self, relations, dim: int, hidden: int, out_dim: int, num_layers: int,
                 heads: int):
        super().__init__()
        from torch_geometric.nn import GATConv, HeteroConv
        self.convs = nn.ModuleList(
            HeteroConv({rel: GATConv(dim if i == 0 else hidden, hidden // heads, heads=heads,
                                     add_self_loops=False) for rel in relations}, aggr="sum")
            for i in range(num_layers))
        self.lin = nn.Linear(hidden, out_dim)

    def forward(self, x_dict, edge_index_dict, num_sampled_edges_dict, num_sampled_nodes_dict):
        from torch_geometric.utils import trim_to_layer
        for i, conv in enumerate(self.convs):
            x_dict, edge_index_dict, _ = trim_to_layer(
                layer=i, num_sampled_nodes_per_hop=num_sampled_nodes_dict,
                num_sampled_edges_per_hop=num_sampled_edges_dict, x=x_dict,
                edge_index=edge_index_dict)
            x_dict = conv(x_dict, edge_index_dict)
            if i != len(self.convs) - 1:
                x_dict = {t: nn.functional.leaky_relu(x) for t, x in x_dict.items()}
        return self.lin(x_dict["paper"])


def _neighbor_loader_batch(g: TypedGraph, mb, features: dict):
    """The batch PyG's NeighborLoader builds from `mb`'s picks: each node's in-edges from the
    hop where it was first a destination (PyG samples a node once), the union of every hop's
    nodes per type, seeds first; assembled by PyG's own filter_hetero_data from the graph."""
    from torch_geometric.data import HeteroData
    from torch_geometric.loader.utils import filter_hetero_data
    graph = HeteroData()
    for t, n in NUM.items():
        graph[t].num_nodes, graph[t].x = n, features[t]
    for rel, csc in g.relations.items():
        dst = torch.repeat_interleave(torch.arange(csc.num_nodes), csc.in_degrees())
        graph[rel].edge_index = torch.stack([csc.indices.long(), dst])
    node = {t: ids for t, ids in mb.blocks[0].src_nodes.items()}
    rows, cols, eids = {}, {}, {}
    hops = len(mb.blocks)
    for rel in g.relations:
        parts = []
        for h in range(hops):  # hop h + 1: the destinations new at hop h
            block = mb.blocks[hops - 1 - h]
            new_from = 0 if h == 0 else mb.blocks[hops - h].num_dst[rel[2]]
            b = block.blocks[rel]
            dst = b.edge_dst()
            keep = dst >= new_from
            parts.append((b.indices[keep], dst[keep], b.edge_ids[keep]))
        rows[rel], cols[rel], eids[rel] = (torch.cat(p) for p in zip(*parts))
    return filter_hetero_data(graph, node, rows, cols, eids)


def test_mlperfs_model_file_runs_unchanged_on_our_batches(edges: dict) -> None:
    """The MLPerf reference's model file on our batch in PyG's layout: the same batch and
    logits as on the batch PyG's NeighborLoader builds from the same picks; and with full
    neighbourhoods (where a node's edges are the same in every layer under both samplers'
    rules) the same logits as our R-GAT on our blocks, with the same weights."""
    pytest.importorskip("torch_geometric.nn")
    g = TypedGraph.from_edges(NUM, edges, keep_edge_ids=True)
    gen = torch.Generator().manual_seed(2)
    features = {t: torch.randn(n, 8, generator=gen) for t, n in NUM.items()}
    torch.manual_seed(0)
    reference = MLPerfRGNN(g.canonical_relations, 8, 8, 3, 3, heads=2).eval()
    with torch.no_grad():
        for p in reference.parameters():
            if p.dim() == 1:
                p.normal_()  # PyG starts biases at 0: make them count
    ours = RGAT(g.canonical_relations, {t: 8 for t in NUM}, 8, 3, 3, 0.0, heads=2,
                target="paper").eval()
    ours.load_state_dict(reference.state_dict())
    for fanouts in ([3, 2, 4], [-1, -1, -1]):
        mb = FusedSampler(g, fanouts, seed=1, edge_ids=True).sample({"paper": torch.arange(20)})
        mb.x = {t: features[t][ids] for t, ids in mb.input_nodes.items()}
        view, pyg = to_pyg_hetero(mb), _neighbor_loader_batch(g, mb, features)
        for rel in g.relations:
            assert torch.equal(view[rel].edge_index, pyg[rel].edge_index), rel
        with torch.no_grad():
            logits = reference(view.x_dict, view.edge_index_dict, view.num_sampled_edges_dict,
                               view.num_sampled_nodes_dict)[:20]
            pyg_logits = reference(pyg.x_dict, pyg.edge_index_dict,
                                   view.num_sampled_edges_dict,
                                   view.num_sampled_nodes_dict)[:20]
            assert torch.equal(logits, pyg_logits)
            if fanouts[0] == -1:
                torch.testing.assert_close(ours(mb.blocks, mb.x), logits, rtol=1e-5, atol=1e-5)


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
