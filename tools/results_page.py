"""docs/results.md's table: every stored result, the commit it was measured at (read from it),
its command, where its numbers are shown, and for a result measured by older code than the
current (its `env.source_hash` is not today's) that it was, and where known why it was not
measured again.

Numbers are not repeated here: the README's headline table and the docs pages named in each row
are written from the same JSONs. A result without an entry in RESULTS is an error
(tools/generated_blocks.py --check, which a test runs), so a new result cannot go unlisted.
Whether today's code measured it is never typed: it is read from the result's source hash and,
where that is older, from the files on the result's code path (tools/code_paths.py), so a code
change shows at once as "no" on every result whose path it touches, naming the files.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(ROOT / "tools"))

from gnnrepro.env import source_hash  # noqa: E402
from code_paths import (EVERY_FILE, RESULTS_DIR, changed_on_path, load_record,  # noqa: E402
                        result_source, unrecorded)

__all__ = ["result_entries", "results_table"]

PEERS = "[the peers](peers.md#measured)"
CLI = "gnnrepro/__main__.py"


def bench(module: str) -> list[str]:
    """The entries of a `python -m gnnrepro bench` command: the command line and its module."""
    return [CLI, f"gnnrepro/bench/{module}.py"]


def script(name: str) -> list[str]:
    """The entry of a script under benchmarks/."""
    return [f"benchmarks/{name}.py"]


SAMPLING, LOADER, END_TO_END = bench("sampling_speed"), bench("loader"), bench("end_to_end")
TYPED_SAMPLING = bench("typed_sampling")
TYPED_DISK = bench("typed_disk")
WEIGHTED_SAMPLING = bench("weighted_sampling")
TEMPORAL_SAMPLING = bench("temporal_sampling")
LINK_PREDICTION = bench("link_prediction")
SCALING, PARTITIONED, STORAGE = bench("scaling"), bench("partitioned"), bench("storage")
DISK_TRAINING, LOCALITY = bench("disk_training"), script("locality_order")
#: Result (a JSON, or a GPU session's folder) -> (command, where its numbers are shown, the
#: entries of the code it ran: tools/code_paths.py).
RESULTS: dict[str, tuple[str, str, list[str]]] = {
    "sampling-cpu.json": ("`make bench-sampling`", "README, headline table", SAMPLING),
    "sampling-cpu-products.json": (
        "`bench sampling --scale 1.0 --fanouts 15,10,5 --batch-size 1024 --batches 50 "
        "--threads 2`", "README, headline table", SAMPLING),
    "loader-cpu.json": ("`bench loader --scale 0.05 --threads 2`", "README, headline table",
                        LOADER),
    "loader-cpu-products.json": ("`bench loader --scale 1.0 --threads 2`",
                                 "README, headline table", LOADER),
    "train-cpu.json": ("`make bench-end-to-end`", "README, headline table; figures 01, 03",
                       END_TO_END),
    "train-cpu-products.json": (
        "`bench end-to-end --scale 1.0 --pipelines dgl,fused+pinned --epochs 2 --repeats 2 "
        "--threads 2`", "[figures](figures.md)", END_TO_END),
    "scaling-cpu.json": ("the `bench scaling` command in [data-parallel](data-parallel.md)",
                         "README, headline table", SCALING),
    "scaling-cpu-products.json": (
        "`bench scaling --scale 1.0 --ranks 1,2 --pipelines dgl,fused+pinned --epochs 2`",
        "README, headline table", SCALING),
    "scaling-projection-cpu.json": (
        "`benchmarks/scaling_projection.py --out DIR --scale 0.05 --ranks 1,2,4 --pipelines "
        "reference,fused+pinned --batches 10 --validate --epochs 2`",
        "[data-parallel](data-parallel.md#k-ranks-projected-from-measured-parts); figure "
        "04_scaling_projection", script("scaling_projection")),
    "partitioned-cpu-10ep.json": ("the `bench partitioned` command in "
                                  "[partitioned](partitioned.md)", "README, headline table",
                                  PARTITIONED),
    "partitioned-cpu-products.json": (
        "`bench partitioned --scale 1.0 --machines 1,2 --epochs 2 --batch-size 1024 "
        "--threads 1`", "[partitioned](partitioned.md)", PARTITIONED),
    "peers-sampling-cpu.json": (f"command [1] of {PEERS} at 0.25", "README, headline table",
                                SAMPLING),
    "peers-sampling-cpu-products.json": (f"command [1] of {PEERS} at 1.0",
                                         "README, headline table", SAMPLING),
    "peers-loader-cpu.json": (f"command [2] of {PEERS} at the default scale", PEERS, LOADER),
    "peers-loader-cpu-products.json": (f"command [2] of {PEERS} at 1.0", PEERS, LOADER),
    "peers-train-cpu.json": (f"command [3] of {PEERS} at the default scale",
                             "README, headline table", END_TO_END),
    "peers-train-cpu-products.json": (f"command [3] of {PEERS} at 1.0",
                                      "README, headline table", END_TO_END),
    "locality-order-cpu.json": ("`benchmarks/locality_order.py --scale 1.0`",
                                "benchmarks/NOTES.md, issue 22 part 2", LOCALITY),
    "locality-order-sbm-cpu.json": ("`benchmarks/locality_order.py --graph sbm --orders rcm`",
                                    "benchmarks/NOTES.md, issue 22 part 2", LOCALITY),
    "storage-cpu.json": ("the `bench storage` command in [storage](storage.md)",
                         "README, headline table", STORAGE),
    "sampling-cpu-papers.json": (
        "`bench sampling --dataset papers-sim --scale 1.0 --fanouts 15,10,5 --batch-size 1024 "
        "--batches 50 --repeats 4 --threads 2 --samplers dgl-unfused,dgl-fused,fused "
        "--ceiling` (after papers-sim 1.0 is built: 65 GB of disk)", "README, headline table",
        SAMPLING),
    "disk-training-cpu-papers.json": (
        "`bench disk-training --dataset papers-sim --scale 1.0 --fanouts 15,10,5 "
        "--train-batches 600 --eval-ids 8192 --baseline-seconds 120 --threads 2 "
        "--checkpoint-dir DIR --checkpoint-every 50`, killed mid-run (`GNNREPRO_FAULT=step:320`) "
        "and run again with `--resume` (after papers-sim 1.0 is built: 65 GB of disk)",
        "README, headline table", DISK_TRAINING),
    "disk-same-as-memory-cpu-papers.json": (
        "`bench disk-training --dataset papers-sim --scale 0.01 --fanouts 15,10,5 "
        "--same-as-memory 3 --target-acc 0.4 --threads 2`", "[storage](storage.md)",
        DISK_TRAINING),
    "disk-training-cpu-igb.json": ("`bench disk-training` (after igb-sim 1.0 is built: "
                                   "42 GB of disk)", "README, headline table", DISK_TRAINING),
    "disk-same-as-memory-cpu.json": ("`bench disk-training --scale 0.01 --same-as-memory 3 "
                                     "--threads 2`", "[storage](storage.md)", DISK_TRAINING),
    "eval-methods-cpu.json": ("`benchmarks/eval_methods.py --scale 1.0`",
                              "[library](library.md), evaluation", script("eval_methods")),
    "eval-methods-dgl-cpu.json": ("`benchmarks/eval_methods.py --scale 1.0 --architecture "
                                  "dgl-sage`", "[own-loop](own-loop.md), evaluation",
                                  script("eval_methods")),
    "own-model-dgl-cpu.json": (
        "`bench end-to-end --scale 0.05 --pipelines dgl-native,fused+pinned --model dgl-sage "
        "--epochs 3 --repeats 2 --threads 2 --target-acc 0.6`", "[own-loop](own-loop.md)",
        END_TO_END),
    "own-model-dgl-cpu-products.json": (
        "`bench end-to-end --scale 1.0 --pipelines dgl-native,fused+pinned --model dgl-sage "
        "--epochs 2 --threads 2`", "[own-loop](own-loop.md)", END_TO_END),
    "checkpoint-faults-cpu.json": ("`benchmarks/checkpoint_faults.py`",
                                   "[checkpoints](checkpoints.md#faults-survived)",
                                   script("checkpoint_faults")),
    "checkpoint-cost-cpu.json": ("`benchmarks/checkpoint_cost.py`",
                                 "[checkpoints](checkpoints.md#what-they-cost)",
                                 script("checkpoint_cost")),
    "own-model-pyg-cpu.json": (
        "`bench end-to-end --scale 0.05 --pipelines fused+pinned --model pyg-sage --peers pyg "
        "--epochs 3 --repeats 2 --threads 2 --target-acc 0.6` (after `make peers`)",
        "[own-loop](own-loop.md)", END_TO_END),
    "typed-sampling-cpu-mag.json": (
        "`bench typed-sampling --dataset mag-sim --scale 1.0 --fanouts 25,20 --batch-size 1024 "
        "--batches 30 --repeats 4 --threads 2`", "README, headline table; "
        "[heterogeneous](heterogeneous.md)", TYPED_SAMPLING),
    "typed-sampling-cpu-mag-mlperf.json": (
        "`bench typed-sampling --dataset mag-sim --scale 1.0 --fanouts 5,10,15 --batch-size 1024 "
        "--batches 30 --repeats 4 --threads 2`", "README, headline table; "
        "[heterogeneous](heterogeneous.md)", TYPED_SAMPLING),
    "typed-sampling-cpu-igbh.json": (
        "`bench typed-sampling --dataset igbh-sim --scale 1.0 --fanouts 25,20 --batch-size 1024 "
        "--batches 30 --repeats 4 --threads 2`", "README, headline table; "
        "[heterogeneous](heterogeneous.md)", TYPED_SAMPLING),
    "typed-sampling-cpu-igbh-mlperf.json": (
        "`bench typed-sampling --dataset igbh-sim --scale 1.0 --fanouts 5,10,15 --batch-size "
        "1024 --batches 30 --repeats 4 --threads 2`", "README, headline table; "
        "[heterogeneous](heterogeneous.md)", TYPED_SAMPLING),
    "typed-disk-cpu-igbh.json": (
        "`bench typed-disk --dataset igbh-sim --scale 1.0` (R-GCN, disk store 40 steps, mmap 6)",
        "README, headline table; [heterogeneous](heterogeneous.md)", TYPED_DISK),
    "typed-disk-cpu-igbh-mlperf.json": (
        "`bench typed-disk --dataset igbh-sim --scale 0.02 --model rgat-mlperf --stores disk "
        "--steps 3 --eval-ids 256` (at 1.0 its step was killed for memory on this 23 GB VM)",
        "[heterogeneous](heterogeneous.md)", TYPED_DISK),
    "weighted-sampling-cpu-products.json": (
        "`bench weighted-sampling --dataset products-sim --scale 1.0 --fanouts 15,10,5 "
        "--batch-size 1024 --batches 20 --repeats 4 --threads 2`", "README, headline table; "
        "[weighted](weighted.md)", WEIGHTED_SAMPLING),
    "temporal-sampling-cpu-products.json": (
        "`bench temporal-sampling --dataset products-sim --scale 1.0 --fanouts 15,10,5 "
        "--batch-size 1024 --batches 20 --repeats 4 --threads 2`", "README, headline table; "
        "[temporal](temporal.md)", TEMPORAL_SAMPLING),
    "link-prediction-cpu-citation.json": (
        "`bench link-prediction --dataset citation-sim --scale 0.05 --fanouts 15,10 "
        "--batch-size 1024 --hidden 64 --lr 0.01 --steps 300 --seeds 3 --threads 2`",
        "README, headline table; [link prediction](link_prediction.md)", LINK_PREDICTION),
    "link-prediction-cpu-mag.json": (
        "`bench link-prediction --dataset mag-sim --scale 0.25 --relation cites --fanouts 15,10 "
        "--batch-size 1024 --hidden 64 --lr 0.01 --steps 100 --seeds 3 --threads 2 "
        "--eval-method sampled`",
        "README, headline table; [link prediction](link_prediction.md)", LINK_PREDICTION),
    "link-prediction-cpu-citation-full.json": (
        "`bench link-prediction --dataset citation-sim --scale 1.0 --fanouts 15,10 "
        "--batch-size 1024 --hidden 64 --lr 0.01 --steps 20 --seeds 1 --threads 2`",
        "README, headline table; [link prediction](link_prediction.md)", LINK_PREDICTION),
    "loader-cpu-mag.json": (
        "`bench loader --dataset mag-sim --scale 1.0 --fanouts 25,20 --batch-size 1024 "
        "--pipelines dgl,fused+pinned --threads 2 --rounds 3`", "README, headline table",
        LOADER),
    "peers-train-cpu-mag.json": (
        "`bench end-to-end --dataset mag-sim --scale 0.1 --pipelines fused+pinned --model rgcn "
        "--hidden 64 --fanouts 25,20 --epochs 2 --threads 2 --peers graphbolt,pyg` (`make peers` "
        "first)",
        "README, headline table", END_TO_END),
    "peers-loader-cpu-mag.json": (
        "`bench loader --dataset mag-sim --scale 0.1 --fanouts 25,20 --batch-size 1024 "
        "--pipelines fused+pinned --threads 2 --rounds 3 --peers graphbolt,pyg` (`make peers` "
        "first)",
        "README, headline table", LOADER),
    "train-cpu-mag-0.25.json": (
        "`bench end-to-end --dataset mag-sim --scale 0.25 --pipelines dgl,fused+pinned --model "
        "rgcn --hidden 64 --fanouts 25,20 --epochs 2 --threads 2`", "README, headline table",
        END_TO_END),
    "train-cpu-mag-0.25-no-relations.json": (
        "`bench end-to-end --dataset mag-sim --scale 0.25 --pipelines fused+pinned --model rgcn "
        "--hidden 64 --fanouts 0,0 --epochs 2 --threads 2` (R-GCN's root weights alone: an MLP "
        "on the papers' features)", "README, headline table", END_TO_END),
    "gpu-h100": ("`python3 benchmarks/gpu_session.py --out $OUT --commit <sha> --deadline-s "
                 "520 --reuse-build` on a lent H100 (`run1-20ceee2/`: the first run, before its "
                 "mends; `run2-126acd1/`: the second; `run3-0ed3096/`: the third, whose fused@gpu "
                 "rung failed in layer-wise evaluation, mended in 6f73370; `run4-6f73370/`: the "
                 "fourth; `run5-e82e6bd/`: the fifth, cut short by a torch-sparse build beside "
                 "it; `run7-ec8cd93/`: `--steps pyg` after this run's PyG peer failed, cut off "
                 "by the loan's end)",
                 "README, On a GPU; notebooks 02 and 03", [EVERY_FILE]),
    "gpu-h200": ("`python3 benchmarks/gpu_session.py --out $OUT --commit <sha> --steps "
                 "tests,sanitizers,measurements,h2d --deadline-s 470` on an H200 lent to this "
                 "session (its PyG step left out: no wheels carried), then in the same loan "
                 "`benchmarks/sampler_threads.py --scale 1.0` (`sampler-threads.json`); "
                 "`run1-4653ae8/`: a session run outside our sessions, carrying torch-sparse's "
                 "and torch-scatter's wheels, whose PyG step timed out; `run2-4653ae8/`: its "
                 "`--steps pyg` call, which timed out too)",
                 "README, On a GPU; notebooks 02 and 03", [EVERY_FILE]),
}

#: Why a result measured by older code was not measured again, by result.
_ISSUE_50 = ("issue 50 (typed graphs, sessions 11 and 12, 2026-11-28) generalised what it runs "
             "without changing its work: the sampler op (the homogeneous op is the typed op's "
             "one-type case and draws the same blocks; an A/B against 4653ae8's op at "
             "products-sim 0.25 gave 10.09/8.93/9.41 ms a batch before and 10.08/8.45/7.70 "
             "after), Block and MiniBatch, the Loader's hand-over and workers, and train(); "
             "session 12 then changed the Loader's staging slots (outside shared memory they "
             "start at 256 MiB and grow to fit: the same rows in them) and registered a dataset "
             "and a benchmark. Each session measured again the results that fit its time, one "
             "at a time on 2 cores, not this one: its run takes the better part of an hour or "
             "more at products size, or needs papers-sim's 65 GB or igb-sim's 42 GB of disk, or "
             "a peer's environment (`make peers`, not set up on this machine). Issue 51's "
             "weighted sampling (session 13) then gave the sampler op optional weight "
             "arguments: a uniform relation runs the same code but for one branch a "
             "destination in the counting step (sampling-cpu and sampling-cpu-products, "
             "measured again, show no drop); it also let bench typed-disk's Loader wait a "
             "store's whole time for a batch and made a benchmark child's exit message name a "
             "signal only when one killed it (nothing either measures). Session 14 (issue 51: "
             "temporal sampling, edge exclusion, link prediction) gave the op optional time and "
             "exclusion arguments (a uniform relation of a plain call takes the same path but "
             "for a mask of its destination ids: sampling-cpu-products measured again in one "
             "run against DGL, 4.15x, within the VM's noise of the stored 4.31x), moved the "
             "huge-page copy of random-access arrays into one helper (the same copies), let "
             "MiniBatch subclasses through the workers and let the Loader size staging for "
             "edge batches and disjoint samplers (node batches size as before); after its "
             "link-prediction runs it moved DGL's link loader into linkpred/ and factored the "
             "benchmarks' --batches/--repeats/--samplers options (the same code, moved). "
             "Session 16 changed how the extension compiles (-g1 in place of Python's -g, "
             "torch/python.h in place of torch/extension.h: the same code, compiled faster) and "
             "let weighted relations take excluded edges (a uniform relation runs the same "
             "code; a weighted one without exclusion draws the same blocks, and an A/B against "
             "the op before it showed no slowdown); after the typed link-prediction run it "
             "corrected a docstring of the DGL heterograph builder (no code changed). "
             "Session 17 let temporal calls take excluded edges and bucketed a call's excluded "
             "positions in the CPU op (a call without exclusion runs the same code but for a "
             "test of the bucket count where it tested a pointer: old and new ops side by side "
             "at products-sim 1.0 drew the same blocks in the same time, within this VM's "
             "noise; calls with exclusion draw the same blocks, faster), let LinkSampler seed each endpoint on its own on a "
             "temporal sampler (other samplers as before), and gave make_loader and PyG's "
             "drop-ins temporal arguments (unused by these runs). "
             "Session 18 let timed and disjoint relations be weighted in the CPU op (a "
             "weighted destination picks from a range of its list where it is timed; untimed "
             "and unweighted destinations run the same rules: old and new ops side by side at "
             "products-sim 1.0 drew the same blocks, uniform, weighted, temporal and 'last', "
             "with and without exclusion, in the same time within this VM's noise), and added "
             "(node, time) batch items, PyG's NeighborLoader and LinkNeighborLoader on a "
             "HeteroData, node-level times and per-relation fanouts for the drop-ins, and a "
             "line where a graph of 10M+ edges starts its time-sorted copy (unused by these "
             "runs, or no change to their work); weighted-sampling-cpu-products and "
             "temporal-sampling-cpu-products were measured at its op's final code. "
             "Session 19 added two CPU ops the models call in training (SparseAdam's update "
             "of learnt embeddings in one pass, the neighbour mean's backward by a counting "
             "sort: results equal to rounding) and let notebook 08 read 01-03's runs at their "
             "scale, and training evaluate a seeded subset of val and test ids where asked "
             "(`eval_ids`, unused by these runs): a result that trains no model runs neither "
             "op; GraphSAGE's node-classification step (hidden 256) took the same time within "
             "this VM's noise (old and new side by side, 155/162 against 163/152 ms), so those "
             "results were not measured again but train-cpu; R-GCN's step and GraphSAGE's narrow "
             "link step ran 1.6x faster, and train-cpu, train-cpu-mag-0.25 (with "
             "-no-relations), link-prediction-cpu-mag, link-prediction-cpu-citation and "
             "link-prediction-cpu-citation-full were measured at its code (the last two before "
             "the review moved aggregate.py's two embedding_bag calls into one helper: the "
             "same call, so not measured again). Session 20 (issue 49: the notebooks on a GPU "
             "machine, which has no DGL) let a process hide DGL (GNNREPRO_HIDE_DGL, unset in "
             "these runs), let a result name its commit where the tree came without .git "
             "(GNNREPRO_COMMIT, read only where git fails) and gave the notebooks' experiments "
             "rows for DGL not run, ratios over our reference pipeline and the ladder's order "
             "(with DGL the same rows as before): nothing these runs measure changed. It also gave "
             "the peers typed adapters (a homogeneous run starts the same adapter as before, "
             "which steps the same Adam) and measured peers-sampling-cpu, peers-loader-cpu, "
             "peers-train-cpu and own-model-pyg-cpu again at its final code, the peers' "
             "environments being set up on this VM; their products-size runs take tens of "
             "minutes each and were not. Session 21 (issue 49 items 6 and 3, issue 51) gave the "
             "CPU op a parallel relabel used from 8 threads (below that, as in every run here, "
             "the ordered pass runs as before: the same blocks either way), prefetched the "
             "clearing of its node map (the op at products-sim 0.25 on 2 threads: 8.5-9.1 ms a "
             "batch before, 8.1-8.3 after, side by side), let temporal 'last' take a boolean "
             "mask, gave data-parallel ranks the global step's batch id (a one-rank run samples "
             "as before; k ranks now draw the neighbourhoods one rank draws for their global "
             "batch), launch() a shared-GPU and an own-copy mode and notebook 09 the typed "
             "peers; it measured sampling-cpu, peers-sampling-cpu, peers-loader-cpu, "
             "peers-loader-cpu-mag, own-model-pyg-cpu, peers-train-cpu-mag and peers-train-cpu "
             "again at its final code; the other results on the sampler's path take tens of "
             "minutes to hours each on 2 cores, or disk this VM lacks, and were not. Session 22 "
             "(issue 49 item 4) changed one prefetch in the CPU op's weighted pick loop, taken "
             "only by timed destinations under 'last' with a mask, which no stored result runs "
             "(the op's other calls run the same instructions as before), and added the k-rank "
             "projection, which none of these results runs; it measured sampling-cpu, "
             "peers-sampling-cpu, peers-loader-cpu, peers-loader-cpu-mag, own-model-pyg-cpu, "
             "peers-train-cpu-mag, peers-train-cpu, scaling-projection-cpu and loader-cpu again at its "
             "final code. Session 23 changed which headers the extension's files include (torch's "
             "pybind11 header in place of torch/python.h, ATen's per-op headers in place of "
             "ATen/ATen.h) so that it compiles in half the time: the sampler op's, the feature "
             "gather's, the weight table's, SparseAdam's and the output pool's objects have the "
             "same machine code as before (objdump, function by function), the dropout's and the "
             "neighbour mean's differ only in the names of lambdas, the disk store's in pybind11's "
             "inlined helpers; it measured sampling-cpu, sampling-cpu-products, loader-cpu, "
             "train-cpu, peers-sampling-cpu, peers-loader-cpu and peers-loader-cpu-mag again. "
             "Session 24 (issue 51) let the CUDA op sample temporally: the extension gained a "
             "relabel by sorting that only the CUDA op calls (csrc/sampling/disjoint_relabel.cpp, "
             "registered in ops.cpp for the tests), the temporal sampler puts seed times on the "
             "seeds' device (the CPU, where they were, in every run here) and FusedSampler's and "
             "the pipelines' docstrings changed; in the CPU op, temporal and disjoint calls "
             "prefetch their map inserts and split their outputs in parallel (other calls run the "
             "same code but for one more comparison per counting item); it measured "
             "weighted-sampling-cpu-products, temporal-sampling-cpu-products, sampling-cpu, "
             "sampling-cpu-products, loader-cpu, train-cpu, peers-sampling-cpu, peers-loader-cpu, "
             "peers-loader-cpu-mag, own-model-pyg-cpu, peers-train-cpu and peers-train-cpu-mag "
             "again at its final code. Session 25 (issue 51) changed how the CPU op picks on "
             "weighted relations: a chunk's table draws are made first and their entries read "
             "as one stream, a destination of at most 64 candidates picks by a sum tree over "
             "its weights (the CUDA op shares that rule), and the ids of picks that are not "
             "table draws are read in the gather; uniform relations run the same code as "
             "before, and weighted lists longer than 64 draw the same picks; it measured the "
             "same twelve results again at its final code, after mending two faults a review "
             "found that only arrays handed to the op directly reach, and own-model-dgl-cpu; "
             "the results above sample no weighted relation, so its change leaves their work "
             "as it was. Session 26 (issue 51) let the CPU op's weighted pick chunk prefetch a "
             "redraw's table entry and resolve other destinations meanwhile (the same picks) "
             "and build sum-tree leaves by a mask; uniform relations run the same code as "
             "before; it measured the same thirteen results again at its final code, then "
             "train-cpu-mag-0.25 (with -no-relations), link-prediction-cpu-mag, "
             "link-prediction-cpu-citation, scaling-cpu, partitioned-cpu-10ep and "
             "scaling-projection-cpu; the results above take tens of minutes to hours each, or "
             "data this VM's cache lacks (mag-sim 1.0, papers-sim, igb-sim, igbh-sim), and "
             "sample no weighted relation")
_GPU_REASON = "a GPU session runs only on a lent GPU machine (none was lent to this session)"
PEERS_REASON = ("at products size each peer's run takes tens of minutes on 2 cores; our side "
                "of it was measured again in the matching rows above")
#: How many changed files a row names before "and N more".
NAMED_FILES = 3


def result_entries() -> dict[str, list[str]]:
    """Result -> the entries its code path starts from (tools/code_paths.py)."""
    return {name: entries for name, (_, _, entries) in RESULTS.items()}


def _changed_files(changed: list[str]) -> str:
    named = ", ".join(f"`{f}`" for f in changed[:NAMED_FILES])
    more = len(changed) - NAMED_FILES
    return named + (f" and {more} more" if more > 0 else "")


def _current(name: str, measured_by: str | None, uncommitted: bool,
             known: dict[str, dict]) -> str:
    """The row's "by today's code" cell: its source hash, else its code path (code_paths;
    `known` is its record)."""
    if measured_by == source_hash():
        return ("yes: the same code (its source hash is today's), measured before that code "
                "was committed") if uncommitted else "yes"
    changed = changed_on_path(name, RESULTS[name][2], known)
    if changed == []:
        return "yes: the code on its path is unchanged (the changes since are elsewhere)"
    why = (f"no: changed on its path since: {_changed_files(changed)}" if changed is not None
           else "no: measured by uncommitted code of an older source")
    reason = (_GPU_REASON if name.startswith("gpu-") else PEERS_REASON
              if name.startswith("peers-") and "products" in name else _ISSUE_50)
    return why + (f"; not measured again: {reason}" if reason else "")


def _measured_at(name: str) -> tuple[str, str | None]:
    """(the commit the result names, with its uncommitted code files counted; the source hash
    of the code that measured it)."""
    commit, measured_by, dirty = result_source(name)
    short = (commit or "?")[:7] + (f" + {len(dirty)} uncommitted code files (its source hash "
                                   "says whose)" if dirty else "")
    return short, measured_by


def stored() -> list[str]:
    """Every stored result: the JSONs, and the GPU sessions' folders."""
    return sorted([p.name for p in RESULTS_DIR.glob("*.json")]
                  + [p.parent.name for p in RESULTS_DIR.glob("*/session.json")])


def results_table() -> str:
    """The table, one row per entry of RESULTS; ValueError if a stored result has none or its
    code path is not recorded (tools/code_paths.py)."""
    unlisted = [name for name in stored() if name not in RESULTS]
    if unlisted:
        raise ValueError(f"results without an entry in tools/results_page.py: {unlisted}")
    unrecorded_paths = unrecorded(result_entries())
    if unrecorded_paths:
        raise ValueError(f"results whose code path is not recorded for their source: "
                         f"{unrecorded_paths} (run python tools/code_paths.py)")
    known = load_record()
    lines = ["| result | measured at | by today's code | command | its numbers |",
             "| --- | --- | --- | --- | --- |"]
    for name, (command, shown, _) in RESULTS.items():
        commit, measured_by = _measured_at(name)
        why = _current(name, measured_by, "uncommitted code" in commit, known)
        lines.append(f"| `{name}` | {commit} | {why} | {command} | {shown} |")
    return "\n".join(lines)
