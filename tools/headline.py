"""The README's headline results table, one row per claim, read from the stored JSONs.

Each row says what it measures (the sampler alone, the pipeline alone with no model, the same
model on two pipelines, or whole stacks, models included) and links every JSON it quotes with
the day it was measured (the commits are in docs/results.md, so the README names few). Ratios come from unrounded values. tools/generated_blocks.py
writes the table between its markers.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"

__all__ = ["headline_table"]


def _load(name: str) -> dict[str, Any]:
    return json.loads((RESULTS / f"{name}.json").read_text())


def _machine(cpu: str) -> str:
    """A short name of the CPU a result ran on ("AMD EPYC", "Intel Xeon", else as recorded)."""
    for vendor, family in (("AMD", "EPYC"), ("Intel", "Xeon")):
        if family in cpu:
            return f"{vendor} {family}"
    return cpu or "?"


def _link(name: str) -> str:
    """The JSON's link, the day it was measured and the CPU it ran on (its commit:
    docs/results.md)."""
    env = _load(name)["env"]
    day = (env.get("timestamp") or "?")[:10]
    return f"[{name}](benchmarks/results/{name}.json) ({day}, {_machine(env.get('cpu', ''))})"


def _pair(values: list[float], fmt: str = ".3g") -> str:
    return " / ".join(format(v, fmt) for v in values)


def _ratios(values: list[float]) -> str:
    """Bold ratios, "**a.bcx / d.efx**"."""
    return "**" + " / ".join(f"{v:.3g}x" for v in values) + "**"


def _sampling(prefix: str, other: str) -> list[float]:
    """[fused ms, other's ms, ratio] of each of a sampling result pair."""
    out = []
    for name in (prefix, f"{prefix}-products"):
        samplers = _load(name)["samplers"]
        ours, theirs = samplers["fused"]["ms_per_batch"], samplers[other]["ms_per_batch"]
        out.append((ours, theirs, theirs / ours))
    return out


def _row_sampling() -> list[str]:
    rows = _sampling("sampling-cpu", "dgl-fused")
    return ["sampling a batch, the sampler alone, products-sim 0.25 / 1.0 (paper: 1.52x on a "
            "GPU)", _pair([r[0] for r in rows]) + " ms",
            "DGL's NeighborSampler " + _pair([r[1] for r in rows]) + " ms",
            _ratios([r[2] for r in rows]),
            f"{_link('sampling-cpu')}, {_link('sampling-cpu-products')}"]


def _row_graphbolt_sampling() -> list[str]:
    rows = _sampling("peers-sampling-cpu", "graphbolt")
    return ["sampling a batch against GraphBolt's CPU sampler, 0.25 / 1.0",
            _pair([r[0] for r in rows]) + " ms", _pair([r[1] for r in rows], ".3g") + " ms",
            _ratios([r[2] for r in rows]),
            f"{_link('peers-sampling-cpu')}, {_link('peers-sampling-cpu-products')}"]


def _row_loader() -> list[str]:
    ours, theirs, ratio = [], [], []
    for name in ("loader-cpu", "loader-cpu-products"):
        p = _load(name)["pipelines"]
        ours.append(p["fused+pinned"]["batches_per_s"])
        theirs.append(p["dgl"]["batches_per_s"])
        ratio.append(p["dgl"]["epoch_s"] / p["fused+pinned"]["epoch_s"])
    return ["the pipeline alone (no model: batches delivered per second), 0.05 / 1.0",
            _pair(ours, ".4g"), "DGL's DataLoader " + _pair(theirs),
            _ratios(ratio),
            f"{_link('loader-cpu')}, {_link('loader-cpu-products')}"]


def _row_training() -> list[str]:
    r = _load("train-cpu")
    p, rounds = r["pipelines"], r["speedup_vs_dgl_rounds"]["fused+pinned"]
    workers = r["params"]["resolved"]["fused+pinned"]["workers"]
    speed = r["speedup_vs_dgl"]
    return [f"training epoch, the same model (our GraphSAGE) on both pipelines, 0.05, "
            f"{len(rounds)} alternated rounds (paper: 1.80x on a GPU; on this CPU fused+pinned "
            f"has {workers} workers and pins nothing)",
            f"fused+pinned {p['fused+pinned']['epoch_s']:.3g} s, fused {p['fused']['epoch_s']:.3g} s",
            f"DGL's loader, our model {p['dgl']['epoch_s']:.3g} s",
            f"**{speed['fused+pinned']:.3g}x / {speed['fused']:.3g}x** (fused+pinned's rounds "
            f"{min(rounds):.2f}-{max(rounds):.2f}x)", _link("train-cpu")]


def _peer_train(peer_epoch: Callable[[dict], float]) -> tuple[list[float], list[float]]:
    ours, theirs = [], []
    for name in ("peers-train-cpu", "peers-train-cpu-products"):
        r = _load(name)
        ours.append(r["pipelines"]["fused+pinned"]["epoch_s"])
        theirs.append(peer_epoch(r))
    return ours, theirs


def _row_whole_stack() -> list[str]:
    ours, theirs = _peer_train(lambda r: r["pipelines"]["dgl-native"]["epoch_s"])
    return ["training epoch, whole stacks (each its own model), 0.05 / 1.0: ours against DGL's "
            "DataLoader feeding DGL's example model; most of the gain is the model's",
            _pair(ours) + " s", "dgl-native " + _pair(theirs) + " s",
            _ratios([t / o for o, t in zip(ours, theirs)]), f"{_link('peers-train-cpu')}, {_link('peers-train-cpu-products')}"]


def _row_graphbolt_training() -> list[str]:
    ours, theirs = _peer_train(lambda r: r["peers"]["graphbolt"]["epoch_s"])
    return ["training epoch, whole stacks, 0.05 / 1.0: ours against GraphBolt feeding DGL's "
            "SAGEConv", _pair(ours) + " s", _pair(theirs) + " s",
            _ratios([t / o for o, t in zip(ours, theirs)]), "the same"]


def _per_rank(name: str) -> tuple[float, float, int]:
    """(ours, DGL's) extra memory per added rank at the largest world size, and that size."""
    runs = _load(name)["runs"]
    size = max(r["world_size"] for r in runs if not r.get("skipped"))
    by = {r["pipeline"]: r["extra_rss_per_rank_bytes"] for r in runs if r["world_size"] == size}
    return by["fused+pinned"], by["dgl"], size


def _row_memory() -> list[str]:
    rows = [_per_rank(n) for n in ("scaling-cpu", "scaling-cpu-products")]
    sizes = " / ".join(f"{'0.05' if i == 0 else '1.0'} ({r[2]} ranks)" for i, r in enumerate(rows))
    return [f"memory per added data-parallel rank, {sizes}",
            _pair([r[0] / 1e6 for r in rows], ".0f") + " MB",
            "DGL " + _pair([r[1] / 1e6 for r in rows], ".0f") + " MB",
            "**" + " / ".join(f"{1 - r[0] / r[1]:.0%}" for r in rows) + " less**",
            f"{_link('scaling-cpu')}, {_link('scaling-cpu-products')}"]


def _row_storage() -> list[str]:
    r = _load("storage-cpu")
    stores, params = r["stores"], r["params"]
    cap = params["memory_limit"] / r["feature_file"]["bytes"]
    capped = stores["mmap"].get("cap", {}).get("mode", "none") != "none"
    bound = stores["mmap"].get("lower_bound", False)  # stopped at its time limit
    what = (f"under a memory cap ({cap:.0%} of the feature file)" if capped else
            f"uncapped ({stores['mmap'].get('cap', {}).get('reason', 'no memory cgroup')})")
    return [f"feature rows/s {what}, 0.25, the stores alone",
            f"disk store {stores['disk']['rows_per_s'] / 1e3:.0f}k",
            f"mmap {'at most ' if bound else ''}{stores['mmap']['rows_per_s']:.0f}",
            f"**{'at least ' if bound else ''}{stores['disk']['speedup_vs_mmap']:.0f}x**",
            _link("storage-cpu")]


def _mmap_step(mmap: dict) -> tuple[str, bool]:
    """mmap's cell: its time for a step, or, where its step did not fit the baseline's time
    limit, the time it would at least take; and whether it is that lower bound."""
    bound = "batch_s" not in mmap["train"]
    seconds = mmap["train"].get("batch_s", mmap["train"].get("batch_s_at_least"))
    return f"mmap {'more than ' if bound else ''}{seconds:.3g} s", bound


def _row_disk_training() -> list[str]:
    r = _load("disk-training-cpu-igb")
    disk, mmap = r["stores"]["disk"], r["stores"]["mmap"]
    mmap_cell, bound = _mmap_step(mmap)
    return [f"features {r['table_vs_memory']:.2g}x this VM's memory (igb-sim 1.0), one training "
            "step, the same model", f"disk store {disk['train']['batch_s']:.3g} s",
            mmap_cell + ("" if bound else " (one step)"),
            f"**{'at least ' if bound else ''}{disk['batch_vs_mmap']:.0f}x** per step "
            f"({disk['gather_vs_mmap']:.0f}x gathered rows/s)", _link("disk-training-cpu-igb")]


def _row_papers_sampling() -> list[str]:
    r = _load("sampling-cpu-papers")
    samplers, reads = r["samplers"], r["random_reads"]
    ours, theirs = samplers["fused"]["ms_per_batch"], samplers["dgl-fused"]["ms_per_batch"]
    return [f"sampling a batch at papers100M's size (papers-sim 1.0: "
            f"{r['params']['num_edges'] / 1e9:.2g}B edges in memory), the sampler alone, "
            f"interleaved with DGL's; timed alone ({reads['ms_per_batch_alone']['ms_median']:.3g}"
            f" ms), its random reads take {reads['share_of_ceiling']:.0%} of this VM's "
            f"measured ceiling",
            f"{ours:.3g} ms", f"DGL's NeighborSampler {theirs:.3g} ms",
            _ratios([theirs / ours]), _link("sampling-cpu-papers")]


def _row_papers_training() -> list[str]:
    r = _load("disk-training-cpu-papers")
    disk, mmap = r["stores"]["disk"], r["stores"]["mmap"]
    train = disk["train"]
    mmap_cell, bound = _mmap_step(mmap)
    resumed = train.get("resumed_at_step", 0)
    resume = (f"; the run was killed and resumed from its checkpoint at step {resumed}, the "
              f"step timed over the {train['timed_batches']} steps after" if resumed else "")
    return [f"training at papers100M's size, features {r['table_vs_memory']:.2g}x this VM's "
            f"memory from disk, one step, the same model (peak RSS "
            f"{disk['memory']['train']['peak_rss_bytes'] / 2**30:.3g} GiB; test accuracy "
            f"{train['test_acc']:.3f} after {train['batches']} steps, the majority class "
            f"{train['test_majority_acc']:.3f}{resume})", f"disk store {train['batch_s']:.3g} s",
            mmap_cell, f"**{'at least ' if bound else ''}{disk['batch_vs_mmap']:.0f}x** per step",
            _link("disk-training-cpu-papers")]


def _row_partitioned() -> list[str]:
    r = _load("partitioned-cpu-10ep")
    ours = next(run["epoch_s"] for run in r["runs"] if run.get("machines") == 2)
    theirs = r["dgl"]["2"]["epoch_s"]
    return ["partitioned training, 2 machines on one host, 0.02, epoch, the same model "
            "architecture", f"{ours:.3g} s", f"DistDGL {theirs:.3g} s",
            f"**{theirs / ours:.3g}x**", _link("partitioned-cpu-10ep")]


def _row_typed_sampling() -> list[str]:
    ours, theirs, ratio = [], [], []
    for name in ("typed-sampling-cpu-mag", "typed-sampling-cpu-mag-mlperf"):
        samplers = _load(name)["samplers"]
        ours.append(samplers["fused"]["ms_per_batch"])
        theirs.append(samplers["dgl-fused"]["ms_per_batch"])
        ratio.append(theirs[-1] / ours[-1])
    return ["heterogeneous: sampling a batch of papers, every relation, the sampler alone, "
            "mag-sim 1.0 (ogbn-mag's shape), fanouts 25,20 / MLPerf R-GAT's 5,10,15",
            _pair(ours) + " ms", "DGL's heterogeneous NeighborSampler " + _pair(theirs) + " ms",
            _ratios(ratio),
            f"{_link('typed-sampling-cpu-mag')}, {_link('typed-sampling-cpu-mag-mlperf')}"]


def _row_igbh_sampling() -> list[str]:
    ours, theirs, ratio, inputs = [], [], [], []
    for name in ("typed-sampling-cpu-igbh", "typed-sampling-cpu-igbh-mlperf"):
        samplers = _load(name)["samplers"]
        ours.append(samplers["fused"]["ms_per_batch"])
        theirs.append(samplers["dgl-fused"]["ms_per_batch"])
        ratio.append(theirs[-1] / ours[-1])
        inputs.append(samplers["fused"]["input_nodes"])
    return ["heterogeneous: sampling a batch of papers, every relation (11), the sampler alone, "
            "igbh-sim 1.0 (MLPerf's IGBH schema, 20.3M nodes), fanouts 25,20 / MLPerf R-GAT's "
            f"5,10,15 ({inputs[0] / 1e6:.2g}M / {inputs[1] / 1e6:.2g}M input nodes a batch)",
            _pair(ours) + " ms", "DGL's heterogeneous NeighborSampler " + _pair(theirs) + " ms",
            _ratios(ratio),
            f"{_link('typed-sampling-cpu-igbh')}, {_link('typed-sampling-cpu-igbh-mlperf')}"]


def _row_igbh_disk() -> list[str]:
    r = _load("typed-disk-cpu-igbh")
    p, disk, mmap = r["params"], r["stores"]["disk"], r["stores"]["mmap"]
    return ["heterogeneous, features larger than memory: a training step of R-GCN (2 layers, "
            f"hidden {p['hidden']}, fanouts {','.join(map(str, p['fanouts']))}, batch "
            f"{p['batch_size']}) on igbh-sim 1.0, {p['feature_bytes'] / 1e9:.3g} GB of float16 "
            f"features, {p['feature_bytes'] / p['memory_bytes']:.2g}x this VM's memory (test "
            f"accuracy {disk['test_acc']:.3f} after {disk['steps']} steps, the majority class "
            f"{disk['test_majority_acc']:.3f}; peak RSS {disk['peak_rss_bytes'] / 2**30:.3g} GiB)",
            f"disk store {disk['step_s_after_first']:.3g} s",
            f"mmap {mmap['step_s_after_first']:.3g} s",
            _ratios([mmap["step_s_after_first"] / disk["step_s_after_first"]]) + " per step",
            _link("typed-disk-cpu-igbh")]


def _row_typed_loader() -> list[str]:
    p = _load("loader-cpu-mag")["pipelines"]
    ours, theirs = p["fused+pinned"], p["dgl"]
    return ["heterogeneous: the pipeline alone (no model), mag-sim 1.0, fanouts 25,20",
            f"{ours['batches_per_s']:.3g} batches/s",
            f"DGL's DataLoader on the heterograph {theirs['batches_per_s']:.3g}",
            _ratios([theirs["epoch_s"] / ours["epoch_s"]]), _link("loader-cpu-mag")]


def _row_typed_training() -> list[str]:
    p = _load("train-cpu-mag-0.25")["pipelines"]
    alone = _load("train-cpu-mag-0.25-no-relations")["pipelines"]["fused+pinned"]
    ours, theirs = p["fused+pinned"], p["dgl"]
    return ["heterogeneous: training epoch, the same R-GCN (2 layers, hidden 64, fanouts "
            "25,20) on both pipelines, mag-sim 0.25, 2 epochs (test accuracy ours "
            f"{ours['test_acc']:.3f}, DGL's {theirs['test_acc']:.3f}; without relations, the "
            f"papers' features alone, {alone['test_acc']:.3f})", f"{ours['epoch_s']:.3g} s",
            f"DGL's DataLoader, the same model {theirs['epoch_s']:.3g} s",
            _ratios([theirs["epoch_s"] / ours["epoch_s"]]),
            f"{_link('train-cpu-mag-0.25')}, {_link('train-cpu-mag-0.25-no-relations')}"]


def _row_typed_peers() -> list[str]:
    loader, train = _load("peers-loader-cpu-mag"), _load("peers-train-cpu-mag")
    ours = train["pipelines"]["fused+pinned"]
    alone = loader["pipelines"]["fused+pinned"]["epoch_s"]
    names = {"pyg": "PyG's heterogeneous NeighborLoader", "graphbolt": "GraphBolt"}
    peers = [n for n in names if n in train["peers"] and n in loader["pipelines"]]
    accuracy = "; ".join(f"{n}'s {train['peers'][n]['val_acc']:.3f}" for n in peers)
    return ["heterogeneous, whole stacks, mag-sim 0.1, fanouts 25,20: the pipeline alone (no "
            "model), then training an epoch, each its own model (validation accuracy after 2 "
            f"epochs: ours, R-GCN, {ours['val_acc']:.3f}; the peers' SAGEConv per relation, "
            f"{accuracy}); PyG without pyg-lib",
            f"{alone:.3g} s / {ours['epoch_s']:.3g} s",
            "; ".join(f"{names[n]} {loader['pipelines'][n]['epoch_s']:.3g} s / "
                      f"{train['peers'][n]['epoch_s']:.3g} s" for n in peers),
            "; ".join(_ratios([loader["pipelines"][n]["epoch_s"] / alone,
                               train["peers"][n]["epoch_s"] / ours["epoch_s"]]) for n in peers),
            f"{_link('peers-loader-cpu-mag')}, {_link('peers-train-cpu-mag')}"]


def _row_weighted_sampling() -> list[str]:
    r = _load("weighted-sampling-cpu-products")
    ms, ratios = ({k: v["ms_per_batch"] for k, v in r["samplers"].items()}, r["ratios"])
    kinds = ("half-zero", "pareto")
    return ["weighted sampling (DGL's prob=...), the sampler alone, products-sim 1.0, fanouts "
            "15,10,5: weights uniform random with half zero (dgl#7462's) / Pareto(1.5); our "
            "uniform sampling of the same batches takes "
            f"{ms['fused/uniform']:.3g} ms, so ours costs "
            + " / ".join(f"{ratios[k]['cost_vs_our_uniform']:.2g}x" for k in kinds)
            + " of it (the issue's bound: 1.5x, less than this layout's reads alone cost on "
            "this machine: docs/weighted.md, Cost), DGL's "
            + " / ".join(f"{ratios[k]['dgl_fused_cost_vs_its_uniform']:.2g}x" for k in kinds)
            + " of its own",
            _pair([ms[f"fused/{k}"] for k in kinds]) + " ms",
            "DGL's NeighborSampler(prob=...) " + _pair([ms[f"dgl-fused/{k}"] for k in kinds])
            + " ms", _ratios([ratios[k]["speedup_vs_dgl_fused"] for k in kinds]),
            _link("weighted-sampling-cpu-products")]


def _row_temporal_sampling() -> list[str]:
    r = _load("temporal-sampling-cpu-products")
    ms, ratios = {k: v["ms_per_batch"] for k, v in r["samplers"].items()}, r["ratios"]
    return ["temporal sampling (PyG's edge_time, each seed on its own at its time), the sampler "
            "alone, products-sim 1.0 with random edge times, fanouts 15,10,5: seeds at random "
            "times / at the latest time (every edge a candidate); against our uniform sampling "
            f"({ms['uniform']:.3g} ms) and our disjoint sampling without times "
            f"({ms['disjoint']:.3g} ms: PyG's disjoint=True; the time filter alone costs "
            f"{ratios['temporal-all_cost_vs_disjoint']:.2g}x of it); excluding one in-edge of "
            "each seed (a link batch's positives) costs "
            f"{ratios['temporal-exclude_cost_vs_temporal']:.3g}x of temporal sampling, and "
            "picking by weight among the candidates (half the weights zero) "
            f"{ratios['temporal-weighted_cost_vs_temporal']:.3g}x; no peer "
            "runs here (PyG's needs pyg-lib, DGL has none)",
            _pair([ms["temporal"], ms["temporal-all"]]) + " ms",
            "our uniform sampling " + f"{ms['uniform']:.3g} ms",
            _ratios([1 / ratios["temporal_cost_vs_uniform"],
                     1 / ratios["temporal-all_cost_vs_uniform"]])
            + " (a cost of " + _pair([ratios["temporal_cost_vs_uniform"],
                                     ratios["temporal-all_cost_vs_uniform"]], ".3g")
            + "x; the issue's bound: 1.5x)",
            _link("temporal-sampling-cpu-products")]


def _link_summary(name: str) -> tuple[dict, float, float, str]:
    """(params, ours and DGL's median seconds a step, "ours / DGL's" val MRR per seed) of
    stored link-prediction result `name`."""
    r = _load(name)
    p, runs = r["params"], r["runs"]
    seeds = [str(s) for s in p["seeds"]]

    def median(pipeline: str) -> float:
        values = sorted(runs[pipeline][s]["s_per_step"] for s in seeds)
        return values[len(values) // 2]

    mrr = ", ".join(f"{runs['fused'][s]['val']['mrr']:.3f} / {runs['dgl'][s]['val']['mrr']:.3f}"
                    for s in seeds)
    return p, median("fused"), median("dgl"), mrr


def _row_link_prediction() -> list[str]:
    p, ours, dgl, mrr = _link_summary("link-prediction-cpu-citation")
    ratios = _load("link-prediction-cpu-citation")["ratios"]
    return [f"link prediction (ogbl-citation2's shape: citation-sim {p['scale']:g}), the same "
            f"GraphSAGE ({len(p['fanouts'])} layers, hidden {p['hidden']}) and OGB's scorer, "
            f"{p['steps']} steps, {p['num_negatives']} uniform negative a positive, reverses "
            f"excluded, {len(p['seeds'])} seeds; whole training step; validation MRR (1,000 "
            "negatives a query) ours / DGL's per seed: " + mrr,
            f"{ours:.3g} s a step",
            f"DGL's as_edge_prediction_sampler DataLoader {dgl:.3g} s a step",
            _ratios([ratios["speedup_vs_dgl"]]), _link("link-prediction-cpu-citation")]


def _row_typed_link_prediction() -> list[str]:
    p, ours, dgl, mrr = _link_summary("link-prediction-cpu-mag")
    ratios = _load("link-prediction-cpu-mag")["ratios"]
    src, name, dst = p["relation"]
    return [f"link prediction on one relation of a typed graph (mag-sim {p['scale']:g}: "
            f"{name}, {src} -> {dst}, {p['num_train_edges']:,} training edges, their twins in "
            f"the reverse relation excluded with them), the same R-GCN ({len(p['fanouts'])} "
            f"layers, hidden {p['hidden']}, learnt embeddings for the featureless types) and "
            f"OGB's scorer, {p['steps']} steps, {len(p['seeds'])} seeds; whole training step; "
            f"val MRR ({p['negatives_per_query']:,} negatives a query, {p['eval_method']} "
            "embeddings) ours / DGL's per seed: " + mrr,
            f"{ours:.3g} s a step",
            f"DGL's heterogeneous as_edge_prediction_sampler DataLoader {dgl:.3g} s a step",
            _ratios([ratios["speedup_vs_dgl"]]), _link("link-prediction-cpu-mag")]


def _first_steps(ours: dict, dgl: dict) -> str:
    """The first steps' seconds (the loader's start: the epoch's shuffle, the exclusion
    maps), where the result records them."""
    if "first_step_s" not in ours:
        return ""
    return f"; the first step alone: ours {ours['first_step_s']:.3g} s, DGL's " \
           f"{dgl['first_step_s']:.3g} s"


def _row_link_prediction_full() -> list[str]:
    r = _load("link-prediction-cpu-citation-full")
    p, runs = r["params"], r["runs"]
    ours, dgl = runs["fused"]["0"], runs["dgl"]["0"]
    return [f"link prediction at ogbl-citation2's size (citation-sim {p['scale']:g}: "
            f"{p['num_nodes']:,} nodes, {p['num_train_edges']:,} training edges), the same model "
            f"as above, {p['steps']} steps, one seed; median training step (the {p['steps']} "
            f"steps in all, first batch included: ours {ours['train_s']:.3g} s, DGL's "
            f"{dgl['train_s']:.3g} s{_first_steps(ours, dgl)}); then layer-wise "
            f"evaluation of {p['val_queries']:,} queries x 1,001 candidates: ours "
            f"{ours['val']['seconds']:.0f} s, val MRR {ours['val']['mrr']:.3f} (DGL's "
            f"{dgl['val']['mrr']:.3f})",
            f"{ours['s_per_step']:.3g} s a step",
            f"DGL's as_edge_prediction_sampler DataLoader {dgl['s_per_step']:.3g} s a step",
            _ratios([r["ratios"]["speedup_vs_dgl"]]), _link("link-prediction-cpu-citation-full")]


ROWS = (_row_sampling, _row_graphbolt_sampling, _row_loader, _row_training, _row_whole_stack,
        _row_graphbolt_training, _row_memory, _row_storage, _row_disk_training,
        _row_papers_sampling, _row_papers_training, _row_partitioned, _row_typed_sampling,
        _row_typed_loader, _row_typed_training, _row_typed_peers, _row_igbh_sampling,
        _row_igbh_disk,
        _row_weighted_sampling, _row_temporal_sampling, _row_link_prediction,
        _row_link_prediction_full, _row_typed_link_prediction)


def headline_table() -> str:
    lines = ["| what | ours | the other | ours faster | result (measured on) |",
             "| --- | --- | --- | --- | --- |"]
    lines += ["| " + " | ".join(row()) + " |" for row in ROWS]
    return "\n".join(lines)
