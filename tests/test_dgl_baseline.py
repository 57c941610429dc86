"""DGL baseline samplers: structure of the blocks, sampling counts, seeding and argument checks."""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading
from collections import Counter

import pytest
import torch
from helpers import random_graph

from gnnrepro.baselines.dgl_import import dgl_available, import_dgl, set_dgl_threads
from gnnrepro.graph import CSCGraph

if not dgl_available():
    pytest.skip("DGL cannot be imported (pip install dgl==2.1.0 torchdata==0.9.0 pydantic)",
                allow_module_level=True)

from gnnrepro.baselines import dgl_samplers  # noqa: E402
from gnnrepro.baselines.dgl_samplers import DGLFusedSampler, DGLUnfusedSampler  # noqa: E402

SAMPLERS = [DGLUnfusedSampler, DGLFusedSampler]
GRAPHS = {"uniform": random_graph(400, 6000, power_law=False, seed=0, simple=True),
          "power_law": random_graph(400, 8000, power_law=True, seed=1, simple=True,
                                    index_dtype=torch.int32)}


@pytest.fixture
def threads():
    """Restore the OpenMP thread count (shared by torch and DGL) after a test changes it."""
    old = torch.get_num_threads()
    yield torch.set_num_threads
    torch.set_num_threads(old)


def _seeds(graph: CSCGraph, count: int = 80, gen_seed: int = 0) -> torch.Tensor:
    """Random distinct seeds, including isolated nodes and the highest in-degree node."""
    gen = torch.Generator().manual_seed(gen_seed)
    seeds = torch.randperm(graph.num_nodes, generator=gen)[:count]
    extra = torch.tensor([graph.num_nodes - 1, int(graph.in_degrees().argmax())])
    return torch.cat([seeds[~torch.isin(seeds, extra)], extra])


def _neighbours(graph: CSCGraph, v: int) -> list[int]:
    return graph.indices[graph.indptr[v]:graph.indptr[v + 1]].tolist()


def _check_minibatch(mb, graph: CSCGraph, seeds: torch.Tensor, fanouts: list[int],
                     replace: bool) -> None:
    assert len(mb.blocks) == len(fanouts)
    assert torch.equal(mb.seeds, seeds.to(torch.int64))
    assert torch.equal(mb.blocks[-1].dst_nodes, seeds.to(torch.int64))
    assert torch.equal(mb.blocks[0].src_nodes, mb.input_nodes)
    degrees = graph.in_degrees()
    for layer, (block, fanout) in enumerate(zip(mb.blocks, fanouts)):
        for t in (block.indptr, block.indices, block.src_nodes):
            assert t.dtype == torch.int64
        assert block.indptr.numel() == block.num_dst + 1 and int(block.indptr[0]) == 0
        assert int(block.indptr[-1]) == block.num_edges
        assert block.src_nodes.unique().numel() == block.num_src
        if block.num_edges:
            assert 0 <= int(block.indices.min()) and int(block.indices.max()) < block.num_src
        if layer + 1 < len(mb.blocks):  # this layer's destinations are the next layer's sources
            assert torch.equal(mb.blocks[layer + 1].src_nodes, block.dst_nodes)
        dst, counts = block.dst_nodes.tolist(), block.in_degrees().tolist()
        for j, v in enumerate(dst):
            deg = int(degrees[v])
            if fanout == -1:
                expected = deg
            elif replace:
                expected = fanout if deg > 0 else 0
            else:
                expected = min(deg, fanout)
            assert counts[j] == expected, (layer, v, deg, fanout)
            local = block.indices[block.indptr[j]:block.indptr[j + 1]]
            picked = Counter(block.src_nodes[local].tolist())
            allowed = Counter(_neighbours(graph, v))
            assert set(picked) <= set(allowed), (layer, v)  # every block edge is a graph edge
            if not replace or fanout == -1:  # no edge twice (parallel edges may repeat a node)
                assert all(picked[u] <= allowed[u] for u in picked), (layer, v)
            if fanout == -1:
                assert picked == allowed, (layer, v)


