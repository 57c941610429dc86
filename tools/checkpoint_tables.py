"""docs/checkpoints.md's tables, written from the stored results: the faults survived
(benchmarks/results/checkpoint-faults-cpu.json) and what checkpoints cost at products size
(checkpoint-cost-cpu.json)."""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"

__all__ = ["cost_table", "fault_table"]

_FAULTS = {"step": "SIGKILL after a step", "write": "SIGKILL half-way through writing a "
           "checkpoint", "sigterm": "SIGTERM (a clean stop)"}
_COMMAND = "`benchmarks/checkpoint_faults.py --settings '{setting}'`"


def _measured(env: dict) -> str:
    """Where and when: the machine, the day, the code's source hash (its commit and whether it
    is today's code: docs/results.md)."""
    return (f"{env['cpu']}, {env['cpu_count']} cores, {env['timestamp'][:10]}, source hash "
            f"{env['source_hash']}")


def fault_table() -> str:
    """One row per (setting, kind of fault): runs, outcome, leftovers, the command."""
    path = RESULTS / "checkpoint-faults-cpu.json"
    if not path.exists():
        return "(not measured yet: `benchmarks/checkpoint_faults.py`)"
    report = json.loads(path.read_text())
    rows: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for case in report["cases"]:
        rows[(case["setting"], case["fault"].partition(":")[0])].append(case)
    lines = ["| setting | fault | runs (cut points) | resumed bit-identical | processes, "
             "/dev/shm segments, temporary files left | resumed by | reproduce |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for (setting, kind), cases in rows.items():
        identical = sum(c["identical"] for c in cases)
        left = [sum(len(c["leftovers"][k]) for c in cases)
                for k in ("processes", "shm", "temporary")]
        points = ", ".join(c["fault"].partition(":")[2] for c in cases)
        lines.append(f"| {setting} | {_FAULTS[kind]} | {len(cases)} ({points}) | "
                     f"**{identical} of {len(cases)}** | {left[0]}, {left[1]}, {left[2]} | "
                     f"{cases[0]['resumed_by']} | {_COMMAND.format(setting=setting)} |")
    total = len(report["cases"])
    same = sum(c["identical"] for c in report["cases"])
    lines.append("")
    lines.append(f"In all, {same} of {total} cut runs resumed to the uninterrupted run's "
                 f"weights, losses and accuracies bit for bit "
                 f"([checkpoint-faults-cpu.json](../benchmarks/results/checkpoint-faults-cpu.json),"
                 f" {_measured(report['env'])}).")
    return "\n".join(lines)


def cost_table() -> str:
    """One row per checkpoint interval: checkpoints, seconds each, share of the epoch."""
    path = RESULTS / "checkpoint-cost-cpu.json"
    if not path.exists():
        return "(not measured yet: `benchmarks/checkpoint_cost.py`)"
    report = json.loads(path.read_text())
    lines = ["| checkpoint every | checkpoints in the epoch | seconds each (mean, max) | "
             "their share of the epoch | epoch (wall) | file size |",
             "| --- | --- | --- | --- | --- | --- |"]
    for run in report["runs"]:
        saves = run["save_s"]
        each = (f"{sum(saves) / len(saves):.3f}, {max(saves):.3f}" if saves else "-")
        size = f"{run['checkpoint_bytes'] / 2**20:.1f} MiB" if run["checkpoint_bytes"] else "-"
        every = {"off": "never", "epoch": "epoch's end"}.get(run["every"],
                                                             f"{run['every']} steps")
        lines.append(f"| {every} | {run['checkpoints']} | {each} | "
                     f"**{run['share_of_epoch']:.2%}** | {run['epoch_s']:.1f} s | {size} |")
    resume = report["resume"]
    params = report["params"]
    same = len({(run["loss"], run["test_acc"]) for run in report["runs"]}) == 1
    lines.append("")
    lines.append("The epoch's loss and the test accuracy are " + (
        "the same to the last bit in every row: checkpoints change nothing the run computes."
        if same else "not the same in every row (see the JSON)."))
    lines.append(f"products-sim {params['dataset_params'].get('scale')}, {params['pipeline']}, "
                 f"batch {params['batch_size']} ({report['steps_per_epoch']} steps an epoch), "
                 f"{params['threads']} threads; resuming from the last checkpoint took "
                 f"{resume['restore_s']:.3f} s (read, check, load). "
                 f"[checkpoint-cost-cpu.json](../benchmarks/results/checkpoint-cost-cpu.json), "
                 f"{_measured(report['env'])}.")
    return "\n".join(lines)
