"""Write notebooks/NN_name.ipynb from one template (title, imports, the `parameters` cell
generated from gnnrepro.experiments.params.Params, its validation, the experiment with its
table and figures). Run it after changing the schema or a notebook below; tests/test_notebooks.py
checks that the committed notebooks are what it writes."""
from __future__ import annotations

import dataclasses
import importlib
import sys
from pathlib import Path

import nbformat

from gnnrepro.experiments import measurements
from gnnrepro.experiments.params import Params

HERE = Path(__file__).resolve().parent

IMPORTS = """\
from gnnrepro import experiments, plots
from gnnrepro.experiments import paper

_names_before_parameters = set(globals())"""

VALIDATE = "params = experiments.from_namespace(globals(), _names_before_parameters)"

# name -> (title, what it shows, [code cells after the parameters are validated])
NOTEBOOKS: dict[str, tuple[str, str, list[str]]] = {
    "01_stage_breakdown": (
        "Stage breakdown",
        "Per epoch, the work of the four stages (sample, extract, forward, backward) of each "
        "pipeline. The paper's motivation: in DGL's pipeline, sampling and feature extraction "
        "dominate. Work above the black tick (the epoch time) ran overlapped with other work.",
        ["""\
data, meta = experiments.stage_breakdown(params)
table = experiments.stage_table(data, meta.get("not_run"))
experiments.write_table(table, params.figures_dir / "01_stage_breakdown",
                        caption="Work per epoch of each stage (seconds) and the share of "
                                "sample + extract in each pipeline.")
table""", """\
fig = plots.stage_bars(data, meta.get("not_run"))
plots.save_figure(fig, params, meta, "01_stage_breakdown")"""]),
    "02_sampling_speedup": (
        "Sampling speedup",
        "DGL's samplers (dgl-unfused: sample_neighbors + to_block, the pair the paper fuses; "
        "dgl-fused: DGL's NeighborSampler), the two-step reference and the fused sampler on the "
        "same seed batches, per dataset, on the CPU, and the peers (`peers`: GraphBolt, PyG "
        "without pyg-lib) from their own environments where `make peers` set them up. The "
        "paper reports 1.52x for fused sampling vs DGL (on a GPU).",
        ["""\
data, meta = experiments.sampling_speedup(params)
for peer, why in meta["peers_not_run"].items():
    print(f"{peer}: not run - {why}")
table = experiments.speedup_table(data, meta.get("not_run"))
experiments.write_table(table, params.figures_dir / "02_sampling_speedup",
                        caption="Sampling time per mini-batch and the fused sampler's speedup "
                                + ("over each (DGL not run)." if meta.get("not_run") else
                                   f"(paper: {paper.SAMPLING_SPEEDUP:.2f}x vs DGL)."))
table""", """\
fig = plots.speedup_bars(data, paper.SAMPLING_SPEEDUP, meta.get("not_run"))
plots.save_figure(fig, params, meta, "02_sampling_speedup")""", """\
# The GPU rows: every machine's latest stored GPU session (make gpu-session), side by side,
# each labelled with its machine; each ratio is within one session, never across machines.
gpu_sessions = experiments.stored_gpu_sessions()
gpu = experiments.gpu_sampling(gpu_sessions)
experiments.write_table(gpu, params.figures_dir / "02_sampling_speedup_gpu",
                        caption="On a GPU (stored sessions): time per batch per sampler "
                                "placement and the fused CUDA sampler's speedup (paper: "
                                f"{paper.SAMPLING_SPEEDUP:.2f}x vs DGL's GPU sampler; ours "
                                "is against an unfused plain-torch GPU sampler).")
gpu""", """\
fig = plots.gpu_bars(gpu[gpu["sampler"] != "fused-cuda"], "sampler", "fused_cuda_speedup",
                     "fused CUDA sampler's speedup (x)", "Fused sampling on the GPU vs each",
                     "run make gpu-session on a GPU machine and commit its results",
                     **experiments.gpu_paper_mark(gpu, paper.SAMPLING_SPEEDUP, "samplers"))
plots.save(fig, params.figures_dir / "02_sampling_speedup_gpu",
           experiments.gpu_label(gpu_sessions))""", """\
# Weighted sampling (DGL's prob=...): ours and DGL's samplers, uniform and under two weight
# distributions (dgl#7462's: uniform random, half zero; a heavy tail: Pareto(1.5)), on the
# same batches: the time per batch, and what the weights cost each sampler over its uniform.
weighted, weighted_meta = experiments.weighted_sampling(params)
for peer, why in (weighted_meta["peers_not_run"] | weighted_meta.get("not_run", {})).items():
    print(f"{peer}: not run - {why}")
experiments.write_table(weighted, params.figures_dir / "02_weighted_sampling",
                        caption="Weighted sampling: time per batch, its cost over the same "
                                "sampler's uniform sampling, and ours' speedup.")
fig = plots.weighted_bars(weighted)
plots.save_figure(fig, params, weighted_meta, "02_weighted_sampling")
weighted""", """\
# Temporal sampling (PyG's edge_time: each seed on its own at its time, at every hop): the
# graph's edges get random times; uniform sampling, disjoint sampling without times, temporal
# sampling with every edge a candidate, with seeds at random times, and "last", on the same
# batches.
temporal, temporal_meta = experiments.temporal_sampling(params)
for peer, why in temporal_meta["peers_not_run"].items():
    print(f"{peer}: not run - {why}")
experiments.write_table(temporal, params.figures_dir / "02_temporal_sampling",
                        caption="Temporal sampling: time per batch and its cost over uniform "
                                "sampling (disjoint subgraphs have more sources).")
fig = plots.temporal_bars(temporal)
plots.save_figure(fig, params, temporal_meta, "02_temporal_sampling")
temporal"""]),
    "03_end_to_end": (
        "End-to-end training",
        "Epoch time of the ablation ladder: DGL's pipeline, fused sampling, fused sampling with "
        "pinned multi-stream feature loading. The paper reports 1.80x end to end. Two "
        "comparisons: against `dgl`, DGL's pipeline feeding our model (the pipeline alone "
        "differs), and against `dgl-native`, DGL's whole stack (its DataLoader feeding DGL's own "
        "GraphSAGE from its node-classification example), where the models differ too, so the "
        "table also gives the epochs each needs to reach `target_acc`. The timeline "
        "shows a few batches: bars on different lanes at the same time overlapped. The "
        "training run is the one behind 01_stage_breakdown (measured once, stored). Last, the "
        "pipeline alone: the same loaders with no model, which is what a GPU trainer, whose "
        "step takes milliseconds, would see of them, and the peers' loaders beside them.",
        ["""\
data, meta = experiments.end_to_end(params)
table = experiments.end_to_end_table(data, meta.get("not_run"))
over = (f"speedup over DGL's pipeline (paper: {paper.END_TO_END_SPEEDUP:.2f}x) and over DGL's "
        "whole stack" if meta.get("baseline", "dgl") == "dgl" else
        "speedup over our reference pipeline (DGL not run: the paper's ratio is over DGL's)")
experiments.write_table(table, params.figures_dir / "03_end_to_end",
                        caption=f"Epoch time, {over}, accuracy, and the epochs to validation "
                                f"accuracy {meta['target_acc']}.")
table""", """\
fig = plots.end_to_end_bars(data, paper.END_TO_END_SPEEDUP, meta.get("not_run"))
plots.save_figure(fig, params, meta, "03_end_to_end")""", """\
fig = plots.timeline(experiments.timeline_frame(meta))
plots.save_figure(fig, params, meta, "03_end_to_end_timeline")""", """\
# The pipeline alone: every batch of an epoch delivered with no model (what a GPU trainer
# would wait for), DGL's DataLoader beside ours.
alone, alone_meta = experiments.pipeline_alone(params)
for peer, why in alone_meta["peers_not_run"].items():
    print(f"{peer}: not run - {why}")
table = experiments.pipeline_alone_table(alone, alone_meta.get("not_run"))
experiments.write_table(table, params.figures_dir / "03_pipeline_alone",
                        caption="The pipeline alone: epoch time to deliver every batch "
                                f"({alone_meta['step_note']}).")
table""", """\
fig = plots.pipeline_alone_bars(alone, alone_meta["step_note"], alone_meta.get("not_run"))
plots.save_figure(fig, params, alone_meta, "03_pipeline_alone")""", """\
# The GPU rows: the ladder on one GPU and the host-to-device copies, from every machine's
# latest stored GPU session (make gpu-session), side by side, each labelled with its machine;
# each ratio is within one session, never across machines.
gpu_sessions = experiments.stored_gpu_sessions()
gpu = experiments.gpu_end_to_end(gpu_sessions)
experiments.write_table(gpu, params.figures_dir / "03_end_to_end_gpu",
                        caption="On one GPU (stored sessions): epoch time of the ladder and "
                                "the speedup over its baseline (the paper's "
                                f"{paper.END_TO_END_SPEEDUP:.2f}x is over DGL's pipeline).")
copies = experiments.gpu_copy(gpu_sessions)
experiments.write_table(copies, params.figures_dir / "03_copy_overlap_gpu",
                        caption="On one GPU (stored sessions): host-to-device GB/s of the "
                                "batches' feature rows against the ceiling, and the share "
                                "hidden behind a stand-in step.")
gpu""", """\
# The paper's 1.80x is over DGL's pipeline: drawn only beside ratios over DGL's.
fig = plots.gpu_bars(gpu, "pipeline", "speedup", "speedup over the ladder's baseline (x)",
                     "End to end on one GPU (baseline: "
                     f"{', '.join(gpu['baseline'].dropna().unique()) or 'none'})",
                     "run make gpu-session on a GPU machine and commit its results",
                     **experiments.gpu_paper_mark(gpu, paper.END_TO_END_SPEEDUP,
                                                  "reference pipeline"))
plots.save(fig, params.figures_dir / "03_end_to_end_gpu", experiments.gpu_label(gpu_sessions))
copies"""]),
    "04_scaling": (
        "Multi-GPU scaling",
        "Epoch time and speedup over DGL per world size. The paper reports 1.10x, 1.16x and "
        "1.12x on 2, 4 and 8 GPUs. On the cpu device the ranks are CPU processes. World sizes "
        "this machine cannot run are listed as not run, with the reason. Memory per added "
        "rank is the machine's extra PSS (interpreter, torch, sampling worker, batch buffers "
        "and any data copy) and, apart, the bytes of extra copies of the data: one shared "
        "copy per machine makes the latter zero.",
        ["""\
data, meta = experiments.scaling(params)
table = experiments.scaling_table(data, meta.get("not_run"))
over = "DGL beside the paper's" if meta.get("baseline", "dgl") == "dgl" else "our reference"
experiments.write_table(table, params.figures_dir / "04_scaling", caption="Epoch time per "
                        f"world size, the speedup over {over}, and memory per added rank.")
table""", """\
fig = plots.scaling_lines(data, paper.SCALING_SPEEDUP, meta["ranks_are"],
                          meta.get("not_run"))
plots.save_figure(fig, params, meta, "04_scaling")""", """\
# 2/4/8 GPUs projected from measured parts, the method checked on CPU ranks (stored results)
projected = experiments.projection_rows(experiments.stored_gpu_sessions())
experiments.write_table(projected, params.figures_dir / "04_scaling_projection",
                        caption=experiments.PROJECTION_CAPTION)
plots.save(plots.projection_lines(projected, experiments.PROJECTION_NOT_MEASURED),
           params.figures_dir / "04_scaling_projection", experiments.projection_label(projected))
projected"""]),
    "05_sensitivity": (
        "Sensitivity",
        "The fused+pinned pipeline's epoch time as batch size, fanouts, workers and streams "
        "vary one at a time around the parameters below (streams only on CUDA).",
        ["""\
data, meta = experiments.sensitivity(params)
table = experiments.sensitivity_table(data)
experiments.write_table(table, params.figures_dir / "05_sensitivity",
                        caption=f"Sensitivity of the {meta['pipeline']} pipeline: one setting "
                                "varied at a time.")
table""", """\
fig = plots.sensitivity_bars(data)
plots.save_figure(fig, params, meta, "05_sensitivity")"""]),
    "06_storage": (
        "Features larger than memory",
        "Feature stores when the features do not fit in the memory a process may use (a "
        "memory cgroup caps each store at a quarter of the feature file beyond what training "
        "needs): our disk store (O_DIRECT reads, block coalescing, a hot set and a CLOCK cache "
        "within a memory budget, reads of the next batches started early), the memory-mapped "
        "file DGL and GIDS's baseline read, LMDB, and the in-memory store (uncapped: the upper "
        "bound). Batches have at most 128 seeds and the two innermost fanouts, so that one "
        "touches a small share of the table, as on data larger than memory. GIDS reports up "
        "to 392x over DGL's mmap loader end to end on a GPU with terabyte-scale data; "
        "GraphBolt's disk features read a 4 KiB block per row. Their values are their "
        "papers'; ours are measured on this machine's disk, on the CPU.",
        ["""\
data, meta = experiments.storage(params)
table = experiments.storage_table(data)
experiments.write_table(table, params.figures_dir / "06_storage",
                        caption="Feature stores with the memory capped: gather throughput, "
                                "its ratio to mmap (GIDS: "
                                f"{paper.GIDS_SPEEDUP_VS_MMAP:.0f}x end to end), bytes read "
                                "per byte used (GraphBolt: "
                                f"{paper.GRAPHBOLT_READ_AMPLIFICATION:.1f}), hit rate and the "
                                "end-to-end epoch.")
table""", """\
ceiling = meta["device_ceiling"]
row_ceiling = max((v["iops"] for k, v in ceiling.items() if k.endswith("qd32")
                   and v["block"] <= 512), default=None)
fig = plots.storage_lines(data, meta["budgets"][0], row_ceiling, paper.GIDS_SPEEDUP_VS_MMAP)
plots.save_figure(fig, params, meta, "06_storage")""", """\
# Larger than memory, no cap: igb-sim (IGB-medium's 10M nodes x 1024 float32 at scale 1.0),
# GraphSAGE 10,5,5 with batch 1024 trained for a fixed number of steps, epoch extrapolated.
reason = experiments.skip_reason(params)
if reason:
    print(reason)
else:
    big, big_meta = experiments.disk_training(params)
    big_table = experiments.disk_training_table(big)
    experiments.write_table(big_table, params.figures_dir / "06_disk_training",
                            caption="Training with the features larger than memory, no cap: "
                                    "gather throughput and its ratio to mmap, training step "
                                    "and extrapolated epoch, peak RSS, rows checked.")
    display(big_table)
    fig = plots.disk_training_bars(big, big_meta["table_vs_memory"],
                                   paper.GIDS_SPEEDUP_VS_MMAP)
    plots.save_figure(fig, params, big_meta, "06_disk_training",
                      scales=[params.disk_training_scale], dataset="igb-sim")"""]),
    "07_partitioned": (
        "Partitioned training",
        "Training on a graph partitioned across machines (DistDGLv2's setting), here 1 and 2 "
        "machines simulated on this host over loopback: epoch time and bytes exchanged per "
        "batch, ours beside DGL's DistDGL, with the fraction of remote edges and rows, the "
        "accuracy, and whether the distributed blocks equal the single machine's. DGL runs "
        "that cannot happen are listed as not run, with the reason.",
        ["""\
data, meta = experiments.partitioned(params)
table = experiments.partitioned_table(data)
experiments.write_table(table, params.figures_dir / "07_partitioned",
                        caption="Partitioned training per machine count: ours beside "
                                "DGL's DistDGL.")
table""", """\
fig = plots.partitioned_lines(data)
plots.save_figure(fig, params, meta, "07_partitioned")"""]),
    "08_scale_growth": (
        "How cost grows with the graph",
        "Ours beside DGL's on products-sim at each of `growth_scales` (0.05 and 0.25 by "
        "default; params/products.yaml adds 1.0, ogbn-products' size; at the notebooks' own "
        "scale the runs of 01-03 serve): sampling time per batch (the same work per batch at every scale, so a rising "
        "line is what a graph larger than the caches costs), the pipeline alone in batches "
        "per second, the training epoch and the peak memory of training, the last two beside "
        "a line that grows as the edges do. With `growth_papers_scale` (params/papers.yaml: "
        "ogbn-papers100M's size), papers-sim is added as stars: both samplers in memory, and "
        "our training with the features from the disk store, its epoch extrapolated.",
        ["""\
data, meta = experiments.scale_growth(params)
table = experiments.growth_table(data)
experiments.write_table(table, params.figures_dir / "08_scale_growth",
                        caption="Cost at each scale, ours and DGL's; x: over the smallest "
                                "products-sim scale.")
table""", """\
fig = plots.growth_lines(data)
papers = params.growth_papers_scale
named = {"dataset": f"papers-sim scale {papers:g} + products-sim"} if papers else {}
plots.save_figure(fig, params, meta, "08_scale_growth", scales=params.growth_scales, **named)"""]),
    "09_heterogeneous": (
        "Heterogeneous graphs",
        "Ours beside DGL's heterogeneous stack on a typed graph (`hetero_dataset`: mag-sim, "
        "ogbn-mag's shape, at `hetero_scale`). Sampling a batch of the target type (papers) at "
        "each of `hetero_fanouts` (25,20 as ogbn-mag's examples, 5,10,15 as MLPerf's R-GAT, "
        "input layer first): DGL's sample_neighbors + to_block (dgl-unfused) and its "
        "NeighborSampler (dgl-fused) on the heterograph against our fused per-relation op, the "
        "same batches interleaved. Then, at the first fanouts: the pipeline alone (DGL's "
        "DataLoader on the heterograph against fused+pinned, no model; GraphBolt's and PyG's "
        "typed stacks beside them where `make peers` set them up) and training end to "
        "end, the same R-GCN (`hetero_hidden` wide, one layer per fanout) from the same "
        "initial weights on both loaders, with its accuracy. Where DGL cannot be imported, its "
        "samplers and its pipeline are listed as not run, with the reason.",
        ["""\
data, meta = experiments.heterogeneous(params)
for name, why in meta["not_run"].items():
    print(f"{name}: not run - {why}")
sampling = experiments.heterogeneous_sampling_table(data)
experiments.write_table(sampling, params.figures_dir / "09_heterogeneous_sampling",
                        caption=f"Sampling a batch of {params.batch_size} {meta['target']} "
                                "seeds on a typed graph: DGL's heterogeneous samplers and "
                                "the fused per-relation op, per fanout list.")
sampling""", """\
table = experiments.heterogeneous_table(data)
experiments.write_table(table, params.figures_dir / "09_heterogeneous",
                        caption=f"The same {meta['model']}, hidden {meta['hidden']}, on "
                                "DGL's loader and on ours: epoch time, speedup, accuracy, and "
                                f"the pipeline alone ({meta['step_note']}).")
table""", """\
fig = plots.heterogeneous_bars(data, meta["step_note"], meta["model"])
plots.save_figure(fig, params, meta, "09_heterogeneous",
                  **experiments.heterogeneous_label(params))""", """\
# Larger than memory: igbh-sim (MLPerf's IGBH schema; 10M papers and 41.6 GB of float16
# features at scale 1.0), R-GCN trained a fixed number of steps from our disk store and from
# mmap, each in its own process, epoch extrapolated, test accuracy through the same store.
reason = experiments.heterogeneous_disk_skip_reason(params)
if reason:
    print(reason)
else:
    disk, disk_meta = experiments.heterogeneous_disk(params)
    experiments.write_table(disk, params.figures_dir / "09_heterogeneous_disk",
                            caption=f"R-GCN on igbh-sim {params.hetero_disk_scale:g} "
                                    f"({disk_meta['feature_gb']:.1f} GB of features, "
                                    f"{disk_meta['memory_gb']:.1f} GB of memory): seconds per "
                                    "step, extrapolated epoch, accuracy against the majority "
                                    "class, peak RSS, per feature store.")
    display(disk)"""]),
    "10_link_prediction": (
        "Link prediction",
        "Link prediction on citation-sim (ogbl-citation2's shape at `link_scale`; 1,000 fixed "
        "negatives per validation and test query): the same GraphSAGE encoder (two layers, "
        "fanouts 15,10, `link_hidden` wide) and OGB's citation2 scorer, trained `link_steps` "
        "steps (lr 0.01, batch_size positives a step) from "
        "the same initial weights on DGL's edge-prediction DataLoader "
        "(as_edge_prediction_sampler, exclude='reverse_id', Uniform(1) negatives) and on ours "
        "(LinkSampler in the pinned Loader, the same exclusion and negatives scheme), once per "
        "seed: the median time a step, and the MRR each reaches (OGB's ranking, embeddings "
        "layer-wise over every neighbour for both). Then the same on a typed graph: "
        "`hetero_dataset`'s `cites` relation at `hetero_scale` (mag-sim: ogbn-mag's shape), "
        "R-GCN as the encoder, DGL's heterogeneous edge-prediction DataLoader "
        "(exclude='reverse_types': a batch's citations and their reverse twins) against our "
        "LinkSampler on the typed graph, the MRR on sampled blocks. Where DGL cannot be "
        "imported its runs fail with the reason.",
        ["""\
data, meta = experiments.link_prediction(params)
experiments.write_table(data, params.figures_dir / "10_link_prediction",
                        caption="Link prediction, the same model on DGL's edge-prediction "
                                "DataLoader and on ours: seconds a step, our speedup, MRR.")
data""", """\
fig = plots.link_bars(data)
plots.save_figure(fig, params, meta, "10_link_prediction", dataset="citation-sim",
                  scales=[params.link_scale])""", """\
typed, typed_meta = experiments.typed_link_prediction(params)
experiments.write_table(typed, params.figures_dir / "10_link_prediction_typed",
                        caption="Link prediction on a typed relation (cites): R-GCN on DGL's "
                                "heterogeneous edge-prediction DataLoader and on ours: seconds "
                                "a step, our speedup, MRR.")
typed""", """\
fig = plots.link_bars(typed)
plots.save_figure(fig, params, typed_meta, "10_link_prediction_typed",
                  dataset=params.hetero_dataset, scales=[params.hetero_scale])"""]),
}


