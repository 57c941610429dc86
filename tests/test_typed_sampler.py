"""The fused sampler on typed graphs: one op, every relation into its destination type."""
from __future__ import annotations

import pytest
import torch

from gnnrepro import _ops
from gnnrepro.baselines.dgl_import import dgl_available, import_dgl
from gnnrepro.graph import CSCGraph
from gnnrepro.sampling import FusedSampler, TypedBlock
from gnnrepro.typed_graph import TypedGraph

NUM_NODES = {"paper": 300, "author": 200, "inst": 20, "venue": 4}
WRITES, CITES, AFFIL, REV = (("author", "writes", "paper"), ("paper", "cites", "paper"),
                             ("author", "affiliated_with", "inst"),
                             ("paper", "rev_writes", "author"))
EMPTY = ("venue", "hosts", "paper")  # a relation without edges


def _edges(seed: int = 0) -> dict:
    gen = torch.Generator().manual_seed(seed)

    def rnd(src: str, dst: str, e: int) -> tuple[torch.Tensor, torch.Tensor]:
        # Skewed degrees: some destinations far above the fanouts, many below.
        d = (torch.rand(e, generator=gen) ** 3 * NUM_NODES[dst]).long()
        return torch.randint(0, NUM_NODES[src], (e,), generator=gen), d

    edges = {WRITES: rnd("author", "paper", 1500), CITES: rnd("paper", "paper", 2500),
             AFFIL: rnd("author", "inst", 250)}
    edges[REV] = (edges[WRITES][1], edges[WRITES][0])
    edges[EMPTY] = (torch.empty(0, dtype=torch.long), torch.empty(0, dtype=torch.long))
    return edges


@pytest.fixture(scope="module")
def edges() -> dict:
    return _edges()


@pytest.fixture(scope="module", params=[torch.int64, torch.int32])
def graph(request: pytest.FixtureRequest, edges: dict) -> TypedGraph:
    return TypedGraph.from_edges(NUM_NODES, edges, request.param, keep_edge_ids=True)


FANOUTS = [4, {"writes": 3, "cites": 5, "affiliated_with": 2, "rev_writes": 2, "hosts": 3}]
SEEDS = {"paper": torch.tensor([0, 1, 2, 5, 40, 299]), "author": torch.tensor([3, 7])}


def _global_edges(block) -> tuple[torch.Tensor, torch.Tensor]:
    """A relation block's edges as (source id, destination id) of their types."""
    src = block.src_nodes[block.indices]
    dst = block.dst_nodes[block.edge_dst()]
    return src, dst


def test_every_edge_exists_and_ids_name_it(graph: TypedGraph, edges: dict) -> None:
    batch = FusedSampler(graph, FANOUTS, seed=3, edge_ids=True).sample(SEEDS, batch_id=2)
    assert batch.is_typed and len(batch.blocks) == 2
    for tb in batch.blocks:
        assert isinstance(tb, TypedBlock)
        assert set(tb.blocks) == set(graph.canonical_relations)  # every relation present
        for rel, block in tb.blocks.items():
            src, dst = _global_edges(block)
            e_src, e_dst = edges[rel]
            # The edge id names the sampled edge itself (its position in the input list).
            assert torch.equal(e_src[block.edge_ids], src)
            assert torch.equal(e_dst[block.edge_ids], dst)
            assert torch.unique(block.edge_ids).numel() == block.num_edges  # no repeats
        assert tb.blocks[EMPTY].num_edges == 0


def test_counts_are_min_of_fanout_and_degree(graph: TypedGraph) -> None:
    fanouts = [{"writes": 3, "cites": -1, "affiliated_with": 0, "rev_writes": 1, "hosts": 2}]
    batch = FusedSampler(graph, fanouts, seed=1).sample({"paper": torch.arange(300),
                                                         "author": torch.arange(50)})
    tb = batch.blocks[0]
    for rel, fanout in zip(graph.canonical_relations, [3, -1, 0, 1, 2]):
        csc = graph.relations[rel]
        dst = tb.blocks[rel].dst_nodes
        degree = csc.in_degrees()[dst]
        want = degree if fanout == -1 else degree.clamp(max=fanout)
        assert torch.equal(tb.blocks[rel].in_degrees(), want), rel


def test_destinations_first_per_type(graph: TypedGraph) -> None:
    batch = FusedSampler(graph, [3, 3, 3], seed=5).sample(SEEDS)
    outer = {t: SEEDS.get(t, torch.empty(0, dtype=torch.long)) for t in NUM_NODES}
    for tb in reversed(batch.blocks):
        for t, ids in tb.src_nodes.items():
            assert torch.equal(ids[: tb.num_dst[t]], outer[t]), t
            assert torch.unique(ids).numel() == ids.numel()
        outer = tb.src_nodes
    assert batch.input_nodes is batch.blocks[0].src_nodes


