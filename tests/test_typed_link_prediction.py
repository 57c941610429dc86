"""Link prediction on one relation of a typed graph: held-out edges and their reverse twins
leave the graph, edge batches run through the one Loader with each type's rows, a batch never
sees its own edges or their twins, a typed encoder (R-GCN) learns, bad input is named."""
from __future__ import annotations

from collections import Counter

import pytest
import torch

from helpers import require_dgl
from gnnrepro.baselines.dgl_import import dgl_available
from gnnrepro.datasets import TypedDataset, TypedLinkDataset, hold_out_relation
from gnnrepro.linkpred import LinkPredictor, LinkSampler, evaluate_link, train_link
from gnnrepro.linkpred.train import node_embeddings
from gnnrepro.models import RGCN
from gnnrepro.pipeline import Loader
from gnnrepro.pipeline.loader import _typed_max_input_rows
from gnnrepro.pipeline.plan import BatchPlan
from gnnrepro.sampling import FusedSampler
from gnnrepro.typed_graph import TypedGraph

COMMUNITIES = 20
NUM = {"paper": 400, "author": 200, "field": 40}
WRITES = ("author", "writes", "paper")
REV_WRITES = ("paper", "rev_writes", "author")
CITES = ("paper", "cites", "paper")
CITED_BY = ("paper", "cited_by", "paper")


def planted(seed: int = 0) -> TypedDataset:
    """20 communities of papers, authors and fields. An author writes 6 distinct papers,
    mostly of its community; a paper cites 3 and has one field of its own. Papers' features
    show their community through noise, authors' are noise and fields have none: the papers
    an author writes are predictable only through those it wrote (rev_writes)."""
    gen = torch.Generator().manual_seed(seed)
    of = {t: torch.randperm(n, generator=gen) % COMMUNITIES for t, n in NUM.items()}

    def picks(src_type: str, dst_type: str, per_node: int, p_own: float) -> tuple:
        """`per_node` distinct destinations per source (no loops), each of the source's
        community with probability p_own."""
        src, dst = [], []
        for s in range(NUM[src_type]):
            allowed = torch.ones(NUM[dst_type], dtype=torch.bool)
            if src_type == dst_type:
                allowed[s] = False
            own = torch.nonzero(allowed & (of[dst_type] == of[src_type][s])).squeeze(1)
            n_own = int((torch.rand(per_node, generator=gen) < p_own).sum())
            chosen = own[torch.randperm(own.numel(), generator=gen)[:n_own]]
            allowed[chosen] = False
            rest = torch.nonzero(allowed).squeeze(1)
            rest = rest[torch.randperm(rest.numel(), generator=gen)[:per_node - chosen.numel()]]
            dst.append(torch.cat([chosen, rest]))
            src.append(torch.full((per_node,), s))
        return torch.cat(src), torch.cat(dst)

    writes, cites = picks("author", "paper", 6, 0.9), picks("paper", "paper", 3, 0.8)
    topic = picks("paper", "field", 1, 1.0)
    graph = TypedGraph.from_edges(NUM, {
        WRITES: writes, REV_WRITES: writes[::-1], CITES: cites, CITED_BY: cites[::-1],
        ("paper", "has_topic", "field"): topic, ("field", "rev_has_topic", "paper"): topic[::-1]})
    paper_x = torch.randn(NUM["paper"], 32, generator=gen)
    paper_x[torch.arange(NUM["paper"]), of["paper"]] += 2.0
    features = {"paper": paper_x, "author": torch.randn(NUM["author"], 32, generator=gen)}
    empty = torch.empty(0, dtype=torch.int64)
    return TypedDataset(graph, features, of["paper"].clone(), "paper", empty, empty, empty,
                        COMMUNITIES, "planted-typed")


@pytest.fixture(scope="module")
def base() -> TypedDataset:
    return planted()


@pytest.fixture(scope="module")
def writes(base: TypedDataset) -> TypedLinkDataset:
    return hold_out_relation(base, "writes", num_queries=40, num_negatives=100)


def _pairs(src: torch.Tensor, dst: torch.Tensor) -> Counter:
    return Counter(zip(src.tolist(), dst.tolist()))


def _csc_pairs(graph: TypedGraph, rel: tuple) -> Counter:
    csc = graph.relations[rel]
    return _pairs(csc.indices.long(), torch.repeat_interleave(torch.arange(csc.num_nodes),
                                                              csc.in_degrees()))


