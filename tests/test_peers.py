"""Peers (gnnrepro.peers): the child-process protocol with a stand-in peer (tests/peer_standin),
the benchmarks' peer rows and their not-run path, and, where `make peers` has set them up here,
the real GraphBolt and PyG adapters on a tiny dataset."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from gnnrepro.__main__ import main
from gnnrepro.peers import (PEERS, PeerFailed, PeerProcess, check_peers, open_peers, peer_python,
                            unavailable)
from gnnrepro.peers.environments import Peer
from gnnrepro.peers.process import NO_TYPED_PATH
from helpers import require_dgl


def seeds_file(folder: Path, batch_size: int = 4) -> str:
    """Two seed batches, as the benchmarks hand them to a peer."""
    path = folder / "seeds.npy"
    np.save(path, np.arange(2 * batch_size, dtype=np.int64).reshape(2, batch_size))
    return str(path)

TESTS = Path(__file__).resolve().parent
SETUP = {"dataset": "products-sim", "root": None, "scale": 0.002, "fanouts": [4, 3],
         "batch_size": 64, "threads": 1, "seed": 0}
DATA = ["--scale", "0.002", "--fanouts", "4,3", "--batch-size", "64", "--threads", "1"]

pytestmark = pytest.mark.usefixtures("bench_env")


@pytest.fixture
def standin(tmp_path, monkeypatch) -> str:
    """Registers the stand-in peer, its environment being this Python."""
    peers = tmp_path / "peers"
    (peers / "stand-in" / "bin").mkdir(parents=True)
    python = peers / "stand-in" / "bin" / "python"  # a script: a link would lose the venv
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    monkeypatch.setenv("GNNREPRO_PEERS", str(peers))
    monkeypatch.setenv("PYTHONPATH", str(TESTS))
    monkeypatch.setitem(PEERS, "stand-in", Peer("stand-in", "a stand-in", "peer_standin"))
    return "stand-in"


def test_a_peer_that_is_not_set_up_names_the_command(tmp_path, monkeypatch):
    monkeypatch.setenv("GNNREPRO_PEERS", str(tmp_path / "none"))
    assert "make peers" in unavailable("graphbolt")
    assert peer_python("pyg") == tmp_path / "none" / "pyg" / "bin" / "python"
    with pytest.raises(ValueError, match="peer must be one of graphbolt, pyg"):
        peer_python("jraph")
    with pytest.raises(ValueError, match=r"peers must be a subset of graphbolt, pyg, got \['dgx'\]"):
        check_peers(["pyg", "dgx"])
    assert check_peers(("pyg",)) == ["pyg"]
    with pytest.raises(PeerFailed, match="'pyg' not set up.*make peers"):
        PeerProcess("pyg")
    with open_peers(["graphbolt", "pyg"], SETUP) as (running, not_run):
        assert running == {} and set(not_run) == {"graphbolt", "pyg"}


def test_bench_sampling_lists_a_missing_peer_as_not_run(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GNNREPRO_PEERS", str(tmp_path / "none"))
    out = tmp_path / "s.json"
    assert main(["bench", "sampling", *DATA, "--batches", "2", "--repeats", "1",
                 "--samplers", "fused", "--peers", "pyg", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert set(result["samplers"]) == {"fused"} and "make peers" in result["peers_not_run"]["pyg"]
    assert "pyg          not run" in capsys.readouterr().out


def test_the_peer_process_serves_requests_and_reports_failures(standin, tmp_path,
                                                               monkeypatch, capfd):
    with PeerProcess(standin) as peer:
        opened = peer.request("open", **SETUP)
        assert opened["threads"] == 1 and opened["versions"]["torch"] == torch.__version__
        with pytest.raises(PeerFailed, match="(?s)failed in 'nonsense'.*op must be one of open, sample"):
            peer.request("nonsense")
        assert peer.request("loader_epoch", epoch=0)["batches"] > 0  # still serving
    monkeypatch.setenv("STANDIN_FAIL", "open")
    with open_peers([standin], SETUP) as (running, not_run):
        assert running == {} and "stand-in told to fail in open" in not_run[standin]
    monkeypatch.setenv("STANDIN_FAIL", "")
    monkeypatch.setenv("STANDIN_EXIT", "sample")
    with PeerProcess(standin) as peer:
        peer.request("open", **SETUP)
        with pytest.raises(PeerFailed, match="exited with status 3 during 'sample'"):
            peer.request("sample", seeds_file=seeds_file(tmp_path))
    monkeypatch.setenv("STANDIN_EXIT", "")
    monkeypatch.setenv("STANDIN_HANG", "sample")
    with PeerProcess(standin) as peer:
        peer.request("open", **SETUP)
        peer.timeout_s = 0.5
        with pytest.raises(PeerFailed, match="sent nothing for 0.5 s during 'sample'"):
            peer.request("sample", seeds_file=seeds_file(tmp_path))
    assert "waiting for peer 'stand-in' in 'sample': silent for 0.25 s" in capfd.readouterr().err


def test_a_long_op_stays_alive_through_beats(standin, tmp_path, monkeypatch):
    monkeypatch.setenv("STANDIN_SLOW", "0.6")
    with PeerProcess(standin) as peer:
        peer.request("open", **SETUP)
        peer.timeout_s = 1.5  # the whole op takes 2.4 s; the beats come at most 1.2 s apart
        path = tmp_path / "seeds.npy"
        np.save(path, np.arange(16, dtype=np.int64).reshape(4, 4))
        assert len(peer.request("sample", seeds_file=str(path))["seconds"]) == 4


def test_bench_sampling_interleaves_a_peer_on_the_same_batches(standin, tmp_path, capsys):
    out = tmp_path / "s.json"
    assert main(["bench", "sampling", *DATA, "--batches", "3", "--repeats", "2",
                 "--samplers", "fused", "--peers", standin, "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    peer, ours = result["samplers"][standin], result["samplers"]["fused"]
    assert peer["timings"] == ours["timings"] == 6
    assert len(peer["ms_round_medians"]) == 2 and peer["edges_per_s"] > 0
    assert result["speedup_vs_stand_in"] == pytest.approx(
        peer["ms_per_batch"] / ours["ms_per_batch"])
    assert result["peers"][standin]["label"] == "a stand-in"
    assert result["peers_not_run"] == {}
    assert "fused speedup vs stand in" in capsys.readouterr().out


def test_bench_loader_delivers_a_peers_epochs_beside_ours(standin, tmp_path, capsys):
    out = tmp_path / "l.json"
    assert main(["bench", "loader", *DATA, "--pipelines", "fused", "--rounds", "2",
                 "--epochs", "1", "--peers", standin, "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    ours, peer = result["pipelines"]["fused"], result["pipelines"][standin]
    assert len(peer["epochs_s"]) == 2 and peer["batches"] == ours["batches"]
    assert result["params"]["resolved"][standin] == {"workers": 0, "threads": 1}
    assert main(["bench", "loader", *DATA, "--peers", standin, "--step-ms", "5"]) != 0
    assert "peers run with no stand-in step" in capsys.readouterr().err


def test_bench_end_to_end_trains_a_peer_with_the_same_settings(standin, tmp_path, capsys):
    out = tmp_path / "e.json"
    assert main(["bench", "end-to-end", *DATA, "--pipelines", "fused", "--epochs", "3",
                 "--hidden", "16", "--lr", "0.05", "--target-acc", "0.01", "--peers", standin,
                 "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    peer = result["peers"][standin]
    assert len(peer["epochs_s"]) == 3 and peer["epoch_s"] == pytest.approx(
        sorted(peer["epochs_s"][1:])[0] / 2 + sorted(peer["epochs_s"][1:])[1] / 2)
    assert peer["loss"][-1] < peer["loss"][0]  # the linear model learns
    assert len(peer["val_acc_epochs"]) == 3 and peer["epochs_to_target"] == 1
    assert peer["peak_rss_bytes"] > 2**20
    assert result["speedup_vs_stand_in"]["fused"] == pytest.approx(
        peer["epoch_s"] / result["pipelines"]["fused"]["epoch_s"])
    assert "ours vs stand-in: fused" in capsys.readouterr().out


def test_eval_ids_evaluates_ours_and_the_peer_on_the_same_subsets(standin, tmp_path):
    out = tmp_path / "e.json"
    assert main(["bench", "end-to-end", *DATA, "--pipelines", "fused", "--epochs", "1",
                 "--hidden", "16", "--eval-ids", "37", "--peers", standin,
                 "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    ours, peer = result["pipelines"]["fused"], result["peers"][standin]
    assert result["params"]["eval_ids"] == 37
    assert ours["eval_counts"] == peer["eval_counts"] == {"val": 37, "test": 37}
    assert 0 <= peer["test_acc"] <= 1 and 0 <= ours["test_acc"] <= 1
    assert "and the test ids" in peer["evaluation"]


def test_a_peer_failing_in_training_is_listed_and_ours_still_reported(standin, tmp_path,
                                                                      monkeypatch):
    monkeypatch.setenv("STANDIN_FAIL", "train")
    out = tmp_path / "e.json"
    assert main(["bench", "end-to-end", *DATA, "--pipelines", "fused", "--epochs", "1",
                 "--hidden", "16", "--peers", standin, "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["peers"] == {} and "fused" in result["pipelines"]
    assert "failed in round 1" in result["peers_not_run"][standin]
    assert "stand-in told to fail in train" in result["peers_not_run"][standin]


@pytest.mark.parametrize("name", ["graphbolt", "pyg"])
def test_a_real_peer_samples_loads_and_trains_when_set_up(name, tmp_path):
    if unavailable(name):
        pytest.skip(f"{name}: {unavailable(name)}")
    if name == "graphbolt":
        require_dgl()
    with PeerProcess(name) as peer:
        peer.request("open", **SETUP)
        reply = peer.request("sample", seeds_file=seeds_file(tmp_path, SETUP["batch_size"]))
        assert len(reply["seconds"]) == 2
        assert all(n >= SETUP["batch_size"] for n in reply["input_nodes"]) and all(e > 0 for e in reply["edges"])
        assert peer.request("loader_epoch", epoch=1)["batches"] > 0
        trained = peer.request("train", epochs=2, lr=0.01, hidden=16, dropout=0.5)
        assert len(trained["val_acc"]) == 2 and all(0 <= a <= 1 for a in trained["val_acc"])




TYPED_SETUP = {"dataset": "mag-sim", "root": None, "scale": 0.005, "fanouts": [4, 3],
               "batch_size": 64, "threads": 1, "seed": 0}


def test_a_peer_without_a_typed_path_is_not_run_on_a_typed_dataset(standin):
    with open_peers([standin], TYPED_SETUP) as (running, not_run):
        assert running == {} and not_run == {standin: NO_TYPED_PATH}
    with pytest.raises(PeerFailed, match="no heterogeneous path"):
        PeerProcess(standin, typed=True)
    assert PEERS["pyg"].typed_adapter == "gnnrepro.peers.pyg_hetero_peer"


def test_graphbolts_typed_csc_holds_each_relations_lists_in_order():
    """GraphBolt's one CSC over all node types: each destination's in-edges grouped by
    relation, in the relation's own order, sources at their type's offset."""
    from gnnrepro.peers.graphbolt_hetero_peer import fused_typed_csc
    from gnnrepro.typed_graph import TypedGraph
    generator = torch.Generator().manual_seed(0)
    num_nodes = {"a": 5, "b": 3}
    edges = {("a", "x", "b"): (torch.randint(0, 5, (12,), generator=generator),
                               torch.randint(0, 3, (12,), generator=generator)),
             ("b", "y", "b"): (torch.randint(0, 3, (7,), generator=generator),
                               torch.randint(0, 3, (7,), generator=generator)),
             ("b", "z", "a"): (torch.randint(0, 3, (9,), generator=generator),
                               torch.randint(0, 5, (9,), generator=generator))}
    graph = TypedGraph.from_edges(num_nodes, edges)
    fused = fused_typed_csc(graph.num_nodes, graph.relations)
    assert fused["node_type_offset"].tolist() == [0, 5, 8]
    assert fused["edge_type_to_id"] == {"a:x:b": 0, "b:y:b": 1, "b:z:a": 2}
    indptr, indices, kinds = fused["csc_indptr"], fused["indices"], fused["type_per_edge"]
    offset = {"a": 0, "b": 5}
    for kind, ((src, _, dst), csc) in enumerate(graph.relations.items()):
        for v in range(num_nodes[dst]):
            g = v + offset[dst]
            mine = kinds[indptr[g]:indptr[g + 1]]
            assert torch.equal(mine, mine.sort().values)  # grouped by relation
            got = indices[indptr[g]:indptr[g + 1]][mine == kind].long() - offset[src]
            assert torch.equal(got, csc.indices[csc.indptr[v]:csc.indptr[v + 1]].long())
    assert indptr[-1] == sum(e[0].numel() for e in edges.values())


@pytest.mark.parametrize("name", ["graphbolt", "pyg"])
def test_a_real_peer_samples_and_trains_a_typed_graph_when_set_up(name, tmp_path):
    """The peer's heterogeneous loader and its SAGEConv per relation on mag-sim: every batch
    holds its seeds, and training learns (loss falls) with sparse embeddings."""
    if unavailable(name):
        pytest.skip(f"{name}: {unavailable(name)}")
    with open_peers([name], TYPED_SETUP) as (running, not_run):
        assert not_run == {}, not_run
        peer = running[name]
        reply = peer.request("sample", seeds_file=seeds_file(tmp_path, 64))
        assert all(n >= 64 for n in reply["input_nodes"]) and all(e > 0 for e in reply["edges"])
        assert peer.request("loader_epoch", epoch=1)["batches"] > 0
        trained = peer.request("train", epochs=3, lr=0.01, hidden=16, dropout=0.0)
        assert trained["loss"][-1] < trained["loss"][0]
        assert all(0 <= a <= 1 for a in trained["val_acc"])


#: In the pyg environment: a NeighborLoader batch's adj_t turned into torch's sparse CSR (what
#: the PyG peer's model takes on a GPU where torch-sparse has no CUDA ops) holds the same
#: edges, and PyG's SAGEConv model gives the same output on both.
TORCH_CSR_CHECK = """
import torch
from torch_geometric.data import Data
from torch_geometric.loader import NeighborLoader
from torch_sparse import SparseTensor
from gnnrepro.peers.pyg_model import PyGSAGE
from gnnrepro.peers.pyg_peer import torch_sparse_has_cuda, with_torch_csr
torch.manual_seed(0)
n = 200
edges = torch.unique(torch.randint(0, n, (2, 1500)), dim=1)
adj_t = SparseTensor(row=edges[1], col=edges[0], sparse_sizes=(n, n))
batch = next(iter(NeighborLoader(Data(x=torch.randn(n, 8), adj_t=adj_t, num_nodes=n), [5, 3],
                                 batch_size=16)))
