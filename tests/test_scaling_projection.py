"""k-rank epochs projected from measured parts (issue 49 item 4): the arithmetic of the
projection, and the parts measured with k CPU ranks at once."""
from __future__ import annotations

import json
import math

import pytest
import torch

from gnnrepro.datasets import Dataset
from gnnrepro.distributed.projection import (GPU_LINK, Interconnect, RankParts,
                                             project_epoch, projections, rank_steps,
                                             ring_allreduce_s)
from gnnrepro.distributed.scaling_parts import measure_parts, rank_batch_size
from gnnrepro.training.loop import build_model

LINK = Interconnect("test", 10e9, 5e-6)


def test_ring_allreduce_moves_2_k_minus_1_over_k_of_the_bytes() -> None:
    assert ring_allreduce_s(1e6, 1, LINK) == 0.0
    assert ring_allreduce_s(1e6, 2, LINK) == pytest.approx(1e6 / 10e9 + 2 * 5e-6)
    assert ring_allreduce_s(1e6, 8, LINK) == pytest.approx(2 * 7 / 8 * 1e6 / 10e9 + 14 * 5e-6)
    with pytest.raises(ValueError, match="k"):
        ring_allreduce_s(1e6, 0, LINK)


def test_steps_cover_every_id_once() -> None:
    assert rank_steps(1000, 1, 100) == 10
    assert rank_steps(1000, 4, 100) == 3  # 400 ids a step
    assert rank_steps(1001, 1, 100) == 11
    with pytest.raises(ValueError, match="rank_batch"):
        rank_steps(1000, 2, 0)


def test_serial_pipeline_adds_its_parts_and_overlapped_takes_the_slowest() -> None:
    host = {1: 0.010, 2: 0.012}
    batch = {1: 100, 2: 100}
    rates = dict(pcie_bytes_per_s=50e9, host_read_bytes_per_s=60e9)
    serial = RankParts(host, batch, device_s=0.004, copy_bytes=1e8)
    overlapped = RankParts(host, batch, device_s=0.004, copy_bytes=1e8, overlapped=True)
    one = project_epoch(serial, 1, 1000, allreduce_s=0.0, **rates)
    assert one["copy_s"] == pytest.approx(1e8 / 50e9)  # the link is the slower
    assert one["step_s"] == pytest.approx(0.010 + 0.002 + 0.004)
    assert one["epoch_s"] == pytest.approx(10 * one["step_s"]) and one["bound_by"] == "sum"
    # a last partial step is priced as a whole one
    part = project_epoch(serial, 1, 1050, allreduce_s=0.0, **rates)
    assert part["steps"] == 11 and part["epoch_s"] == pytest.approx(11 * one["step_s"])
    two = project_epoch(serial, 2, 1000, allreduce_s=0.001, **rates)
    assert two["copy_s"] == pytest.approx(1e8 / 30e9)  # two links share the host's reads
    assert two["steps"] == 5
    assert two["step_s"] == pytest.approx(0.012 + 1e8 / 30e9 + 0.004 + 0.001)
    both = project_epoch(overlapped, 2, 1000, allreduce_s=0.001, **rates)
    assert both["step_s"] == pytest.approx(0.012) and both["bound_by"] == "host"
    with pytest.raises(ValueError, match="not measured at 4 ranks"):
        project_epoch(serial, 4, 1000, allreduce_s=0.0, **rates)
    with pytest.raises(ValueError, match="pcie_bytes_per_s"):
        project_epoch(serial, 1, 1000, allreduce_s=0.0)


def test_cpu_ranks_add_the_measured_allreduce_to_their_step() -> None:
    parts = {"host": {"fused+pinned": {"1": {"batch_s": 0.02, "step_max_s": 0.02},
                                       "2": {"batch_s": 0.025, "step_max_s": 0.03}}},
             "rank_batch": {"1": 64, "2": 32}, "allreduce_s": {"1": 0.0, "2": 0.002},
             "gradient_bytes": 4000}
    rows = projections(parts, 640)
    assert [(r["world_size"], r["steps"]) for r in rows] == [(1, 10), (2, 10)]
    assert rows[1]["step_s"] == pytest.approx(0.032)
    assert rows[1]["epoch_s"] == pytest.approx(0.32) and rows[1]["copy_s"] == 0.0