# What each notebook's result depends on (the experiments' store keys, read from the modules
# by path); the output parameters (where, re-measure, which folder) apply to every notebook.
def _key(module: str, name: str = "PARAMETERS") -> tuple[str, ...]:
    return getattr(importlib.import_module(f"gnnrepro.experiments.{module}"), name)


USED: dict[str, tuple[str, ...]] = {
    "01_stage_breakdown": measurements.LADDER_KEY,
    "02_sampling_speedup": tuple(dict.fromkeys(_key("sampling_speedup")
                                               + _key("weighted_sampling")
                                               + _key("temporal_sampling"))),
    "03_end_to_end": _key("end_to_end", "ALONE_PARAMETERS"),
    "04_scaling": _key("scaling"),
    "05_sensitivity": _key("sensitivity"),
    "06_storage": tuple(dict.fromkeys(_key("storage") + _key("disk_training"))),
    "07_partitioned": _key("partitioned"),
    "08_scale_growth": _key("scale_growth"),
    "09_heterogeneous": tuple(dict.fromkeys(_key("heterogeneous")
                                            + _key("heterogeneous_disk"))),
    "10_link_prediction": tuple(dict.fromkeys(_key("link_prediction")
                                              + _key("link_prediction", "TYPED_PARAMETERS"))),
}
OUTPUT = ("out_dir", "force", "figures_name")
OTHERS_NOTE = ("# The other notebooks' parameters: not used here, accepted so that one parameters "
               "file (make figures -f ...) serves every notebook.")


