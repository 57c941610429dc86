"""`bench link-prediction` (`measure`): link prediction trained on DGL's edge-prediction
DataLoader and on ours, side by side, the same model and negatives scheme.

Per seed and pipeline (the order alternates between seeds): GraphSAGE (one layer per fanout,
`hidden` wide, no dropout) as the encoder and OGB's citation2 scorer (LinkPredictor, 3 layers)
are built from the seed, trained with Adam for `steps` steps on edge batches of the training
edges (the forward ids; `num_negatives` uniform negatives per positive; each batch's edges and
their reverses excluded from its sampled graph, DGL's exclude="reverse_id"), then evaluated on
the validation and test queries (1,000 fixed negatives each on citation-sim) by OGB's MRR and
Hits@K, with embeddings computed layer-wise over every neighbour (or by sampled blocks:
`eval_method`), the same evaluation for both. Reported: median seconds a step (loader wait
included), the ratio DGL / ours per seed, and each pipeline's MRR per seed.

On a typed dataset (`--dataset mag-sim --relation cites`) the task is one relation: its edges
are held out as citation-sim's are, with their reverse twins
(gnnrepro.datasets.typed_link_dataset), the encoder is R-GCN (learnt embeddings for the
featureless types) and each batch excludes its edges and their twins in the reverse relation;
DGL's side is its heterogeneous edge-prediction loader (exclude="reverse_types":
gnnrepro.linkpred.dgl_typed_link_loader).
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import torch

from gnnrepro.config import resolve_threads
from gnnrepro.datasets import (TYPED_DATASETS, TypedDataset, TypedLinkDataset, hold_out_relation,
                               load_scaled)
from gnnrepro.env import environment
from gnnrepro.linkpred import LinkPredictor, LinkSampler, evaluate_link, train_link
from gnnrepro.models.graphsage import GraphSAGE
from gnnrepro.models.rgcn import RGCN
from gnnrepro.pipeline.loader import Loader
from gnnrepro.pipeline.plan import BatchPlan
from gnnrepro.sampling import FusedSampler

PIPELINES = ("fused", "dgl")


def _loader(pipeline: str, data: Any, fanouts: list[int], batch_size: int, num_negatives: int,
            seed: int) -> Any:
    """The pipeline's edge batches over the forward training edges (or the relation's),
    reverses excluded."""
    train = torch.arange(data.num_train_edges)
    if pipeline == "dgl" and isinstance(data, TypedLinkDataset):
        from gnnrepro.linkpred.dgl_typed_link_loader import DGLTypedLinkLoader  # DGL if measured
        return DGLTypedLinkLoader(data, fanouts, batch_size, num_negatives, seed=seed)
    if pipeline == "dgl":
        from gnnrepro.linkpred.dgl_link_loader import DGLLinkLoader  # imports DGL when measured
        return DGLLinkLoader(data.graph, data.features, train, fanouts, batch_size,
                             num_negatives, exclude="reverse_id",
                             reverse_eids=data.reverse_eids, seed=seed)
    if isinstance(data, TypedLinkDataset):  # the relation's edge i is training edge i
        edges, relation = (data.train_src, data.train_dst), data.relation
        exclude = "self" if data.reverse is None else "reverse_id"
    else:  # the graph holds both directions: edge i + E is edge i's reverse
        edges = (torch.cat([data.train_src, data.train_dst]),
                 torch.cat([data.train_dst, data.train_src]))
        relation, exclude = None, "reverse_id"
    link = LinkSampler(FusedSampler(data.graph, fanouts, seed=seed), edges, num_negatives,
                       exclude=exclude, reverse_eids=data.reverse_eids, relation=relation,
                       seed=seed)
    return Loader(data, link, "cpu", batch_size, seed=seed,
                  plan=BatchPlan(data.num_train_edges, batch_size, seed=seed),
                  labels=data.labels)


def _run(pipeline: str, data: Any, fanouts: list[int], batch_size: int, num_negatives: int,
         hidden: int, steps: int, lr: float, seed: int, eval_method: str) -> dict:
    torch.manual_seed(seed)
    if isinstance(data, TypedDataset):
        encoder = RGCN.for_dataset(data, embed_dim=hidden, hidden=hidden, out_dim=hidden,
                                   num_layers=len(fanouts), dropout=0.0)
    else:
        encoder = GraphSAGE(data.num_features, hidden, hidden, num_layers=len(fanouts),
                            dropout=0.0)
    predictor = LinkPredictor(hidden, hidden, num_layers=3)
    loader = _loader(pipeline, data, fanouts, batch_size, num_negatives, seed)
    start = time.perf_counter()
    trained = train_link(loader, encoder, predictor, epochs=10**6, max_steps=steps, lr=lr)
    train_s = time.perf_counter() - start
    if hasattr(loader, "close"):
        loader.close()
    eval_sampler = FusedSampler(data.graph, fanouts, seed=seed)
    val = evaluate_link(encoder, predictor, data, "val", eval_sampler, eval_method)
    test = evaluate_link(encoder, predictor, data, "test", eval_sampler, eval_method)
    step_s = sorted(trained.step_s[1:] or trained.step_s)  # the first step starts the loader
    return {"steps": trained.steps, "train_s": train_s, "first_step_s": trained.step_s[0],
            "s_per_step": step_s[len(step_s) // 2], "final_loss": trained.losses[-1],
            "val": val, "test": test}


def measure(dataset: str = "citation-sim", scale: float = 0.05, root: str | None = None,
            fanouts: Sequence[int] = (15, 10), batch_size: int = 1024, num_negatives: int = 1,
            hidden: int = 64, steps: int = 300, lr: float = 0.01,
            seeds: Sequence[int] = (0, 1, 2), pipelines: Sequence[str] | None = None,
            eval_method: str = "layerwise", threads: int | None = None,
            relation: str | None = None) -> dict:
    """Train and evaluate each pipeline per seed (default: both; on a typed dataset
    `relation` names the predicted relation); see the module docstring."""
    typed = dataset in TYPED_DATASETS
    if typed != (relation is not None):
        raise ValueError(f"relation names the predicted relation of a typed dataset "
                         f"({', '.join(TYPED_DATASETS)}), and only there; got dataset "
                         f"{dataset!r} and relation {relation!r}")
    if pipelines is None:
        pipelines = PIPELINES
    threads = resolve_threads(threads)
    torch.set_num_threads(threads)
    data = load_scaled(dataset, root, scale)
    if typed:
        data = hold_out_relation(data, relation)
    fanouts = [int(f) for f in fanouts]
    runs: dict[str, dict[str, dict]] = {p: {} for p in pipelines}
    for i, seed in enumerate(seeds):
        order = list(pipelines) if i % 2 == 0 else list(reversed(pipelines))
        for pipeline in order:
            runs[pipeline][str(seed)] = _run(pipeline, data, fanouts, batch_size, num_negatives,
                                             hidden, steps, lr, seed, eval_method)
    result: dict = {
        "benchmark": "link-prediction",
        "params": {"dataset": dataset, "scale": scale, "fanouts": fanouts,
                   "batch_size": batch_size, "num_negatives": num_negatives, "hidden": hidden,
                   "steps": steps, "lr": lr, "seeds": list(seeds), "threads": threads,
                   "eval_method": eval_method,
                   "exclude": "self" if data.reverse_eids is None else "reverse_id",
                   "relation": list(data.relation) if typed else None,
                   "num_nodes": data.graph.num_nodes, "num_train_edges": data.num_train_edges,
                   "val_queries": int(data.val_src.numel()),
                   "negatives_per_query": int(data.val_neg.shape[1])},
        "runs": runs,
    }
    if {"fused", "dgl"} <= set(pipelines):
        per_seed = [runs["dgl"][str(s)]["s_per_step"] / runs["fused"][str(s)]["s_per_step"]
                    for s in seeds]
        mrr_gap = [runs["fused"][str(s)]["val"]["mrr"] - runs["dgl"][str(s)]["val"]["mrr"]
                   for s in seeds]
        result["ratios"] = {"speedup_vs_dgl_per_seed": per_seed,
                            "speedup_vs_dgl": sorted(per_seed)[len(per_seed) // 2],
                            "val_mrr_ours_minus_dgl_per_seed": mrr_gap,
                            "val_mrr_ours_minus_dgl_mean": sum(mrr_gap) / len(mrr_gap)}
    result["env"] = environment()
    return result


def format_table(result: dict) -> str:
    """A fixed-width table of the result for the terminal."""
    lines = [f"{'pipeline':<8} {'seed':>4} {'s/step':>8} {'val MRR':>8} {'test MRR':>8} "
             f"{'hits@10':>8} {'eval s':>7}"]
    for pipeline, by_seed in result["runs"].items():
        for seed, r in by_seed.items():
            lines.append(f"{pipeline:<8} {seed:>4} {r['s_per_step']:8.3f} {r['val']['mrr']:8.4f} "
                         f"{r['test']['mrr']:8.4f} {r['test']['hits@10']:8.4f} "
                         f"{r['val']['seconds']:7.1f}")
    if "ratios" in result:
        r = result["ratios"]
        lines.append(f"ours faster than DGL: {r['speedup_vs_dgl']:.2f}x (per seed "
                     + ", ".join(f"{v:.2f}x" for v in r["speedup_vs_dgl_per_seed"])
                     + f"); val MRR ours - DGL: {r['val_mrr_ours_minus_dgl_mean']:+.4f}")
    return "\n".join(lines)