def test_relabel_follows_first_appearance_relation_by_relation(graph: TypedGraph) -> None:
    """Each type's new sources appear in order of first use: relations in the graph's order,
    then destinations, then picks (the op's documented numbering)."""
    batch = FusedSampler(graph, [4, 4], seed=9).sample(SEEDS, batch_id=1)
    for tb in batch.blocks:
        want = {t: tb.src_nodes[t][: tb.num_dst[t]].tolist() for t in NUM_NODES}
        for rel in graph.canonical_relations:
            block = tb.blocks[rel]
            for u in block.src_nodes[block.indices].tolist():
                if u not in want[rel[0]]:
                    want[rel[0]].append(u)
        assert {t: ids.tolist() for t, ids in tb.src_nodes.items()} == want


def test_one_type_is_the_homogeneous_op_bit_for_bit() -> None:
    g = CSCGraph.from_edges(*_edges()[CITES], NUM_NODES["paper"])
    seeds = torch.tensor([3, 1, 4, 159, 26])
    homo = FusedSampler(g, [5, 3, 2], seed=7).sample(seeds, batch_id=11)
    typed = FusedSampler(TypedGraph.from_csc(g), [5, 3, 2], seed=7).sample({"_N": seeds},
                                                                          batch_id=11)
    rel = ("_N", "_E", "_N")
    for b, tb in zip(homo.blocks, typed.blocks):
        assert torch.equal(b.indptr, tb.blocks[rel].indptr)
        assert torch.equal(b.indices, tb.blocks[rel].indices)
        assert torch.equal(b.src_nodes, tb.src_nodes["_N"])
    with_ids = FusedSampler(g, [5, 3, 2], seed=7, edge_ids=True).sample(seeds, batch_id=11)
    for b, w in zip(homo.blocks, with_ids.blocks):
        assert torch.equal(b.indices, w.indices) and b.edge_ids is None
        # Without kept ids an edge's id is its CSC position.
        assert torch.equal(g.indices[w.edge_ids], w.src_nodes[w.indices].to(g.indices.dtype))


def test_same_blocks_on_any_thread_count(graph: TypedGraph) -> None:
    sampler = FusedSampler(graph, [10, 10, 10], seed=4, edge_ids=True)
    seeds = {"paper": torch.arange(0, 300, 3), "author": torch.arange(0, 200, 7)}
    before = torch.get_num_threads()
    try:
        runs = []
        for threads in (1, 2, 3):
            torch.set_num_threads(threads)
            runs.append(sampler.sample(seeds, batch_id=5))
    finally:
        torch.set_num_threads(before)
    for other in runs[1:]:
        for a, b in zip(runs[0].blocks, other.blocks):
            for rel in a.blocks:
                for f in ("indptr", "indices", "edge_ids"):
                    assert torch.equal(getattr(a.blocks[rel], f), getattr(b.blocks[rel], f))
            for t in a.src_nodes:
                assert torch.equal(a.src_nodes[t], b.src_nodes[t])


def test_picks_are_uniform_per_relation() -> None:
    """Relation 1 of a two-relation graph (its own random stream): each of a destination's 12
    neighbours is picked with probability 4/12. 300 destinations with the same 12 neighbours
    over 5 batches: 1500 independent draws per neighbour."""
    num = {"a": 13, "b": 312}
    dst = torch.arange(12, 312).repeat_interleave(12)
    src = torch.arange(12).repeat(300)
    g = TypedGraph.from_edges(num, {("a", "r0", "b"): (src, dst), ("b", "r1", "b"): (src, dst)})
    sampler = FusedSampler(g, [4], seed=0)
    hits = torch.zeros(12)
    trials = 0
    for batch_id in range(5):
        block = sampler.sample({"b": torch.arange(12, 312)}, batch_id).blocks[0].blocks[
            ("b", "r1", "b")]
        hits += torch.bincount(block.src_nodes[block.indices], minlength=312)[:12]
        trials += 300
    freq = hits / trials
    # Binomial(1500, 1/3): standard deviation 0.0122; 5 of them.
    assert torch.all((freq - 1 / 3).abs() < 0.061), freq


def test_bad_input_names_what_is_wrong(graph: TypedGraph) -> None:
    with pytest.raises(ValueError, match="unknown node type 'venues'"):
        FusedSampler(graph, [2]).sample({"venues": torch.tensor([0])})
    with pytest.raises(ValueError, match=r"seeds\['author'\] must lie in \[0, 200\)"):
        FusedSampler(graph, [2]).sample({"author": torch.tensor([200])})
    with pytest.raises(ValueError, match=r"seeds\['paper'\] must be unique"):
        FusedSampler(graph, [2]).sample({"paper": torch.tensor([1, 1])})
    with pytest.raises(TypeError, match="dict"):
        FusedSampler(graph, [2]).sample(torch.tensor([0]))
    with pytest.raises(ValueError, match="no fanout for relation"):
        FusedSampler(graph, [{"writes": 2}])
    with pytest.raises(ValueError, match="unknown relation 'wrote'"):
        FusedSampler(graph, [{"wrote": 2}])
    with pytest.raises(ValueError, match=r"fanouts\[0\] = -2"):
        FusedSampler(graph, [-2])
    with pytest.raises(ValueError, match="unknown source node type 'org'"):
        TypedGraph(NUM_NODES, {("org", "x", "paper"): graph.relations[WRITES]})
    with pytest.raises(ValueError, match="destinations and"):
        TypedGraph(NUM_NODES, {("paper", "x", "paper"): graph.relations[WRITES]})
    with pytest.raises(ValueError, match=r"relation \('author', 'writes', 'paper'\): dst"):
        TypedGraph.from_edges(NUM_NODES, {WRITES: (torch.tensor([0]), torch.tensor([300]))})


