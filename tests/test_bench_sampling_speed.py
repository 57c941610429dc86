"""`python -m gnnrepro bench sampling` end to end on a tiny graph: structure, not speed."""
from __future__ import annotations

import json

import pytest
import torch

from gnnrepro.__main__ import main
from helpers import require_dgl


pytestmark = pytest.mark.usefixtures("bench_env")


def test_bench_sampling_writes_side_by_side_json(tmp_path, capsys):
    require_dgl()
    out = tmp_path / "bench.json"
    assert main(["bench", "sampling", "--scale", "0.002", "--fanouts", "4,3", "--batch-size",
                 "64", "--batches", "4", "--threads", "1", "--repeats", "2",
                 "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert set(result["samplers"]) == {"dgl-unfused", "dgl-fused", "reference", "fused"}
    for name, r in result["samplers"].items():
        assert r["timings"] == 4 * 2, name
        assert r["ms_per_batch"] > 0 and r["edges_per_s"] > 0
        assert 64 <= r["input_nodes"] <= 64 * (1 + 3 + 3 * 4), name
    fused = result["samplers"]["fused"]
    assert result["speedup_vs_dgl_fused"] == pytest.approx(
        result["samplers"]["dgl-fused"]["ms_per_batch"] / fused["ms_per_batch"])
    rounds = result["speedup_vs_dgl_fused_rounds"]
    assert len(rounds) == 2 and len(fused["ms_round_medians"]) == 2
    assert rounds[0] == pytest.approx(
        result["samplers"]["dgl-fused"]["ms_round_medians"][0] / fused["ms_round_medians"][0])
    assert result["params"]["fanouts"] == [4, 3] and result["params"]["batches"] == 4
    assert result["env"]["versions"]["torch"] and result["env"]["torch_threads"] == 1
    assert "fused speedup vs dgl fused" in capsys.readouterr().out
    assert not list(tmp_path.glob(".bench.json.*")), "a temp file was left behind"


def test_bench_sampling_rejects_bad_arguments(capsys, monkeypatch):
    for args in (["--fanouts", "4,x"], ["--samplers", "fused,nope"], ["--batch-size", "0"],
                 ["--sampler-device", "gpu"]):
        with pytest.raises(SystemExit):
            main(["bench", "sampling", "--scale", "0.002", *args])
    if not torch.cuda.is_available():
        uva = ["bench", "sampling", "--scale", "0.002", "--samplers", "fused",
               "--sampler-device", "uva", "--batch-size", "16", "--batches", "1"]
        capsys.readouterr()
        assert main(uva) == 2  # one line, no traceback
        err = capsys.readouterr().err
        assert "error: sampler_device='uva' needs a CUDA device" in err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 2
        with pytest.raises(ValueError, match="sampler_device='uva' needs a CUDA device"):
            main(["--debug", *uva])
        monkeypatch.setenv("GNNREPRO_DEBUG", "1")
        with pytest.raises(ValueError, match="sampler_device='uva'"):
            main(uva)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
def test_williams_orders_balance_who_follows_whom(n):
    from collections import Counter

    from gnnrepro.bench.timing import williams_orders
    orders = williams_orders(n)
    assert all(sorted(order) == list(range(n)) for order in orders)
    follows = Counter((order[i], order[i + 1]) for order in orders for i in range(n - 1))
    assert len(follows) == n * (n - 1) and len(set(follows.values())) <= 1


def test_round_medians_split_the_timings_by_round():
    from gnnrepro.bench.timing import round_medians
    assert round_medians([0.001, 0.003, 0.002, 0.010, 0.030, 0.020], 2) == pytest.approx(
        [2.0, 20.0])
    with pytest.raises(ValueError, match="repeats"):
        round_medians([0.001, 0.002, 0.003], 2)