def _same(a, b) -> bool:
    return (torch.equal(a.input_nodes, b.input_nodes)
            and all(torch.equal(x.indptr, y.indptr) and torch.equal(x.indices, y.indices)
                    and torch.equal(x.src_nodes, y.src_nodes) and x.num_dst == y.num_dst
                    for x, y in zip(a.blocks, b.blocks)))


def _seed_layer_edges(mb) -> Counter:
    """The seed layer's edges as global (src, dst) pairs, independent of local numbering."""
    block = mb.blocks[-1]
    src = block.src_nodes[block.indices].tolist()
    dst = block.dst_nodes[block.edge_dst()].tolist()
    return Counter(zip(src, dst))


def test_import_dgl_is_cached_and_clean():
    dgl = import_dgl()
    assert import_dgl() is dgl and sys.modules["dgl"] is dgl
    assert dgl.backend.backend_name == "pytorch"
    assert hasattr(dgl.sampling, "sample_neighbors") and hasattr(dgl, "to_block")
    # import side effects are undone: DGLBACKEND only pinned during the import
    assert os.environ.get("DGLBACKEND") in (None, "pytorch")


@pytest.mark.parametrize("cls", SAMPLERS)
@pytest.mark.parametrize("graph_name", list(GRAPHS))
@pytest.mark.parametrize("fanouts", [[4, 3], [-1, 5], [2, 3, 6]])
@pytest.mark.parametrize("replace", [False, True])
def test_blocks_are_valid_samples(cls, graph_name, fanouts, replace):
    graph = GRAPHS[graph_name]
    sampler = cls(graph, fanouts, replace=replace, seed=3)
    assert (sampler.graph, sampler.fanouts, sampler.replace) == (graph, fanouts, replace)
    seeds = _seeds(graph)
    for batch_id, s in enumerate((seeds, seeds.to(torch.int32))):
        _check_minibatch(sampler.sample(s, batch_id), graph, seeds, fanouts, replace)


@pytest.mark.parametrize("cls", SAMPLERS)
@pytest.mark.parametrize("replace", [False, True])
def test_blocks_on_shared_multigraphs(cls, graph, replace):
    """conftest's graphs: parallel edges and self loops, as our samplers are tested on."""
    seeds = _seeds(graph)
    for fanouts in ([5, 3], [-1, 2]):
        mb = cls(graph, fanouts, replace=replace, seed=1).sample(seeds, 1)
        _check_minibatch(mb, graph, seeds, fanouts, replace)


@pytest.mark.parametrize("cls", SAMPLERS)
@pytest.mark.parametrize("int32_limit", [2**31, 0])
def test_id_types(cls, int32_limit, monkeypatch):
    """int32 DGL ids when the graph fits (the fast case), int64 otherwise; several calls in a
    row, since DGL's own int64 relabel mapping corrupts an int32 fused sampler from call two."""
    monkeypatch.setattr(dgl_samplers, "_INT32_LIMIT", int32_limit)
    graph = GRAPHS["power_law"]
    sampler = cls(graph, [4, 3, 2])
    idtype = torch.int32 if int32_limit else torch.int64
    assert sampler._g.idtype == idtype
    assert sampler._g.formats() == {"created": ["csc"], "not created": []}
    for batch_id in range(4):
        seeds = _seeds(graph, gen_seed=batch_id)
        input_nodes, _, blocks = sampler.sample_native(seeds, batch_id)
        assert input_nodes.dtype == idtype
        _check_minibatch(sampler.sample(seeds, batch_id), graph, seeds, [4, 3, 2], False)
    assert sampler._g.formats() == {"created": ["csc"], "not created": []}


def test_dgl_threads_follow_torch_in_any_python_thread(threads):
    """OpenMP's thread count is per calling thread: DGL must still use torch's count."""
    dgl = import_dgl()
    threads(1)
    graph = GRAPHS["uniform"]
    sampler = DGLUnfusedSampler(graph, [2])
    seen = []

    def work():
        sampler.sample(_seeds(graph))
        seen.append(dgl.utils.get_num_threads())

    worker = threading.Thread(target=work)
    worker.start()
    worker.join()
    assert seen == [1]


