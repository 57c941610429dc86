"""bench typed-sampling on a tiny mag-sim: every contender does the same work (at one layer
exactly the same edges per batch: uniform without replacement picks min(fanout, degree) per
seed and relation; over two layers about the same), speedups are ratios of the medians, the
table prints."""
from __future__ import annotations

import pytest

from gnnrepro.baselines.dgl_import import dgl_available
from gnnrepro.bench import typed_sampling

pytestmark = pytest.mark.skipif(not dgl_available(), reason="DGL is not installed")


def test_contenders_do_the_same_work(tmp_path) -> None:
    one = typed_sampling.measure(dataset="mag-sim", scale=0.005, root=str(tmp_path),
                                 fanouts=[4], batch_size=64, batches=3, threads=1, repeats=1)
    edges = {name: r["edges"] for name, r in one["samplers"].items()}
    assert len(set(edges.values())) == 1, edges  # the seeds' picks: fixed by their degrees
    result = typed_sampling.measure(dataset="mag-sim", scale=0.005, root=str(tmp_path),
                                    fanouts=[4, 3], batch_size=64, batches=3, threads=1,
                                    repeats=1)
    samplers = result["samplers"]
    assert set(samplers) == set(typed_sampling.SAMPLERS)
    edges = [r["edges"] for r in samplers.values()]
    assert max(edges) < 1.05 * min(edges), edges
    ours = samplers["fused"]["ms_per_batch"]
    assert result["speedup_vs_dgl_fused"] == pytest.approx(
        samplers["dgl-fused"]["ms_per_batch"] / ours)
    assert result["params"]["target"] == "paper" and result["params"]["fanouts"] == [4, 3]
    assert "fused speedup vs dgl fused" in typed_sampling.format_table(result)


def test_a_homogeneous_dataset_is_refused(tmp_path) -> None:
    with pytest.raises(ValueError, match="is homogeneous"):
        typed_sampling.measure(dataset="products-sim", scale=0.002, root=str(tmp_path),
                               batch_size=16, batches=1, repeats=1, threads=1)