def parameters_source(name: str) -> str:
    """Notebook `name`'s parameters cell: `name: type = default  # help` per schema field,
    those the notebook uses first, then the rest under a comment saying it ignores them."""
    defaults = Params()
    used = set(USED[name]) | set(OUTPUT)
    fields = dataclasses.fields(Params)
    lines = []
    for group in ([f for f in fields if f.name in used], [f for f in fields if f.name not in used]):
        if group and lines:
            lines.append(OTHERS_NOTE)
        for f in group:  # typing names, quoted: unquoted they would need an import
            annotation = f'"{f.type}"' if "Optional" in f.type else f.type
            lines.append(f"{f.name}: {annotation} = {getattr(defaults, f.name)!r}  "
                         f"# {f.metadata['help']}")
    return "\n".join(lines)


def build(name: str) -> nbformat.NotebookNode:
    """Notebook `name`, without outputs, with deterministic cell ids."""
    title, about, cells = NOTEBOOKS[name]
    intro = (f"# {name[:2]} {title}\n\n{about}\n\n"
             f"Run all notebooks with `make figures` (parameters: "
             f"`notebooks/params/default.yaml`), or this one with `.venv/bin/papermill "
             f"notebooks/{name}.ipynb build/{name}.smoke.ipynb -f notebooks/params/smoke.yaml` "
             f"(its figures go to `figures/smoke/`: other parameters never overwrite the "
             f"default figures); `.venv/bin/papermill --help-notebook notebooks/{name}.ipynb` "
             f"lists the parameters.")
    v4 = nbformat.v4
    nb = v4.new_notebook(metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)",
                       "language": "python"},
        "language_info": {"name": "python"}})
    nb.cells = [v4.new_markdown_cell(intro), v4.new_code_cell(IMPORTS),
                v4.new_code_cell(parameters_source(name), metadata={"tags": ["parameters"]}),
                v4.new_code_cell(VALIDATE), *(v4.new_code_cell(src) for src in cells)]
    for i, cell in enumerate(nb.cells):
        cell.id = f"{name}-{i}"
    return nb


def render(name: str) -> str:
    """The notebook's file contents."""
    return nbformat.writes(build(name)) + "\n"


def main() -> int:
    for name in NOTEBOOKS:
        (HERE / f"{name}.ipynb").write_text(render(name))
    print(f"wrote {len(NOTEBOOKS)} notebooks to {HERE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