@pytest.mark.parametrize("cls", SAMPLERS)
def test_native_output_matches_conversion(cls, threads):
    threads(1)  # two calls are compared: see test_seed_layer_reproduces_on_two_threads
    graph = GRAPHS["power_law"]
    sampler = cls(graph, [3, 4])
    dgl = import_dgl()
    seeds = _seeds(graph)
    input_nodes, output_nodes, blocks = sampler.sample_native(seeds, 5)
    mb = sampler.sample(seeds, 5)
    assert torch.equal(output_nodes, seeds) and torch.equal(input_nodes, mb.input_nodes)
    for native, ours in zip(blocks, mb.blocks):
        assert native.num_dst_nodes() == ours.num_dst and native.num_edges() == ours.num_edges
        assert torch.equal(native.srcdata[dgl.NID], ours.src_nodes)
        assert torch.equal(native.srcdata[dgl.NID][:native.num_dst_nodes()],
                           native.dstdata[dgl.NID])


@pytest.mark.parametrize("cls", SAMPLERS)
@pytest.mark.parametrize("graph_name", list(GRAPHS))
def test_same_seed_and_batch_reproduce_on_one_thread(cls, graph_name, threads):
    threads(1)
    graph = GRAPHS[graph_name]
    seeds = _seeds(graph)
    a = cls(graph, [3, 2, 4], seed=7)
    b = cls(graph, [3, 2, 4], seed=7)
    first = a.sample(seeds, batch_id=2)
    a.sample(seeds, batch_id=9)  # moves DGL's global RNG in between
    assert _same(first, a.sample(seeds, batch_id=2))
    assert _same(first, b.sample(seeds, batch_id=2))
    assert not _same(first, a.sample(seeds, batch_id=3))
    assert not _same(first, cls(graph, [3, 2, 4], seed=8).sample(seeds, batch_id=2))


@pytest.mark.parametrize("cls", SAMPLERS)
def test_seed_layer_reproduces_on_two_threads(cls, threads):
    """With several threads DGL numbers new source nodes in a racy order, so deeper layers
    may differ; the seed layer's edge set is still fixed by (seed, batch_id)."""
    threads(2)
    graph = GRAPHS["power_law"]
    seeds = _seeds(graph)
    sampler = cls(graph, [3, 2], seed=7)
    first = _seed_layer_edges(sampler.sample(seeds, 4))
    for _ in range(3):
        assert _seed_layer_edges(sampler.sample(seeds, 4)) == first


def test_fused_sampler_takes_the_fused_path_with_two_threads(threads, monkeypatch):
    dgl = import_dgl()
    calls = []
    fused = dgl.DGLGraph.sample_neighbors_fused

    def spy(g, *args, **kwargs):
        calls.append(args[1] if len(args) > 1 else kwargs.get("fanout"))
        return fused(g, *args, **kwargs)

    monkeypatch.setattr(dgl.DGLGraph, "sample_neighbors_fused", spy)
    threads(2)
    graph = GRAPHS["uniform"]
    mb = DGLFusedSampler(graph, [4, 3]).sample(_seeds(graph))
    assert calls == [3, 4]  # seeds are sampled with fanouts[-1]
    _check_minibatch(mb, graph, _seeds(graph), [4, 3], False)


@pytest.mark.parametrize("cls", SAMPLERS)
def test_pickle_round_trip(cls, threads):
    threads(1)
    graph = GRAPHS["uniform"]
    sampler = cls(graph, [3, 2], replace=True, seed=4)
    sampler.sample(_seeds(graph))
    clone = pickle.loads(pickle.dumps(sampler))
    assert (clone.fanouts, clone.replace, clone.seed, clone.name) == ([3, 2], True, 4, cls.name)
    assert _same(clone.sample(_seeds(graph), 6), sampler.sample(_seeds(graph), 6))


def test_names():
    assert DGLUnfusedSampler.name == "dgl-unfused" and DGLFusedSampler.name == "dgl-fused"


