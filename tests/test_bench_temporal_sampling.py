"""bench temporal-sampling on a tiny products-sim: each contender's blocks, the ratios of the
medians, the table; and the GPU run's check against the CPU op (here: CPU contenders against
themselves, and a batch that differs caught)."""
from __future__ import annotations

import pytest
import torch

from gnnrepro.bench import temporal_sampling
from gnnrepro.datasets import load_scaled
from gnnrepro.sampling.temporal import edge_times


def test_measure_on_the_cpu(tmp_path) -> None:
    result = temporal_sampling.measure(scale=0.005, root=str(tmp_path), fanouts=[4, 3],
                                       batch_size=64, batches=3, threads=1, repeats=1)
    samplers = result["samplers"]
    assert set(samplers) == set(temporal_sampling.SAMPLERS)
    assert result["params"]["sampler_device"] == "cpu" and "blocks_equal_cpu" not in result
    # disjoint keeps one source per (seed, node): a node two seeds reach is sampled twice
    assert samplers["disjoint"]["sources"] >= samplers["uniform"]["sources"]
    assert samplers["disjoint"]["edges"] >= samplers["uniform"]["edges"]
    assert samplers["temporal"]["edges"] < samplers["temporal-all"]["edges"]
    assert result["ratios"]["temporal_cost_vs_uniform"] == pytest.approx(
        samplers["temporal"]["ms_per_batch"] / samplers["uniform"]["ms_per_batch"])
    assert "temporal_cost_vs_uniform" in temporal_sampling.format_table(result)


def test_the_cpu_check_compares_seed_indices(tmp_path) -> None:
    data = load_scaled("products-sim", str(tmp_path), 0.005)
    gen = torch.Generator().manual_seed(0)
    times = torch.randint(0, temporal_sampling.TIME_SPAN, (data.graph.num_edges,), generator=gen)
    node_time = torch.randint(0, temporal_sampling.TIME_SPAN, (data.graph.num_nodes,),
                              generator=gen)
    graph = edge_times(data.graph, times).graph
    seeds = [data.train_idx[:32], data.train_idx[32:64]]
    names = ["temporal", "temporal-exclude", "temporal-weighted"]
    contenders = {n: temporal_sampling._contender(n, graph, [3, 2], 0, times, node_time)
                  for n in names}
    counts = temporal_sampling._check_against_cpu(contenders, graph, [3, 2], 0, times,
                                                  node_time, seeds)
    assert counts == {n: {"equal": 2, "batches": 2} for n in names}
    # another seed gives other blocks: the check sees it
    other = {"temporal": temporal_sampling._contender("temporal", graph, [3, 2], 1, times,
                                                      node_time)}
    counts = temporal_sampling._check_against_cpu(other, graph, [3, 2], 0, times, node_time,
                                                  seeds)
    assert counts["temporal"]["equal"] < 2


def test_gpu_placements_need_a_gpu() -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(ValueError, match="sampler_device='uva' needs a CUDA device"):
        temporal_sampling.measure(scale=0.005, sampler_device="uva")
