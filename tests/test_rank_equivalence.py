"""Two data-parallel ranks train as one rank with the global batch (issue 49 item 3, here on CPU
ranks over gloo; benchmarks/gpu_ranks.py runs the same on a GPU): the ranks end with identical
weights, within 1e-5 of one rank's after 50 steps."""
from __future__ import annotations

import pytest
import torch

from gnnrepro.datasets import Dataset
from gnnrepro.distributed.equivalence import rank_equivalence, relative_difference


def test_two_ranks_end_where_one_rank_with_the_global_batch_ends(dataset: Dataset) -> None:
    result = rank_equivalence(dataset, [2], steps=50, batch_size=64, fanouts=[5, 5],
                              hidden=32, threads=1, workers=0)
    one, two, own = result["rows"]
    assert one["world_size"] == 1 and two["world_size"] == 2 and two["steps"] >= 50
    assert two["backend"] == "gloo" and two["ranks_identical"]
    assert two["relative_difference"] <= 1e-5
    # every rank on its own private copy of the data: the same training, the same weights
    assert (own["world_size"], own["data"]) == (2, "own copy per rank")
    assert own["ranks_identical"] and own["relative_difference"] <= 1e-5
    assert result["cuda_context_pss_bytes"] is None and result["dataset_bytes"] > 0
    assert result["params"]["dropout"] == 0.0
    assert result["params"]["train_ids_used"] % 64 == 0
    assert two["extra_pss_per_rank_bytes"] is not None and two["pss_bytes"] > 0


def test_bad_settings_are_named(dataset: Dataset) -> None:
    with pytest.raises(ValueError, match="does not split evenly between \\[3\\] ranks"):
        rank_equivalence(dataset, [2, 3], batch_size=64)
    with pytest.raises(ValueError, match="exceeds the"):
        rank_equivalence(dataset, [2], batch_size=100_000)
    with pytest.raises(ValueError, match="world_sizes must be >= 2"):
        rank_equivalence(dataset, [1], batch_size=64)
    with pytest.raises(ValueError, match="at least one world size"):
        rank_equivalence(dataset, [], batch_size=64)


def test_relative_difference() -> None:
    a = {"w": torch.tensor([3.0, 4.0]), "b": torch.zeros(2)}
    assert relative_difference(a, a) == 0.0
    assert relative_difference({"w": torch.tensor([3.0, 4.5]), "b": torch.zeros(2)},
                               a) == pytest.approx(0.1)
    with pytest.raises(ValueError, match="parameter names differ"):
        relative_difference({"w": a["w"]}, a)