model = PyGSAGE(8, 16, 4, 2, 0.0).eval()
expected, dense = model(batch.x, batch.adj_t), batch.adj_t.to_dense()
converted = with_torch_csr(batch.clone())
assert converted.adj_t.layout == torch.sparse_csr and converted.adj_t.dtype == torch.float32
assert torch.equal(converted.adj_t.to_dense(), dense), "other edges than adj_t's"
assert torch.allclose(model(converted.x, converted.adj_t), expected, atol=1e-5)
print("cuda ops:", torch_sparse_has_cuda())
"""


def run_in_pyg_env(code: str) -> str:
    """`code` run by the pyg environment's Python with this checkout importable and the tests'
    data folder; its stdout (the test fails on a non-zero exit, skips without the env)."""
    if unavailable("pyg"):
        pytest.skip(f"pyg: {unavailable('pyg')}")
    import os
    import subprocess
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(TESTS.parent),
           "GNNREPRO_DATA": os.environ["GNNREPRO_DATA"]}
    done = subprocess.run([str(peer_python("pyg")), "-c", code], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_the_pyg_peers_torch_csr_is_its_adj_t():
    assert run_in_pyg_env(TORCH_CSR_CHECK) in ("cuda ops: True", "cuda ops: False")


#: In the pyg environment: the PyG peer trains with NeighborLoader's worker processes (what it
#: uses on a GPU, here forced on the CPU) and leaves its data and device as they were.
WORKERS_CHECK = """
from gnnrepro.peers.pyg_peer import Adapter
class TwoWorkers(Adapter):
    def loader_workers(self):
        return 2