@pytest.mark.parametrize("relation", ["writes", "cites"])
def test_held_out_edges_and_their_twins_leave_the_graph(base: TypedDataset,
                                                        relation: str) -> None:
    data = hold_out_relation(base, relation, num_queries=30, num_negatives=50, seed=3)
    rel, rev = data.relation, data.reverse
    assert rev == {"writes": REV_WRITES, "cites": CITED_BY}[relation]
    held = _pairs(data.val_src, data.val_dst) + _pairs(data.test_src, data.test_dst)
    train = _pairs(data.train_src, data.train_dst)
    assert sum(held.values()) == 60 and train + held == _csc_pairs(base.graph, rel)
    assert _csc_pairs(data.graph, rel) == train
    assert _csc_pairs(data.graph, rev) == _pairs(data.train_dst, data.train_src)
    # edge i of the relation and of its reverse is training edge i, as blocks report it
    for r, (s, d) in ((rel, (data.train_src, data.train_dst)),
                      (rev, (data.train_dst, data.train_src))):
        csc = data.graph.relations[r]
        order = torch.argsort(csc.edge_ids)
        dst = torch.repeat_interleave(torch.arange(csc.num_nodes), csc.in_degrees())
        assert torch.equal(csc.indices.long()[order], s) and torch.equal(dst[order], d)
    assert data.val_neg.shape == (30, 50) and int(data.val_neg.max()) < NUM[rel[2]]
    assert len(set(data.val_src.tolist())) == 30  # one query per source, as OGB's
    others = [r for r in base.graph.relations if r not in (rel, rev)]
    assert all(data.graph.relations[r] is base.graph.relations[r] for r in others)
    again = hold_out_relation(base, relation, num_queries=30, num_negatives=50, seed=3)
    assert torch.equal(again.test_neg, data.test_neg) and torch.equal(again.val_src,
                                                                      data.val_src)


def _banned(link: LinkSampler, ids: torch.Tensor) -> dict:
    """Per relation the edge ids a batch of `ids` must not sample (its own and their twins)."""
    return {link.relation: set(ids.tolist()),
            link.reverse_relation: set(link.reverse_eids[ids].tolist())}


@pytest.mark.parametrize("relation", ["writes", "cites"])
@pytest.mark.parametrize("workers,kind", [(0, "thread"), (2, "thread"), (2, "process")])
def test_edge_batches_through_the_loader_carry_each_types_rows(
        base: TypedDataset, relation: str, workers: int, kind: str) -> None:
    data = hold_out_relation(base, relation, num_queries=20, num_negatives=10)
    link = LinkSampler(FusedSampler(data.graph, [4, 3], seed=2, edge_ids=True),
                       (data.train_src, data.train_dst), num_negatives=3, exclude="reverse_id",
                       reverse_eids=data.reverse_eids, relation=relation, seed=5)
    src_type, _, dst_type = data.relation
    bound = _typed_max_input_rows(data, link.fanouts, 100, seed_types=link.seed_types)
    seen = []
    with Loader(data, link, "cpu", 100, workers=workers, worker_kind=kind,
                plan=BatchPlan(torch.arange(data.num_train_edges), 100, seed=1)) as loader:
        for batch in loader:
            ref = link.sample(batch.edge_ids, batch.batch_id)
            assert batch.relation == data.relation and batch.y.numel() == 0
            assert torch.equal(batch.pos, ref.pos) and torch.equal(batch.neg_dst, ref.neg_dst)
            assert set(batch.x) == {"paper", "author"}  # featured types; fields have none
            for t, x in batch.x.items():
                assert torch.equal(batch.input_nodes[t], ref.input_nodes[t])
                assert torch.equal(x, data.features[t][batch.input_nodes[t]])
            assert sum(x.shape[0] for x in batch.x.values()) <= bound  # a slot holds it
            s, d = batch.pos
            assert torch.equal(batch.seeds[src_type][s], data.train_src[batch.edge_ids])
            assert torch.equal(batch.seeds[dst_type][d], data.train_dst[batch.edge_ids])
            for rel, banned in _banned(link, batch.edge_ids).items():
                for block in batch.blocks:
                    assert not banned & set(block.blocks[rel].edge_ids.tolist())
            seen.append(batch.edge_ids)
    assert torch.equal(torch.cat(seen).sort().values, torch.arange(data.num_train_edges))


