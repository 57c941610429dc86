"""Write (or check) the blocks of the docs that are generated from stored results, never typed.

A block sits between `<!-- generated:NAME -->` and `<!-- /generated:NAME -->` in a page; its
text comes from BLOCKS[NAME], a function of the stored JSONs.

    python tools/generated_blocks.py          # record new results' code paths (code_paths.py),
                                              # then rewrite every block in place
    python tools/generated_blocks.py --check  # exit 1 naming each stale block
"""
from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
ROOT = TOOLS.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(TOOLS))  # headline.py beside this file, also when a test loads it by path

import json  # noqa: E402

from gnnrepro.experiments import gpu_results  # noqa: E402
from checkpoint_tables import cost_table, fault_table  # noqa: E402
from code_paths import record  # noqa: E402
from figures_page import figures_block, measuring_time  # noqa: E402
from headline import headline_table  # noqa: E402
from peers_table import peers_table  # noqa: E402
from results_page import result_entries, results_table  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"


def model_share(pipeline: dict) -> float:
    """Forward and backward work over the epoch: what no loader can take away."""
    stages = pipeline["stages"]
    return (stages["forward"]["work_s"] + stages["backward"]["work_s"]) / pipeline["epoch_s"]


def loader_work(pipeline: dict) -> float:
    """Seconds of sampling and extraction work per epoch, wherever they ran."""
    stages = pipeline["stages"]
    return stages["sample"]["work_s"] + stages["extract"]["work_s"]