@pytest.mark.parametrize("cls", SAMPLERS)
def test_empty_seeds(cls):
    mb = cls(GRAPHS["uniform"], [2, 2]).sample(torch.empty(0, dtype=torch.int64))
    assert mb.input_nodes.numel() == 0 and all(b.num_edges == 0 for b in mb.blocks)


@pytest.mark.parametrize("cls", SAMPLERS)
def test_bad_constructor_arguments(cls):
    graph = GRAPHS["uniform"]
    with pytest.raises(TypeError, match="graph"):
        cls((graph.indptr, graph.indices), [2])
    with pytest.raises(ValueError, match="fanouts"):
        cls(graph, [])
    with pytest.raises(ValueError, match="fanouts"):
        cls(graph, [2, 0])
    with pytest.raises(ValueError, match="fanouts"):
        cls(graph, [-2])
    with pytest.raises(TypeError, match="fanouts"):
        cls(graph, [2.5])
    with pytest.raises(TypeError, match="fanouts"):
        cls(graph, 5)
    with pytest.raises(TypeError, match="replace"):
        cls(graph, [2], replace=1)
    with pytest.raises(TypeError, match="seed"):
        cls(graph, [2], seed=1.0)


@pytest.mark.parametrize("cls", SAMPLERS)
def test_bad_seeds(cls):
    graph = GRAPHS["uniform"]
    sampler = cls(graph, [2, 2])
    with pytest.raises(TypeError, match="seeds"):
        sampler.sample([0, 1])
    with pytest.raises(TypeError, match="seeds"):
        sampler.sample(torch.tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match="seeds"):
        sampler.sample(torch.tensor([[0, 1]]))
    with pytest.raises(ValueError, match="seeds"):
        sampler.sample(torch.tensor([0, graph.num_nodes]))
    with pytest.raises(ValueError, match="seeds"):
        sampler.sample_native(torch.tensor([-1, 3]))
    with pytest.raises(ValueError, match="seeds"):
        sampler.sample(torch.tensor([3, 5, 3]))
    with pytest.raises(TypeError, match="batch_id"):
        sampler.sample(torch.tensor([3]), batch_id=1.5)


def test_set_dgl_threads(threads):
    dgl = import_dgl()
    set_dgl_threads(1)
    assert dgl.utils.get_num_threads() == 1
    set_dgl_threads(2)
    assert dgl.utils.get_num_threads() == 2
    with pytest.raises(ValueError, match="threads"):
        set_dgl_threads(0)


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_fresh_import_has_no_side_effects(tmp_path):
    """In a new process, without DGLBACKEND: no config file written, no variable left set."""
    code = ("import os, sys\n"
            "from gnnrepro.baselines.dgl_import import import_dgl\n"
            "dgl = import_dgl()\n"
            "print(dgl.backend.backend_name, 'DGLBACKEND' in os.environ, "
            "'dgl.graphbolt' in sys.modules)\n")
    env = {k: v for k, v in os.environ.items() if k != "DGLBACKEND"}
    env["DGLDEFAULTDIR"] = str(tmp_path)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, env.get("PYTHONPATH")]))
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["pytorch", "False", "True"]
    assert not (tmp_path / "config.json").exists()


def test_missing_dgl_gives_install_hint(tmp_path):
    """Without site-packages (python -S) DGL is absent; dgl_import needs only the stdlib."""
    path = os.path.join(ROOT, "gnnrepro", "baselines", "dgl_import.py")
    code = ("import importlib.util\n"
            f"spec = importlib.util.spec_from_file_location('dgl_import', {path!r})\n"
            "mod = importlib.util.module_from_spec(spec)\n"
            "spec.loader.exec_module(mod)\n"
            "print(mod.dgl_available())\n"
            "try:\n"
            "    mod.import_dgl()\n"
            "except ImportError as e:\n"
            "    print(e)\n")
    out = subprocess.run([sys.executable, "-S", "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("False") and "pip install dgl==2.1.0" in out.stdout