@pytest.mark.parametrize("exclude", [None, "self", "reverse_id"])
def test_a_batch_never_samples_its_edges_or_their_reverse_twins(writes: TypedLinkDataset,
                                                                exclude: str | None) -> None:
    """With every neighbour sampled, a batch's edges (in writes) and their twins (in
    rev_writes, by reverse id) are in its blocks unless excluded."""
    link = LinkSampler(FusedSampler(writes.graph, [-1, -1], edge_ids=True),
                       (writes.train_src, writes.train_dst), num_negatives=2, exclude=exclude,
                       reverse_eids=writes.reverse_eids if exclude == "reverse_id" else None,
                       relation=WRITES)
    ids = torch.tensor([0, 7, 300, 1001])
    batch = link.sample(ids, batch_id=3)
    got = {rel: set(torch.cat([b.blocks[rel].edge_ids for b in batch.blocks]).tolist())
           for rel in (WRITES, REV_WRITES)}
    own, twins = set(ids.tolist()), set(writes.reverse_eids[REV_WRITES][ids].tolist())
    assert (own <= got[WRITES]) == (exclude is None) and not (exclude and own & got[WRITES])
    assert (twins <= got[REV_WRITES]) == (exclude != "reverse_id")
    if exclude == "reverse_id":
        assert not twins & got[REV_WRITES]


@pytest.mark.parametrize("relation", ["writes", "cites"])
def test_dgls_typed_edge_prediction_batches(base: TypedDataset, relation: str) -> None:
    """DGL's heterogeneous pipeline (the benchmark's baseline) hands the same kind of batch:
    the positives are the batch's training edges as rows of each endpoint type's seeds, k
    negatives of the destination type each, and neither its edges nor their twins sampled
    (DGL's exclude="reverse_types" on ids the held-out relations keep)."""
    require_dgl()
    from gnnrepro.linkpred.dgl_typed_link_loader import DGLTypedLinkLoader
    data = hold_out_relation(base, relation, num_queries=20, num_negatives=10)
    src_type, _, dst_type = data.relation
    loader = DGLTypedLinkLoader(data, [4, 3], 100, num_negatives=3, seed=2)
    seen = []
    for batch in loader:
        s, d = batch.pos
        assert torch.equal(batch.seeds[src_type][s], data.train_src[batch.edge_ids])
        assert torch.equal(batch.seeds[dst_type][d], data.train_dst[batch.edge_ids])
        assert batch.neg_dst.shape == (s.numel(), 3) and batch.relation == data.relation
        assert int(batch.neg_dst.max()) < batch.seeds[dst_type].numel()
        for t, x in batch.x.items():
            assert torch.equal(x, data.features[t][batch.input_nodes[t]])
        for block in batch.blocks:
            for rel in (data.relation, data.reverse):
                assert not bool(torch.isin(block.blocks[rel].edge_ids, batch.edge_ids).any())
        seen.append(batch.edge_ids)
    assert torch.equal(torch.cat(seen).sort().values, torch.arange(data.num_train_edges))


def test_uniform_negative_sources_are_of_the_source_type(writes: TypedLinkDataset) -> None:
    """PyG's binary mode on a typed relation: negative sources are authors, destinations
    papers, each indexing its own type's seeds, drawn as the homogeneous ones are."""
    from gnnrepro.linkpred.negatives import draw_negatives
    link = LinkSampler(FusedSampler(writes.graph, [2]), (writes.train_src, writes.train_dst),
                       num_negatives=4, relation="writes", negative_sources="uniform")
    assert link.seed_types == {"author": 5, "paper": 5}
    ids = torch.arange(30)
    batch = link.sample(ids, batch_id=2)
    want = draw_negatives(writes.train_src[ids], 4, NUM["author"], 0, 2, stream=1)
    assert torch.equal(batch.seeds["author"][batch.neg_src], want)
    assert int(batch.seeds["paper"][batch.neg_dst].max()) < NUM["paper"]


def _model(data: TypedLinkDataset, seed: int) -> tuple[RGCN, LinkPredictor]:
    torch.manual_seed(seed)
    return (RGCN.for_dataset(data, embed_dim=16, hidden=32, out_dim=32, num_layers=2,
                             dropout=0.0), LinkPredictor(32, 32))


def test_training_ranks_held_out_edges_far_above_an_untrained_model(
        writes: TypedLinkDataset, one_thread: None) -> None:
    """R-GCN (fields learn embeddings: SparseAdam) and OGB's scorer, 40 steps on writes with
    reverses excluded: the held-out authors' papers rank far above where an untrained model
    puts them (~0.05, chance among 100 negatives), by sampled and layer-wise embeddings."""
    def mrr(encoder: RGCN, predictor: LinkPredictor) -> list[float]:
        sampled = evaluate_link(encoder, predictor, writes, "val",
                                FusedSampler(writes.graph, [5, 5], seed=9))
        layerwise = evaluate_link(encoder, predictor, writes, "test", method="layerwise")
        return [sampled["mrr"], layerwise["mrr"]]

    before = mrr(*_model(writes, seed=0))
    encoder, predictor = _model(writes, seed=0)
    link = LinkSampler(FusedSampler(writes.graph, [5, 5]), (writes.train_src, writes.train_dst),
                       exclude="reverse_id", reverse_eids=writes.reverse_eids, relation="writes")
    with Loader(writes, link, "cpu", 128,
                plan=BatchPlan(torch.arange(writes.num_train_edges), 128)) as loader:
        result = train_link(loader, encoder, predictor, epochs=10, max_steps=40, lr=0.01)
    assert result.steps == 40 and result.losses[-1] < 0.8 * result.losses[0]
    after = mrr(encoder, predictor)
    assert max(before) < 0.1 and min(after) > 0.15 and min(after) > 2.5 * max(before), (
        before, after)


