"""bench weighted-sampling on a tiny products-sim: every contender at a distribution does the
same work (at one layer exactly the same edges: min(fanout, positive weights) a seed), the
ratios are ratios of the medians, the distributions are what they say, the table prints."""
from __future__ import annotations

import pytest
import torch

from gnnrepro.baselines.dgl_import import dgl_available
from gnnrepro.bench import weighted_sampling


def test_distributions() -> None:
    half = weighted_sampling.edge_weights("half-zero", 100_000, 0)
    assert abs(float((half == 0).float().mean()) - 0.5) < 0.01 and float(half.max()) < 1
    pareto = weighted_sampling.edge_weights("pareto", 100_000, 0)
    assert float(pareto.min()) >= 1.0 and float(pareto.max()) > 1000  # a heavy tail
    assert torch.equal(pareto, weighted_sampling.edge_weights("pareto", 100_000, 0))
    with pytest.raises(ValueError, match="unknown distribution"):
        weighted_sampling.edge_weights("normal", 10, 0)


@pytest.mark.skipif(not dgl_available(), reason="DGL is not installed")
def test_contenders_do_the_same_work(tmp_path) -> None:
    result = weighted_sampling.measure(scale=0.005, root=str(tmp_path), fanouts=[4],
                                       batch_size=64, batches=3, threads=1, repeats=1)
    samplers = result["samplers"]
    assert set(samplers) == {f"{s}/{w}" for s in weighted_sampling.SAMPLERS
                             for w in ("uniform", *weighted_sampling.WEIGHTS)}
    for kind in ("uniform", *weighted_sampling.WEIGHTS):
        edges = {samplers[f"{s}/{kind}"]["edges"] for s in weighted_sampling.SAMPLERS}
        assert len(edges) == 1, (kind, edges)
    assert samplers["fused/half-zero"]["edges"] < samplers["fused/uniform"]["edges"]
    ratios = result["ratios"]["pareto"]
    assert ratios["cost_vs_our_uniform"] == pytest.approx(
        samplers["fused/pareto"]["ms_per_batch"] / samplers["fused/uniform"]["ms_per_batch"])
    assert ratios["speedup_vs_dgl_fused"] == pytest.approx(
        samplers["dgl-fused/pareto"]["ms_per_batch"] / samplers["fused/pareto"]["ms_per_batch"])
    assert "pyg" in result["peers_not_run"]
    assert "cost_vs_our_uniform" in weighted_sampling.format_table(result)