def test_the_op_checks_again_and_never_crashes(graph: TypedGraph) -> None:
    """Direct calls with what the Python checks refuse: a clear RuntimeError/ValueError naming
    the relation or type, and the node map left all -1."""
    rels = graph.canonical_relations
    indptrs = [graph.relations[r].indptr for r in rels]
    indices = [graph.relations[r].indices.clone() for r in rels]
    types = {t: i for i, t in enumerate(NUM_NODES)}
    src_t, dst_t = [types[r[0]] for r in rels], [types[r[2]] for r in rels]
    num = list(NUM_NODES.values())
    node_map = torch.full((sum(num),), -1, dtype=torch.int32)
    seeds = [torch.arange(300), torch.empty(0, dtype=torch.long), torch.empty(0, dtype=torch.long),
             torch.empty(0, dtype=torch.long)]

    def call(**kw: object) -> None:
        args = dict(indptrs=indptrs, indices=indices, src_types=src_t, dst_types=dst_t,
                    num_nodes=num, seeds=seeds, fanouts=[-1] * len(rels))
        args.update(kw)
        _ops.ops.sample_fused_typed(args["indptrs"], args["indices"], args["src_types"],
                                    args["dst_types"], args["num_nodes"], args["seeds"],
                                    args["fanouts"], False, 0, 0, True, [], [], [], [], [], -1, 0, [],
                                    node_map)

    bad = [ix.clone() for ix in indices]
    bad[1][7] = 300  # cites holds a paper id out of range
    with pytest.raises(RuntimeError, match="indices of relation 1 holds node id 300 outside"):
        call(indices=bad)
    assert bool((node_map == -1).all())
    with pytest.raises(ValueError, match="seeds of node type 1 must lie in"):
        call(seeds=[seeds[0], torch.tensor([200]), seeds[2], seeds[3]])
    with pytest.raises(RuntimeError, match="indptr of relation 0 must be int64"):
        call(indptrs=[indptrs[2]] + indptrs[1:])
    with pytest.raises(RuntimeError, match="one entry per relation"):
        call(src_types=src_t[:-1])
    with pytest.raises(RuntimeError, match="one tensor per node type"):
        call(seeds=seeds[:2])
    with pytest.raises(RuntimeError, match="one fanout per layer and relation"):
        call(fanouts=[2] * (len(rels) + 1))
    with pytest.raises(RuntimeError, match="source and destination types"):
        call(src_types=[9] + src_t[1:])
    bad_ptr = [p.clone() for p in indptrs]
    bad_ptr[2][3] = 10**6
    with pytest.raises(RuntimeError, match="indptr of relation 2 is not a valid CSC"):
        call(indptrs=bad_ptr, seeds=[seeds[0], seeds[1], torch.arange(20), seeds[3]])
    assert bool((node_map == -1).all())
    call()  # the map is clean: a valid call still works


def test_typed_batch_moves_with_its_dicts(graph: TypedGraph) -> None:
    batch = FusedSampler(graph, [2, 2], edge_ids=True).sample(SEEDS)
    moved = batch.to("cpu")
    assert moved.input_nodes is moved.blocks[0].src_nodes
    block = moved.blocks[1].blocks[WRITES]
    assert torch.equal(block.dst_nodes, moved.blocks[1].src_nodes["paper"][:6])


@pytest.mark.skipif(not dgl_available(), reason="DGL is not installed")
def test_from_dgl_keeps_types_and_edge_ids(edges: dict) -> None:
    dgl = import_dgl()
    hg = dgl.heterograph({rel: (s, d) for rel, (s, d) in edges.items()},
                         num_nodes_dict=NUM_NODES)
    g = TypedGraph.from_dgl(hg)
    assert g.num_nodes == {t: hg.num_nodes(t) for t in hg.ntypes}
    batch = FusedSampler(g, [3], edge_ids=True).sample({"paper": torch.arange(10)})
    block = batch.blocks[0].blocks[CITES]
    src, dst = hg.find_edges(block.edge_ids, etype=CITES)
    assert torch.equal(src, block.src_nodes[block.indices])
    assert torch.equal(dst, block.dst_nodes[block.edge_dst()])
