"""gnnrepro.experiments.gpu_results over more than one machine: a table per machine's session,
ratios within it, and a PyG step that wrote no result shown as not run."""
from __future__ import annotations

import json
from pathlib import Path

from gnnrepro.experiments import gpu_results

FULL_SHA = "4653ae87451b397e944dd3c4634abeef55cb7462"


def write(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def session(folder: Path, gpu: str, commit: str, fused_ms: float, unfused_ms: float,
            steps: dict | None = None, asked: list[str] | None = None) -> None:
    """A stored GPU session in `folder`: its session.json and its placements."""
    write(folder / "session.json", {
        "dry_run": False, "commit": commit, "scale": 1.0, "steps": steps or {},
        "steps_asked": asked or ["tests", "measurements", "pyg"],
        "machine": {"gpu": gpu, "runtime": "firecracker", "torch": "2.11"}})
    write(folder / "placements.json", {
        "samplers": {"fused-cuda": {"ms_per_batch": fused_ms},
                     "unfused-cuda": {"ms_per_batch": unfused_ms}},
        "blocks_equal_cpu": {"fused-cuda": {"equal": 40, "batches": 40}}})


def sections(block: str) -> list[str]:
    """The block cut at each machine's heading line."""
    return ["On **" + part for part in block.split("On **")[1:]]


def test_two_machines_give_two_tables_each_with_its_own_ratios(tmp_path: Path) -> None:
    session(tmp_path / "gpu-a", "GPU A", "abc1234", 1.0, 10.0)
    session(tmp_path / "gpu-b", "GPU B", FULL_SHA, 2.0, 30.0)
    session(tmp_path / "gpu-b" / "run1-0000000", "GPU B", "0000000", 5.0, 5.0)
    sessions = gpu_results.stored_gpu_sessions(tmp_path)
    assert [s.folder.name for s in sessions] == ["gpu-a", "gpu-b"]  # never a run*/ folder
    assert sessions[1].label == "GPU B (firecracker, torch 2.11, 4653ae8)"
    block = gpu_results.readme_block(sessions)
    a, b = sections(block)
    assert a.startswith("On **GPU A (firecracker, torch 2.11, abc1234)**")
    assert b.startswith("On **GPU B (firecracker, torch 2.11, 4653ae8)**")
    assert block.count("| what (one GPU) |") == 2
    assert "**10x**" in a and "gpu-a/placements.json" in a and "gpu-b" not in a
    assert "**15x**" in b and "gpu-b/placements.json" in b and "gpu-a" not in b
    assert "run1-0000000" not in block


def test_the_figures_draw_a_group_of_bars_per_machine(tmp_path: Path) -> None:
    from gnnrepro import plots
    session(tmp_path / "gpu-a", "GPU A", "abc1234", 1.0, 10.0)
    session(tmp_path / "gpu-b", "GPU B", FULL_SHA, 2.0, 30.0)
    sessions = gpu_results.stored_gpu_sessions(tmp_path)
    rows = gpu_results.gpu_sampling(sessions)
    assert rows.groupby("machine")["fused_cuda_speedup"].max().tolist() == [10.0, 15.0]
    fig = plots.gpu_bars(rows[rows["sampler"] != "fused-cuda"], "sampler",
                         "fused_cuda_speedup", "x", "title", "note")
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["GPU A", "GPU B"]
    assert "GPU A" in gpu_results.gpu_label(sessions) and "4653ae8" in \
        gpu_results.gpu_label(sessions)


def test_a_timed_out_pyg_step_is_shown_as_not_run_with_each_calls_status(
        tmp_path: Path) -> None:
    """No own-model-pyg.json: the row says not run, with the status the session and a later
    call at the same commit (its run*/ folder) recorded, their logs, and no number of its own;
    a call at another commit is another session's."""
    folder = tmp_path / "gpu-h200"
    session(folder, "NVIDIA H200", FULL_SHA, 0.5, 14.0,
            steps={"own-model-pyg": {"status": "timed out after 76 s", "ok": False}})
    session(folder / "run2-4653ae8", "NVIDIA H200", FULL_SHA, 0.5, 14.0, asked=["pyg"],
            steps={"own-model-pyg": {"status": "timed out after 240 s", "ok": False}})
    session(folder / "run1-1111111", "NVIDIA H200", "1111111", 0.5, 14.0, asked=["pyg"],
            steps={"own-model-pyg": {"status": "failed (exit 1)", "ok": False}})
    (s,) = gpu_results.stored_gpu_sessions(tmp_path)
    assert [c.folder.name for c in s.later_calls()] == ["run2-4653ae8"]
    (row,) = [line for line in gpu_results.readme_block([s]).splitlines() if "PyG" in line]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1:4] == ["our loader not measured", "PyG's NeighborLoader not measured", "-"]
    assert cells[4].startswith("**not run**: the step in the session timed out after 76 s")
    assert "run again alone (`--steps pyg`, `run2-4653ae8/`) timed out after 240 s" in cells[4]
    assert "gpu-h200/session.log" in cells[4]
    assert "gpu-h200/run2-4653ae8/session.log" in cells[4]
    assert "failed" not in row and "x**" not in row
    # A session from before the PyG step (no such step, no result): no row at all.
    session(tmp_path / "old" / "gpu-x", "GPU X", "abc1234", 1.0, 10.0)
    (old,) = gpu_results.stored_gpu_sessions(tmp_path / "old")
    assert "PyG" not in gpu_results.readme_block([old])