def own_model_block() -> str:
    """docs/own-loop.md's measurements: a peer's own model on the peer's loader and on ours."""
    lines = ["| what (2-core CPU VM) | their loader | ours | ours faster | the model's share of "
             "their epoch (the most a loader can gain) | their / our loader's work per epoch | "
             "accuracy (test), theirs / ours | result |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name in ("own-model-dgl-cpu", "own-model-dgl-cpu-products"):
        path = RESULTS / f"{name}.json"
        if not path.exists():
            continue
        r = json.loads(path.read_text())
        theirs, ours = r["pipelines"]["dgl-native"], r["pipelines"]["fused+pinned"]
        lines.append(
            f"| DGL's example model (SAGEConv), products-sim {r['params']['scale']}, "
            f"{len(ours['epochs_s']) // r['params']['repeats']} epochs x "
            f"{r['params']['repeats']} rounds | DGL's DataLoader {theirs['epoch_s']:.3g} s "
            f"| {ours['epoch_s']:.3g} s | **{theirs['epoch_s'] / ours['epoch_s']:.3g}x** | "
            f"{model_share(theirs):.0%} ({1 / model_share(theirs):.3g}x) | "
            f"{loader_work(theirs):.3g} s / {loader_work(ours):.3g} s | "
            f"{theirs['test_acc']:.3f} / {ours['test_acc']:.3f} "
            f"({_methods(theirs, ours)}) | [{name}](../benchmarks/results/{name}.json) |")
    pyg = RESULTS / "own-model-pyg-cpu.json"
    if pyg.exists():
        lines.append(_pyg_row(json.loads(pyg.read_text())))
    return "\n".join(lines)


def _methods(*pipelines: dict) -> str:
    """How the test split was evaluated, for both sides (one word where they agree)."""
    methods = {p.get("eval_methods", {}).get("test", "?") for p in pipelines}
    return "/".join(sorted(methods)).replace("layerwise", "layer-wise")


def own_model_eval_block() -> str:
    """docs/own-loop.md: a caller's model evaluated layer-wise through its forward_layer,
    against sampled mini-batches, at products size (benchmarks/eval_methods.py)."""
    path = RESULTS / "eval-methods-dgl-cpu.json"
    if not path.exists():
        return "(not measured yet: `benchmarks/eval_methods.py --architecture dgl-sage`)"
    r = json.loads(path.read_text())
    rows = r["evaluations"]
    lines = [f"{r['params']['model']} trained {r['params']['epochs']} epoch(s) on our loader, "
             f"products-sim {r['params']['scale']}, {r['params']['threads']} threads (an epoch "
             f"{min(r['epoch_s']):.3g} s), then evaluated both ways "
             f"([eval-methods-dgl-cpu](../benchmarks/results/eval-methods-dgl-cpu.json)):", "",
             "| split | ids | layer-wise: accuracy, time | sampled (training fanouts): "
             "accuracy, time |", "| --- | ---: | --- | --- |"]
    for split in ("val", "test"):
        lw, sm = rows[f"{split}/layerwise"], rows[f"{split}/sampled"]
        lines.append(f"| {split} | {lw['ids']:,} | {lw['accuracy']:.4f}, {lw['seconds']:.3g} s "
                     f"| {sm['accuracy']:.4f}, {sm['seconds']:.3g} s |")
    return "\n".join(lines)


def _pyg_loader_alone(r: dict) -> float | None:
    """Seconds an epoch of the pyg peer's NeighborLoader alone (no model) takes, from
    peers-loader-cpu.json where it ran the same dataset, scale, fanouts and batch size."""
    path = RESULTS / "peers-loader-cpu.json"
    if not path.exists():
        return None
    alone = json.loads(path.read_text())
    same = all(alone["params"].get(k) == r["params"].get(k)
               for k in ("dataset", "scale", "fanouts", "batch_size"))
    return alone["pipelines"]["pyg"]["epoch_s"] if same and "pyg" in alone["pipelines"] else None


def _pyg_row(r: dict) -> str:
    """PyG's SAGEConv on PyG's NeighborLoader (the pyg peer, its own process and environment)
    and on ours: the peer reports no stage breakdown, so its loader's share is read from its
    loader alone (the peers' loader benchmark) where that ran the same batches."""
    theirs, ours = r["peers"]["pyg"], r["pipelines"]["fused+pinned"]
    alone = _pyg_loader_alone(r)
    share = ("not reported by the peer" if alone is None else
             f"{1 - alone / theirs['epoch_s']:.0%} ({theirs['epoch_s'] / (theirs['epoch_s'] - alone):.3g}x),"
             f" its loader alone taking {alone:.3g} s ([peers-loader-cpu](../benchmarks/results/"
             f"peers-loader-cpu.json))")
    return (f"| PyG's SAGEConv (the same PyGSAGE, on `adj_t` in both), products-sim "
            f"{r['params']['scale']}, "
            f"{len(ours['epochs_s']) // r['params']['repeats']} epochs x "
            f"{r['params']['repeats']} rounds | PyG's NeighborLoader {theirs['epoch_s']:.3g} s "
            f"| {ours['epoch_s']:.3g} s | **{theirs['epoch_s'] / ours['epoch_s']:.3g}x** | "
            f"{share} | {'-' if alone is None else f'{alone:.3g} s (alone)'} / "
            f"{loader_work(ours):.3g} s | validation {theirs['val_acc']:.3f} / "
            f"{ours['val_acc']:.3f} | [own-model-pyg-cpu](../benchmarks/results/"
            f"own-model-pyg-cpu.json) |")


#: Block name -> (page, generator of its text).
BLOCKS: dict[str, tuple[Path, Callable[[], str]]] = {
    "headline": (ROOT / "README.md", headline_table),
    "gpu-results": (ROOT / "README.md",
                    lambda: gpu_results.readme_block(gpu_results.stored_gpu_sessions())),
    "own-model": (ROOT / "docs" / "own-loop.md", own_model_block),
    "own-model-eval": (ROOT / "docs" / "own-loop.md", own_model_eval_block),
    "results": (ROOT / "docs" / "results.md", results_table),
    "checkpoint-faults": (ROOT / "docs" / "checkpoints.md", fault_table),
    "checkpoint-cost": (ROOT / "docs" / "checkpoints.md", cost_table),
    "figures": (ROOT / "docs" / "figures.md", figures_block),
    "figures-time": (ROOT / "README.md",
                     lambda: f"Measuring the committed default figures (`figures/`) took "
                             f"{measuring_time()}."),
    "peers": (ROOT / "docs" / "peers.md", peers_table),
}


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- generated:{re.escape(name)} -->\n)(.*?)(<!-- /generated:"
                      rf"{re.escape(name)} -->)", re.S)


def stale_blocks() -> list[str]:
    """Names of the blocks whose page text differs from what their generator writes now, or
    whose markers are missing."""
    stale = []
    for name, (page, generate) in BLOCKS.items():
        found = _pattern(name).search(page.read_text())
        if found is None or found.group(2) != generate().rstrip("\n") + "\n":
            stale.append(name)
    return stale


def write_blocks() -> None:
    for name, (page, generate) in BLOCKS.items():
        text = page.read_text()
        if _pattern(name).search(text) is None:
            raise SystemExit(f"{page}: no markers for block {name!r}")
        body = generate().rstrip("\n") + "\n"
        page.write_text(_pattern(name).sub(lambda m: m.group(1) + body + m.group(3), text))


def main(argv: list[str]) -> int:
    if argv[1:] == ["--check"]:
        stale = stale_blocks()
        for name in stale:
            print(f"stale generated block {name!r}: run python tools/generated_blocks.py")
        return 1 if stale else 0
    for name in record(result_entries()):
        print(f"recorded the code path of {name}")
    write_blocks()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