def test_gpu_parts_project_with_the_stated_link() -> None:
    # ranks that meet every step wait for each step's slowest: step_max_s >= batch_s
    host = {"batch_s": 0.010, "step_max_s": 0.012, "copy_bytes": 5e7}
    parts = {"host": {"reference": {"1": host, "8": host}, "fused+pinned": {"1": host,
                                                                           "8": host}},
             "rank_batch": {"1": 1024, "8": 1024}, "gradient_bytes": 800_000,
             "gpu": {"device_s": {"1": 0.003, "8": 0.003}, "pcie_bytes_per_s": 50e9,
                     "host_read_bytes_per_s": 100e9}}
    rows = {(r["pipeline"], r["world_size"]): r for r in projections(parts, 8192)}
    eight = rows[("fused+pinned", 8)]
    assert eight["allreduce_s"] == pytest.approx(ring_allreduce_s(800_000, 8, GPU_LINK))
    assert eight["copy_s"] == pytest.approx(5e7 / (100e9 / 8))  # host reads shared by 8
    assert eight["step_s"] == pytest.approx(max(0.010, 5e7 / 12.5e9, 0.003 + eight[
        "allreduce_s"]))  # fused+pinned runs ahead: the slowest rank's mean
    reference = rows[("reference", 8)]
    assert reference["step_s"] == pytest.approx(0.012 + 5e7 / 12.5e9 + 0.003
                                                + eight["allreduce_s"])
    assert rows[("fused+pinned", 1)]["steps"] == 8 and eight["steps"] == 1


def test_rank_batch_is_per_rank_or_split() -> None:
    assert rank_batch_size(1024, 4, True) == 1024
    assert rank_batch_size(1024, 3, False) == 342


def test_parts_of_two_cpu_ranks_at_once(dataset: Dataset) -> None:
    parts = measure_parts(dataset, [1, 2], ["fused", "fused+pinned"], fanouts=[5, 5],
                          batch_size=64, per_rank_batch=False, hidden=16, lr=0.01, seed=0,
                          batches=2, cores=2)
    assert parts["rank_batch"] == {1: 64, 2: 32}
    assert parts["threads_per_rank"] == {1: 2, 2: 1}
    # on CPU ranks fused and fused+pinned do the same host work: measured once for both
    assert parts["host"]["fused"] == parts["host"]["fused+pinned"]
    for pipeline in ("fused", "fused+pinned"):
        for k in (1, 2):
            part = parts["host"][pipeline][k]
            assert part["compute_s"] > 0 and part["copy_bytes"] > 0  # CPU ranks: model too
            assert len(part["ranks_batch_s"]) == k
            assert part["step_max_s"] >= max(part["ranks_batch_s"]) - 1e-12
        assert parts["host"][pipeline][1]["wait_s"] == 0.0  # one rank waits for no one
        # 32 seeds a rank against 64: fewer input rows, fewer bytes
        assert parts["host"][pipeline][2]["copy_bytes"] < parts["host"][pipeline][1][
            "copy_bytes"]
    assert parts["allreduce_s"][1] == 0.0 and parts["allreduce_s"][2] > 0
    rows = projections(parts, dataset.train_idx.numel())
    assert [(r["pipeline"], r["world_size"]) for r in rows] == [
        ("fused", 1), ("fused", 2), ("fused+pinned", 1), ("fused+pinned", 2)]
    assert all(math.isfinite(r["epoch_s"]) and r["epoch_s"] > 0 for r in rows)


def test_gpu_parts_feed_the_projection(dataset: Dataset, monkeypatch) -> None:
    """The CUDA branch's output as projections() reads it, its GPU-only parts stubbed (no
    GPU here; tests/gpu and the GPU session run them): no model step on the host, the
    device's parts per k, one rank batch per k."""
    from gnnrepro.distributed import scaling_parts

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda _=None: "Stub GPU")
    monkeypatch.setattr(scaling_parts, "_device_parts", lambda *_: (0.004, 20e9))
    monkeypatch.setattr(scaling_parts, "_host_read_rate", lambda: 40e9)
    parts = measure_parts(dataset, [1, 2], ["reference", "fused+pinned"], fanouts=[5, 5],
                          batch_size=32, per_rank_batch=True, hidden=16, lr=0.01, seed=0,
                          batches=2, device="cuda", cores=2)
    assert "allreduce_s" not in parts and parts["gpu"]["name"] == "Stub GPU"
    assert parts["gpu"]["device_s"] == {1: 0.004, 2: 0.004}
    for k in (1, 2):
        pinned, reference = parts["host"]["fused+pinned"][k], parts["host"]["reference"][k]
        assert pinned["compute_s"] == 0.0 and reference["compute_s"] == 0.0
        # fused+pinned's host work as its Loader does it on a GPU: worker threads
        assert pinned["workers"] >= 1 and "workers" not in reference
    rows = {(r["pipeline"], r["world_size"]): r
            for r in projections(json.loads(json.dumps(parts)), dataset.train_idx.numel())}
    two = rows[("fused+pinned", 2)]
    assert two["device_s"] == 0.004 and two["bound_by"] in ("host", "copy", "device")
    assert two["copy_s"] == pytest.approx(parts["host"]["fused+pinned"][2]["copy_bytes"]
                                          / min(20e9, 40e9 / 2))
    assert rows[("reference", 2)]["step_s"] > two["step_s"] - 1e-12


