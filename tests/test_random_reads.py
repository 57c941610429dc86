"""The random-read probe and the sampler's line count (gnnrepro.bench.random_reads)."""
from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from gnnrepro import _C
from gnnrepro.__main__ import main
from gnnrepro.bench.random_reads import (LINE_BYTES, _row_lines_read, batch_line_reads,
                                         probe_ceiling, read_ceiling)
from gnnrepro.datasets.class_rows import splitmix64
from gnnrepro.graph import CSCGraph
from gnnrepro.sampling import FusedSampler
from helpers import load_script


def _numpy_checksum(words: np.ndarray, reads: int, threads: int, seed: int) -> int:
    """The probe's sum recomputed: thread t reads line mix(key_t + i) % lines."""
    lines = words.size * 8 // LINE_BYTES
    first_words = words[::LINE_BYTES // 8][:lines]
    total = np.uint64(0)
    for t in range(threads):
        key = splitmix64(np.array([seed], np.uint64) ^ splitmix64(np.array([t], np.uint64)))
        picks = splitmix64(key + np.arange(reads, dtype=np.uint64)) % np.uint64(lines)
        with np.errstate(over="ignore"):
            total += first_words[picks].sum(dtype=np.uint64)
    return int(total)


@pytest.mark.parametrize("threads", [1, 3])
def test_probe_reads_the_lines_its_generator_names(threads):
    words = np.random.default_rng(1).integers(0, 2**63, size=8 * 1000 + 5, dtype=np.uint64)
    data = torch.from_numpy(words.view(np.int64))
    got = _C.random_line_reads(data, 5000, threads, 7) % 2**64
    assert got == _numpy_checksum(words, 5000, threads, 7)
    for ahead in (1, 32, 1024):  # the prefetching loop reads the same lines
        assert _C.random_line_reads(data, 5000, threads, 7, ahead) % 2**64 == got
    assert _C.random_line_reads(data, 3, threads, 7, 8) % 2**64 == _numpy_checksum(
        words, 3, threads, 7)  # fewer reads than the distance
    assert _C.random_line_reads(data, 5000, threads, 8) != got  # another seed, other lines


def test_probe_rejects_what_it_cannot_read():
    with pytest.raises(ValueError, match="at least 64 bytes"):
        _C.random_line_reads(torch.zeros(7, dtype=torch.int64), 10, 1, 0)
    with pytest.raises(ValueError, match="contiguous"):
        _C.random_line_reads(torch.zeros(64, 4)[:, 0], 10, 1, 0)
    with pytest.raises(ValueError, match="threads must be in"):
        _C.random_line_reads(torch.zeros(64), 10, 0, 0)
    with pytest.raises(ValueError, match="reads_per_thread"):
        _C.random_line_reads(torch.zeros(64), -1, 1, 0)
    for ahead in (-1, 1025):
        with pytest.raises(ValueError, match="prefetch_ahead"):
            _C.random_line_reads(torch.zeros(64), 1, 1, 0, ahead)
    with pytest.raises(TypeError, match="array"):
        probe_ceiling(np.zeros(64), 1)
    with pytest.raises(ValueError, match="threads"):
        probe_ceiling(torch.zeros(64), 0)
    with pytest.raises(ValueError, match="at least 64 bytes"):
        probe_ceiling(torch.zeros(3), 1)
    result = probe_ceiling(torch.zeros(4096), 2, reads_per_thread=1000, repeats=2)
    assert result["lines_per_s"] > 0 and len(result["lines_per_s_rounds"]) == 2
    assert result["array_bytes"] == 4096 * 4 and result["prefetch_ahead"] == 0
    with pytest.raises(ValueError, match="ms_per_batch"):
        read_ceiling(CSCGraph(torch.tensor([0, 0]), torch.zeros(0, dtype=torch.int64)),
                     {"total": 1.0}, 0.0, 1)


def _brute_force_lines(start: int, degree: int, fanout: int, base: int, item: int) -> float:
    """Mean distinct lines over every k-subset of the row's entries."""
    lines = [(base + (start + i) * item) // LINE_BYTES for i in range(degree)]
    if fanout < 0 or degree <= fanout:
        return float(len(set(lines)))
    subsets = list(itertools.combinations(lines, fanout))
    return sum(len(set(s)) for s in subsets) / len(subsets)


@pytest.mark.parametrize("item", [4, 8])
def test_row_lines_match_every_subset(item):
    cases = [(0, 0, 3), (0, 5, 3), (3, 20, 4), (13, 40, 5), (7, 9, 9), (2, 33, 1), (5, 30, -1)]
    for base in (0, 64 * 3, 64 * 3 + 8):
        start = np.array([c[0] for c in cases])
        degree = np.array([c[1] for c in cases])
        for fanout in (1, 3, 5, -1):
            got = _row_lines_read(start, degree, fanout, base, item)
            want = [_brute_force_lines(s, d, fanout, base, item) for s, d, _ in cases]
            np.testing.assert_allclose(got, want, rtol=1e-12)


def test_batch_counts_a_hand_checked_star():
    # node 0's in-neighbours are 1..20; every other node has none
    indptr = torch.tensor([0] + [20] * 40, dtype=torch.int64)
    graph = CSCGraph(indptr, torch.arange(1, 21, dtype=torch.int64))
    whole = FusedSampler(graph, [-1], seed=0).sample(torch.tensor([0]), 0)
    counts = batch_line_reads(graph, whole, [-1])
    assert counts["indptr"] == 1 + (graph.indptr.data_ptr() % 64 == 56)
    spanned = (graph.indices.data_ptr() + 19 * 8) // 64 - graph.indices.data_ptr() // 64 + 1
    assert counts["indices"] == spanned
    assert counts["node_map"] == 2  # ids 0..20: map lines 0 and 1
    assert counts["total"] == counts["indptr"] + counts["indices"] + counts["node_map"]
    picked = batch_line_reads(graph, FusedSampler(graph, [5], seed=0).sample(
        torch.tensor([0]), 0), [5])
    assert picked["indices"] == pytest.approx(
        _brute_force_lines(0, 20, 5, graph.indices.data_ptr(), 8))
    with pytest.raises(ValueError, match="fanouts has 2 entries"):
        batch_line_reads(graph, whole, [5, 5])


@pytest.mark.usefixtures("bench_env")
def test_bench_sampling_ceiling_writes_the_share(tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert main(["bench", "sampling", "--scale", "0.002", "--fanouts", "4,3", "--batch-size",
                 "64", "--batches", "3", "--threads", "1", "--repeats", "1", "--samplers",
                 "fused", "--ceiling", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    reads = result["random_reads"]
    assert set(reads["ceilings"]) == {"indices", "indptr", "node_map"}
    assert all(c["threads"] == 1 and c["lines_per_s"] > 0 for c in reads["ceilings"].values())
    lines = reads["lines_per_batch"]
    assert lines["indptr"] >= 64 and lines["indices"] > 0 and lines["node_map"] > 0
    alone = reads["ms_per_batch_alone"]  # the sampler timed again alone, as the probe runs
    assert alone["n"] == 3 and alone["ms_p10"] <= alone["ms_median"] <= alone["ms_p90"]
    ms = alone["ms_median"]
    assert reads["lines_per_s"] == pytest.approx(lines["total"] / (ms / 1e3))
    at_ceiling = sum(lines[a] / reads["ceilings"][a]["lines_per_s"] for a in reads["ceilings"])
    assert reads["ceiling_ms_per_batch"] == pytest.approx(1e3 * at_ceiling)
    assert reads["share_of_ceiling"] == pytest.approx(1e3 * at_ceiling / ms)
    assert reads["ceilings"]["node_map"]["array_bytes"] == 4 * result["params"]["num_nodes"]
    ahead = _C.sampler_prefetch_ahead()
    for name, ceiling in reads["ceilings"].items():  # no prefetch and the sampler's distance
        rounds = ceiling["lines_per_s_rounds"]
        assert set(rounds) == {"0", str(ahead[name])} and all(len(r) == 5 for r in rounds.values())
        assert ceiling["lines_per_s_by_prefetch_ahead"][str(ceiling["prefetch_ahead"])] == \
            pytest.approx(np.median(rounds[str(ceiling["prefetch_ahead"])]))
    assert result["params"]["scale"] == 0.002
    assert "of the ceiling" in capsys.readouterr().out
    assert main(["bench", "sampling", "--scale", "0.002", "--samplers", "dgl-fused",
                 "--ceiling"]) == 2
    assert "ceiling: the random-read probe compares the fused sampler" in capsys.readouterr().err


def test_the_size_sweep_writes_a_row_per_setting(tmp_path):
    sweep = load_script(Path(__file__).resolve().parents[1] / "benchmarks"
                        / "random_read_sizes.py")
    out = tmp_path / "sizes.json"
    assert sweep.main(["--mib", "1,2", "--threads", "1", "--prefetch", "0,4", "--reads", "1000",
                       "--out", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert [(r["mib"], r["prefetch_ahead"]) for r in rows] == [(1, 0), (1, 4), (2, 0), (2, 4)]
    assert all(r["lines_per_s"] > 0 for r in rows)
