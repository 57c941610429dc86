"""docs/results.md's table: every stored result, the commit it was measured at (read from it),
its command, where its numbers are shown, and for a result measured by older code than the
current (its `env.source_hash` is not today's) that it was, and where known why it was not
measured again.

Numbers are not repeated here: the README's headline table and the docs pages named in each row
are written from the same JSONs. A result without an entry in RESULTS is an error
(tools/generated_blocks.py --check, which a test runs), so a new result cannot go unlisted;
whether today's code measured it is read from the result itself, never typed, so a code change
shows at once as "no" on every result it outdates.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = ROOT / "benchmarks" / "results"
sys.path.insert(0, str(ROOT))

from gnnrepro.env import source_hash  # noqa: E402

__all__ = ["changes_list", "results_table"]

PEERS = "[the peers](peers.md#measured)"
#: Result (a JSON, or a GPU session's folder) -> (command, where its numbers are shown).
RESULTS: dict[str, tuple[str, str]] = {
    "sampling-cpu.json": ("`make bench-sampling`", "README, headline table"),
    "sampling-cpu-products.json": (
        "`bench sampling --scale 1.0 --fanouts 15,10,5 --batch-size 1024 --batches 50 "
        "--threads 2`", "README, headline table"),
    "loader-cpu.json": ("`bench loader --scale 0.05 --threads 2`", "README, headline table"),
    "loader-cpu-products.json": ("`bench loader --scale 1.0 --threads 2`",
                                 "README, headline table"),
    "train-cpu.json": ("`make bench-end-to-end`", "README, headline table; figures 01, 03"),
    "train-cpu-products.json": (
        "`bench end-to-end --scale 1.0 --pipelines dgl,fused+pinned --epochs 2 --repeats 2 "
        "--threads 2`", "[figures](figures.md)"),
    "scaling-cpu.json": ("the `bench scaling` command in [data-parallel](data-parallel.md)",
                         "README, headline table"),
    "scaling-cpu-products.json": (
        "`bench scaling --scale 1.0 --ranks 1,2 --pipelines dgl,fused+pinned --epochs 2`",
        "README, headline table"),
    "partitioned-cpu-10ep.json": ("the `bench partitioned` command in "
                                  "[partitioned](partitioned.md)", "README, headline table"),
    "partitioned-cpu-products.json": (
        "`bench partitioned --scale 1.0 --machines 1,2 --epochs 2 --batch-size 1024 "
        "--threads 1`", "[partitioned](partitioned.md)"),
    "peers-sampling-cpu.json": (f"command [1] of {PEERS} at 0.25", "README, headline table"),
    "peers-sampling-cpu-products.json": (f"command [1] of {PEERS} at 1.0",
                                         "README, headline table"),
    "peers-loader-cpu.json": (f"command [2] of {PEERS} at the default scale", PEERS),
    "peers-loader-cpu-products.json": (f"command [2] of {PEERS} at 1.0", PEERS),
    "peers-train-cpu.json": (f"command [3] of {PEERS} at the default scale",
                             "README, headline table"),
    "peers-train-cpu-products.json": (f"command [3] of {PEERS} at 1.0",
                                      "README, headline table"),
    "locality-order-cpu.json": ("`benchmarks/locality_order.py --scale 1.0`",
                                "benchmarks/NOTES.md, issue 22 part 2"),
    "locality-order-sbm-cpu.json": ("`benchmarks/locality_order.py --graph sbm --orders rcm`",
                                    "benchmarks/NOTES.md, issue 22 part 2"),
    "storage-cpu.json": ("the `bench storage` command in [storage](storage.md)",
                         "README, headline table"),
    "sampling-cpu-papers.json": (
        "`bench sampling --dataset papers-sim --scale 1.0 --fanouts 15,10,5 --batch-size 1024 "
        "--batches 50 --repeats 4 --threads 2 --samplers dgl-unfused,dgl-fused,fused "
        "--ceiling` (after papers-sim 1.0 is built: 65 GB of disk)", "README, headline table"),
    "disk-training-cpu-papers.json": (
        "`bench disk-training --dataset papers-sim --scale 1.0 --fanouts 15,10,5 "
        "--train-batches 600 --eval-ids 8192 --baseline-seconds 120 --threads 2 "
        "--checkpoint-dir DIR --checkpoint-every 50`, killed mid-run (`GNNREPRO_FAULT=step:320`) "
        "and run again with `--resume` (after papers-sim 1.0 is built: 65 GB of disk)",
        "README, headline table"),
    "disk-same-as-memory-cpu-papers.json": (
        "`bench disk-training --dataset papers-sim --scale 0.01 --fanouts 15,10,5 "
        "--same-as-memory 3 --target-acc 0.4 --threads 2`", "[storage](storage.md)"),
    "disk-training-cpu-igb.json": ("`bench disk-training` (after igb-sim 1.0 is built: "
                                   "42 GB of disk)", "README, headline table"),
    "disk-same-as-memory-cpu.json": ("`bench disk-training --scale 0.01 --same-as-memory 3 "
                                     "--threads 2`", "[storage](storage.md)"),
    "eval-methods-cpu.json": ("`benchmarks/eval_methods.py --scale 1.0`",
                              "[library](library.md), evaluation"),
    "own-model-dgl-cpu.json": (
        "`bench end-to-end --scale 0.05 --pipelines dgl-native,fused+pinned --model dgl-sage "
        "--epochs 3 --repeats 2 --threads 2 --target-acc 0.6`", "[own-loop](own-loop.md)"),
    "own-model-dgl-cpu-products.json": (
        "`bench end-to-end --scale 1.0 --pipelines dgl-native,fused+pinned --model dgl-sage "
        "--epochs 2 --threads 2`", "[own-loop](own-loop.md)"),
    "checkpoint-faults-cpu.json": ("`benchmarks/checkpoint_faults.py`",
                                   "[checkpoints](checkpoints.md#faults-survived)"),
    "checkpoint-cost-cpu.json": ("`benchmarks/checkpoint_cost.py`",
                                 "[checkpoints](checkpoints.md#what-they-cost)"),
    "own-model-pyg-cpu.json": (
        "`bench end-to-end --scale 0.05 --pipelines fused+pinned --model pyg-sage --peers pyg "
        "--epochs 3 --repeats 2 --threads 2 --target-acc 0.6` (after `make peers`)",
        "[own-loop](own-loop.md)"),
    "gpu-h100": ("`python3 benchmarks/gpu_session.py --out $OUT --commit <sha> --deadline-s "
                 "520 --reuse-build` on a lent H100 (`run1-20ceee2/`: the first run, before its "
                 "mends; `run2-126acd1/`: the second; `run3-0ed3096/`: the third, whose fused@gpu "
                 "rung failed in layer-wise evaluation, mended in 6f73370; `run4-6f73370/`: the "
                 "fourth; `run5-e82e6bd/`: the fifth, cut short by a torch-sparse build beside "
                 "it; `run7-ec8cd93/`: `--steps pyg` after this run's PyG peer failed, cut off "
                 "by the loan's end)",
                 "README, On a GPU; notebooks 02 and 03"),
}

#: The code changes after the older results' sources, oldest first: name -> what changed and
#: why it leaves a result's path as it was. A row names those after its source (its links).
CHANGES: dict[str, str] = {
    "loop": ("the training loop calls the model through interop.model_logits (the same call "
             "for our model), the CPU gather raises after its parallel region instead of "
             "inside it, and shared memory goes through share_memory_in_place (the same "
             "share_memory_() where nothing is pinned)"),
    "checkpoints": ("after d19ddec, checkpoints (issue 34): without them the epochs run the "
                    "same train_epoch with one more `if` a step, and a Loader not told to "
                    "start_at yields every batch as before"),
    "peer-pipe": "a peer's replies are read from its pipe into our own line buffer",
    "house": ("after 3c31191 the code was split into smaller modules without changing "
              "behaviour (issue 36: config, plots, the command line, the storage benches; every "
              "moved function byte-identical, `--help` identical), igb-sim's build moved into a "
              "module shared with papers-sim (bit-identical arrays, tested), and PyG's `adj_t` "
              "layout came in (only `--model pyg-sage` uses it)"),
    "nov27": ("from 212b85e on (2026-11-27): `bench sampling --ceiling` (a probe and a second, "
              "timed pass of the sampler, run only when asked), the CPU sampler's prefetch "
              "distances moved into a header (the same constants), papers-sim in `bench "
              "disk-training` and notebook 08, an end-to-end result's added `steady_epochs_s` "
              "list and the figures' drawing: none on a measured result's path"),
    "later": ("then, up to e82e6bd's source: bench storage's page-cache counts and its parent "
              "dropping its dataset, bench disk-training's checkpoints, a resumed epoch's "
              "progress line (the loop passes the resumed step to it), peers training on the "
              "run's device (the CPU's unchanged) and layer-wise evaluation taking its targets "
              "to the graph's device itself (a no-op on the CPU): none changing a measured "
              "result's path"),
    "after-656edc0": ("after 656edc0, up to e82e6bd's source: bench storage's count of each "
                      "file's cached pages and its parent dropping its dataset before the "
                      "stores run, a resumed epoch's progress line, peers training on the run's "
                      "device (the CPU's unchanged), the GPU session's PyG step and README row, "
                      "layer-wise evaluation taking its targets to the graph's device itself (a "
                      "no-op on the CPU), bench disk-training's step times and checkpoint fields "
                      "read through functions (no step time claimed for a run resumed at its "
                      "last step; the same fields otherwise, tested), and tools: none changing "
                      "this result's numbers"),
    "notebook-layer": ("after e82e6bd's source, only the notebooks' layer (gnnrepro/experiments/ "
                       "and gnnrepro/plots/, on no bench's path): `make figures REDRAW=1` (the "
                       "store drawing from an older result of the same parameters when asked), "
                       "the figures' corner label (with, on the CPU, a note that fused+pinned "
                       "pins nothing) and a speedup panel's choice of a log axis"),
    "pyg-on-gpu": ("after d130e1e's source (c5b6f9a's is the same): the PyG peer on a GPU "
                   "(its batches' adj_t as torch's sparse CSR where torch-sparse has no CUDA ops, "
                   "as our PyG view hands it; x and y on the GPU and NeighborLoader's workers, "
                   "as PyG's OGB example; the CPU's path unchanged), the GPU results' README row saying that a PyG peer did not "
                   "run and 05_sensitivity resolving workers left to the machine before its "
                   "sweep (the last two in gnnrepro/experiments/, on no bench's path)"),
}
SINCE_E82E6BD = ["notebook-layer", "pyg-on-gpu"]
SINCE_D19DDEC = ["checkpoints", "house", "nov27", "later", *SINCE_E82E6BD]
SINCE_LOOP = ["loop", *SINCE_D19DDEC]
#: Why the results of an older source (env.source_hash) are not today's, by source:
#: (what, the CHANGES after it).
SOURCE_REASONS: dict[str, tuple[str, list[str]]] = {
    "eff014bd86b806fa": ("measured by e82e6bd's source", SINCE_E82E6BD),
    "7a11c2ed93f3d747": ("measured by d130e1e's source (c5b6f9a's is the same)",
                         ["pyg-on-gpu"]),
}
#: Why a result measured by older code was not measured again, by result: (what, CHANGES).
STALE_REASONS: dict[str, tuple[str, list[str]]] = {
    "partitioned-cpu-products.json": (
        "19 minutes, and DistDGL's 2 machines are stopped by its partitioner (19 GB at its "
        "METIS step) each time; ours was re-run at this size at 6a10dd2 with the same test "
        "accuracies (benchmarks/NOTES.md)", SINCE_LOOP),
    "disk-training-cpu-papers.json": (
        "40 minutes and 65 GB of disk; measured at 656edc0", ["after-656edc0", *SINCE_E82E6BD]),
    "disk-training-cpu-igb.json": (
        "21 minutes and 42 GB of disk; the disk store itself is unchanged, and "
        "`tests/test_disk_store.py` checks on every run that the memory and disk stores train "
        "bit-identical weights", SINCE_LOOP),
}
PEERS_REASON = ("not run again for time: at products size each peer's run takes tens of "
                "minutes on 2 cores; our side of it was measured again in the matching rows "
                "above", ["loop", "peer-pipe", *SINCE_D19DDEC])


def _reason(what: str, changes: list[str]) -> str:
    """`what`, then links to the CHANGES after the result's source."""
    return f"{what}; code changes since: " + ", ".join(f"[{c}](#{c})" for c in changes)


