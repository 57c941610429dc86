"""benchmarks/weighted_lines.py: its expected line count against every subset of positions
enumerated, and the script over a tiny products-sim."""
from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import torch

from helpers import load_script

SCRIPT = load_script(Path(__file__).resolve().parents[1] / "benchmarks" / "weighted_lines.py")


@pytest.mark.parametrize("degree,picks,entry_bytes", [(5, 2, 16), (9, 3, 16), (20, 4, 4),
                                                     (37, 3, 4), (8, 8, 16), (1, 1, 4)])
def test_expected_lines_is_the_mean_over_every_subset(degree, picks, entry_bytes):
    per_line = 64 // entry_bytes
    subsets = list(itertools.combinations(range(degree), picks))
    mean = sum(len({p // per_line for p in s}) for s in subsets) / len(subsets)
    got = SCRIPT.expected_lines(torch.tensor([picks]), torch.tensor([degree]), entry_bytes)
    assert float(got[0]) == pytest.approx(mean, rel=1e-9)


def test_the_script_prints_each_cut_and_degree_range(capsys):
    assert SCRIPT.main(["--scale", "0.002", "--batches", "1", "--batch-size", "64",
                        "--cuts", "0,64"]) == 0
    out = capsys.readouterr().out
    assert "tree for degree <=    0" in out and "tree for degree <=   64" in out
    assert out.count("degree (") == 6