peer = TwoWorkers()
peer.open("products-sim", None, 0.002, [4, 3], 64, 1, 0)
assert Adapter.loader_workers(peer) == 0, "no workers on the CPU"
trained = peer.train(epochs=1, lr=0.01, hidden=16, dropout=0.5)
assert len(trained["epochs_s"]) == 1 and 0 <= trained["val_acc"][0] <= 1
assert peer.device.type == "cpu" and peer.pyg_data.x.device.type == "cpu"
print("trained with workers")
"""


def test_the_pyg_peer_trains_with_loader_workers():
    assert run_in_pyg_env(WORKERS_CHECK).endswith("trained with workers")


def test_a_reply_read_together_with_a_beat_is_not_waited_for() -> None:
    """A beat and the reply arriving in one read: the reply is taken from what was read, not
    waited for on the pipe (which stays quiet: the peer has said everything)."""
    import subprocess
    import sys
    import time

    from gnnrepro.peers.process import PeerProcess
    peer = object.__new__(PeerProcess)
    peer.name, peer.timeout_s, peer._pending = "stand-in", 5.0, b""
    peer._proc = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; sys.stdin.readline(); "
         "sys.stdout.write('{\"beat\": true}\\n{\"result\": {\"ok\": 1}}\\n'); "
         "sys.stdout.flush(); time.sleep(30)"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        start = time.monotonic()
        assert peer.request("sample") == {"ok": 1}
        assert time.monotonic() - start < 4.0
    finally:
        peer._proc.kill()
        peer._proc.wait()
        peer._proc.stdout.close()
        peer._proc.stdin.close()