def changes_list(named: set[str]) -> str:
    """The CHANGES that rows link to, each with its anchor, in order."""
    return "\n".join(f'- <a id="{name}"></a>**{name}**: {text}.'
                     for name, text in CHANGES.items() if name in named)


def _measured_at(name: str) -> tuple[str, str | None]:
    """(the commit the result names, the source hash of the code that measured it)."""
    path = RESULTS_DIR / name
    if path.is_dir():
        session = json.loads((path / "session.json").read_text())
        env = json.loads((path / "placements.json").read_text())["env"]
        return str(session.get("commit") or "?"), env.get("source_hash")
    env = json.loads(path.read_text())["env"]
    commit = env.get("git_commit") or "?"
    dirty = env.get("git_dirty_files") or []
    code = [f for f in dirty if f.startswith(("gnnrepro/", "csrc/"))]
    short = commit[:7] + (f" + {len(code)} uncommitted code files (its source hash says whose)"
                          if code else "")
    return short, env.get("source_hash")


def stored() -> list[str]:
    """Every stored result: the JSONs, and the GPU sessions' folders."""
    return sorted([p.name for p in RESULTS_DIR.glob("*.json")]
                  + [p.parent.name for p in RESULTS_DIR.glob("*/session.json")])


def results_table() -> str:
    """The table, one row per entry of RESULTS; ValueError if a stored result has none."""
    unlisted = [name for name in stored() if name not in RESULTS]
    if unlisted:
        raise ValueError(f"results without an entry in tools/results_page.py: {unlisted}")
    lines = ["| result | measured at | by today's code | command | its numbers |",
             "| --- | --- | --- | --- | --- |"]
    linked: set[str] = set()
    for name, (command, shown) in RESULTS.items():
        commit, measured_by = _measured_at(name)
        current = measured_by == source_hash()
        if current and "uncommitted code" in commit:
            why = ("yes: the same code (its source hash is today's), measured before that code "
                   "was committed")
        elif current:
            why = "yes"
        else:
            reason = (SOURCE_REASONS.get(measured_by or "") or STALE_REASONS.get(name)
                      or (PEERS_REASON if name.startswith("peers-") else None))
            if reason is None:
                why = "no: not measured again since (what changed: benchmarks/NOTES.md)"
            else:
                why = "no: " + _reason(*reason)
                linked.update(reason[1])
        lines.append(f"| `{name}` | {commit} | {why} | {command} | {shown} |")
    if linked:
        lines += ["", "The code changes the rows link to, oldest first:", "",
                  changes_list(linked)]
    return "\n".join(lines)