def test_bad_parts_settings_are_named(dataset: Dataset) -> None:
    common = dict(fanouts=[5], batch_size=8, per_rank_batch=True, hidden=8, lr=0.01, seed=0)
    with pytest.raises(ValueError, match="pipelines: \\['dgl'\\]"):
        measure_parts(dataset, [1], ["dgl"], **common)
    with pytest.raises(ValueError, match="device must be"):
        measure_parts(dataset, [1], ["fused"], device="tpu", **common)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="needs a GPU"):
            measure_parts(dataset, [1], ["fused"], device="cuda", **common)
    with pytest.raises(ValueError, match="ranks"):
        measure_parts(dataset, [0], ["fused"], **common)
    with pytest.raises(ValueError, match="exceeds the dataset's"):
        measure_parts(dataset, [1], ["fused"], **{**common, "batch_size": 10**6})


def test_stored_projections_become_rows_and_a_figure(tmp_path) -> None:
    """The notebook's panel: a CPU check (projected beside measured, with the error) and a GPU
    session's projection (measured at one GPU only), each row saying which it is."""
    from gnnrepro import plots
    from gnnrepro.experiments import PROJECTION_NOT_MEASURED, projection_label, projection_rows
    from gnnrepro.experiments.gpu_results import GpuSession

    def result(measured_k: tuple[int, ...]) -> dict:
        rows = [{"pipeline": p, "world_size": k, "epoch_s": e * k ** -0.5,
                 "measured_epoch_s": e if k in measured_k else None,
                 "error": (k ** -0.5 - 1) if k in measured_k else None, "bound_by": "sum"}
                for p, e in (("reference", 4.0), ("fused+pinned", 2.0)) for k in (1, 2, 4)]
        return {"rows": rows, "params": {"dataset": "products-sim", "scale": 0.05},
                "env": {"cpu": "test CPU", "cpu_count": 2}}

    cpu = tmp_path / "cpu.json"
    cpu.write_text(json.dumps(result((1, 2, 4))))
    folder = tmp_path / "gpu-x"
    folder.mkdir()
    (folder / "scaling-projection.json").write_text(json.dumps(result((1,))))
    session = GpuSession(folder, {"machine": {"gpu": "Test GPU"}, "commit": "abc1234"})
    rows = projection_rows([session], cpu)
    cpu_rows = rows[rows["source"].str.startswith("CPU ranks, test CPU (2 cores)")]
    gpu_rows = rows[rows["source"].str.startswith("GPUs: Test GPU")]
    assert len(cpu_rows) == 12 and len(gpu_rows) == 8  # per pipeline: 1 GPU measured, 3 projected
    assert gpu_rows.query("kind == 'measured'")["world_size"].tolist() == [1, 1]
    fused = cpu_rows.query("pipeline == 'fused+pinned' and kind == 'measured'")
    assert fused["speedup_vs_reference"].tolist() == pytest.approx([2.0, 2.0, 2.0])
    assert "Test GPU" in projection_label(rows)
    assert plots.projection_lines(rows, PROJECTION_NOT_MEASURED).axes  # two panels
    nothing = projection_rows([], tmp_path / "absent.json")
    assert nothing.empty and projection_label(nothing) == "no stored projection"
    figure = plots.projection_lines(nothing, PROJECTION_NOT_MEASURED)
    assert any(PROJECTION_NOT_MEASURED[:20] in t.get_text() for ax in figure.axes
               for t in ax.texts)