def test_layerwise_and_sampled_embeddings_agree_with_every_neighbour(
        writes: TypedLinkDataset) -> None:
    """Sampled with fanout -1 is what layer-wise computes: the same rows per type."""
    encoder, _ = _model(writes, seed=1)
    full = FusedSampler(writes.graph, [-1, -1])
    for ntype, ids in (("author", writes.val_src), ("paper", writes.val_neg.reshape(-1))):
        nodes, sampled = node_embeddings(encoder, writes, ids, full, node_type=ntype,
                                         batch_size=64)
        nodes2, layerwise = node_embeddings(encoder, writes, ids, method="layerwise",
                                            node_type=ntype)
        assert torch.equal(nodes, nodes2) and torch.allclose(sampled, layerwise, atol=1e-5)


def test_bad_input_is_named(writes: TypedLinkDataset, base: TypedDataset) -> None:
    edges, sampler = (writes.train_src, writes.train_dst), FusedSampler(writes.graph, [2])
    with pytest.raises(ValueError, match="relation: unknown relation 'reads'"):
        LinkSampler(sampler, edges, relation="reads")
    with pytest.raises(ValueError, match="relation: name the relation"):
        LinkSampler(sampler, edges)
    with pytest.raises(ValueError, match="reverse_eids is needed .*each edge of relation"):
        LinkSampler(sampler, edges, relation="writes", exclude="reverse_id")
    with pytest.raises(ValueError, match="reverse_eids of a typed graph must be a dict"):
        LinkSampler(sampler, edges, relation="writes", exclude="reverse_id",
                    reverse_eids=torch.arange(writes.num_train_edges))
    with pytest.raises(ValueError, match="reverse_eids: .*cannot hold the reverses"):
        LinkSampler(sampler, edges, relation="writes", exclude="reverse_id",
                    reverse_eids={"cites": torch.arange(writes.num_train_edges)})
    with pytest.raises(ValueError, match=r"reverse_eids must lie in \[0, 1120\)"):
        LinkSampler(sampler, edges, relation="writes", exclude="reverse_id",
                    reverse_eids={"rev_writes": torch.arange(writes.num_train_edges) + 1})
    with pytest.raises(ValueError, match="relation: unknown relation 'reads'"):
        hold_out_relation(base, "reads")
    with pytest.raises(ValueError, match="reverse: the edges of .*'cites'.* are not"):
        hold_out_relation(base, "writes", reverse="cites")
    with pytest.raises(ValueError, match="plan: an edge sampler's batches hold edge ids"):
        Loader(writes, LinkSampler(sampler, edges, relation="writes"), "cpu", 64)
    with pytest.raises(ValueError, match="node_type names the nodes' type"):
        node_embeddings(_model(writes, 0)[0], writes, writes.val_src, sampler)
    symmetric = TypedGraph.from_edges({"p": 5}, {("p", "links", "p"): (torch.tensor([0, 1]),
                                                                        torch.tensor([1, 0]))})
    empty = torch.empty(0, dtype=torch.int64)
    with pytest.raises(ValueError, match="is its own reverse"):
        hold_out_relation(TypedDataset(symmetric, {}, torch.zeros(5, dtype=torch.int64), "p",
                                       empty, empty, empty, 1, "sym"), "links")


def test_bench_link_prediction_runs_a_typed_relation(bench_env: None) -> None:
    from gnnrepro.bench import link_prediction
    pipelines = ["fused", "dgl"] if dgl_available() else ["fused"]
    result = link_prediction.measure(dataset="mag-sim", scale=0.005, relation="cites",
                                     fanouts=[3, 2], batch_size=64, steps=3, seeds=[0],
                                     hidden=16, eval_method="sampled", threads=1,
                                     pipelines=pipelines)
    assert list(result["runs"]) == pipelines
    for run in (result["runs"][p]["0"] for p in pipelines):
        assert run["steps"] == 3 and 0 < run["val"]["mrr"] <= 1
    assert result["params"]["relation"] == list(CITES)
    if "dgl" in pipelines:
        assert result["ratios"]["speedup_vs_dgl"] > 0
    with pytest.raises(ValueError, match="relation names the predicted relation"):
        link_prediction.measure(dataset="mag-sim", scale=0.005)
