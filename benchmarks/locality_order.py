"""Does relabelling node ids for locality speed up sampling? The lever issue 22 names, measured.

The fused sampler and DGL's fused sampler each sample the same seed batches (as node sets) from
the graph in its own id order and from copies relabelled by in-degree (descending), reverse
Cuthill-McKee, BFS from the largest hub and a random order (the control), interleaved in one
process. With `--graph sbm` the graph is instead a stochastic block model whose communities
(250 nodes, 90% of edges inside) are hidden by a random shuffle, and `ideal` (the communities
contiguous again) joins the orders: the best any locality order could do on it.

Beside the times it counts, per batch, the distinct cache lines of the node map and of indptr
that the batch touches, to show whether an order clusters what a batch reads.

    .venv/bin/python benchmarks/locality_order.py --scale 1.0 \
        --out benchmarks/results/locality-order-cpu.json
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch
from scipy.sparse import csgraph

from gnnrepro.baselines.dgl_import import set_dgl_threads
from gnnrepro.bench.sampling_speed import make_sampler, output_counts, seed_batches
from gnnrepro.bench.timing import summarize, time_interleaved
from gnnrepro.datasets import load
from gnnrepro.datasets.dataset import symmetric_csc
from gnnrepro.env import environment
from gnnrepro.graph import CSCGraph
from gnnrepro.sampling import FusedSampler

FANOUTS = [15, 10, 5]
SBM_COMMUNITY = 250
SBM_INSIDE = 0.9
SBM_PAIRS_PER_NODE = 25


def relabelled(graph: CSCGraph, order: np.ndarray) -> tuple[CSCGraph, np.ndarray]:
    """`graph` with node order[i] renamed i (lists sorted ascending again), and the old -> new
    id map."""
    n = graph.num_nodes
    indptr, indices = graph.indptr.numpy(), graph.indices.numpy()
    rank = np.empty(n, np.int64)
    rank[order] = np.arange(n)
    degree = np.diff(indptr)[order]
    new_indptr = np.zeros(n + 1, np.int64)
    np.cumsum(degree, out=new_indptr[1:])
    row = np.repeat(np.arange(n), degree)
    keys = row * n + rank[indices[np.arange(new_indptr[-1]) - new_indptr[row]
                                  + indptr[order][row]]]
    keys.sort()
    new_indices = (keys % n).astype(indices.dtype)
    return CSCGraph(torch.from_numpy(new_indptr), torch.from_numpy(new_indices),
                    validate=False), rank


def locality_orders(graph: CSCGraph, names: list[str]) -> dict[str, np.ndarray]:
    """The named orders (new id -> old id) of `graph`."""
    indptr, indices = graph.indptr.numpy(), graph.indices.numpy()
    n = graph.num_nodes
    degree = np.diff(indptr)
    adjacency = sp.csr_matrix((np.ones(indices.size, np.int8), indices, indptr), shape=(n, n))
    orders = {}
    for name in names:
        if name == "degree":
            orders[name] = np.argsort(-degree, kind="stable")
        elif name == "rcm":
            orders[name] = csgraph.reverse_cuthill_mckee(adjacency, symmetric_mode=True)
        elif name == "bfs":
            reached = csgraph.breadth_first_order(adjacency, int(np.argmax(degree)),
                                                  directed=False, return_predecessors=False)
            seen = np.zeros(n, bool)
            seen[reached] = True
            orders[name] = np.concatenate([reached, np.flatnonzero(~seen)])
        elif name == "random":
            orders[name] = np.random.default_rng(1).permutation(n)
        else:
            raise ValueError(f"unknown order {name!r}")
    return orders


def sbm_graph(num_nodes: int, seed: int) -> tuple[CSCGraph, np.ndarray]:
    """A shuffled stochastic block model and its ideal order (communities contiguous)."""
    rng = np.random.default_rng(seed)
    pairs = num_nodes * SBM_PAIRS_PER_NODE
    u = rng.integers(0, num_nodes, pairs)
    inside = rng.random(pairs) < SBM_INSIDE
    v = np.where(inside, u // SBM_COMMUNITY * SBM_COMMUNITY
                 + rng.integers(0, SBM_COMMUNITY, pairs), rng.integers(0, num_nodes, pairs))
    v = np.minimum(v, num_nodes - 1)
    shuffle = rng.permutation(num_nodes)
    u, v = shuffle[u], shuffle[v]
    keep = u != v
    return symmetric_csc(u[keep].astype(np.int32), v[keep].astype(np.int32), num_nodes), shuffle


def lines_touched(batch_nodes: list[torch.Tensor], per_line: int) -> float:
    """Mean distinct cache lines (of `per_line` entries) that the batches' nodes fall in."""
    return float(np.mean([np.unique(ids.numpy() // per_line).size for ids in batch_nodes]))


def main(argv: list[str] | None = None) -> int:
    """Relabel, sample interleaved, count what batches touch, write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graph", choices=("products-sim", "sbm"), default="products-sim")
    parser.add_argument("--scale", type=float, default=0.25)
    parser.add_argument("--orders", default="degree,rcm,bfs,random")
    parser.add_argument("--batches", type=int, default=48)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    set_dgl_threads(args.threads)
    if args.graph == "products-sim":
        data = load("products-sim", scale=args.scale)
        graph, train_idx = data.graph, data.train_idx
        names = args.orders.split(",")
        extra = {}
    else:
        num_nodes = round(2_449_029 * args.scale)
        graph, ideal = sbm_graph(num_nodes, seed=0)
        train_idx = torch.from_numpy(np.sort(np.random.default_rng(1).permutation(num_nodes)
                                             [:num_nodes // 12]))
        names = args.orders.split(",")
        extra = {"ideal": ideal}
    start = time.perf_counter()
    orders = locality_orders(graph, names) | extra
    order_s = time.perf_counter() - start
    batches = seed_batches(train_idx, 1024, args.batches, seed=0)
    graphs = {"as loaded": (graph, None)}
    for name, order in orders.items():
        new_graph, rank = relabelled(graph, order)
        graphs[name] = (new_graph, torch.from_numpy(rank))
    calls, counts = {}, {}
    for name, (g, rank) in graphs.items():
        for system in ("fused", "dgl-fused"):
            sample = make_sampler(system, g, FANOUTS, seed=0)
            calls[f"{system} / {name}"] = (
                lambda x, f=sample, r=rank: f(x[1] if r is None else r[x[1]], x[0]))
        # What one batch touches, in this order's ids (the fused sampler's output).
        sampler = FusedSampler(g, FANOUTS)
        samples = [sampler.sample(b if rank is None else rank[b], i)
                   for i, b in enumerate(batches[:8])]
        nodes = [mb.input_nodes for mb in samples]
        dsts = [mb.blocks[0].dst_nodes for mb in samples]
        counts[name] = {"map_lines_per_batch": lines_touched(nodes, 16),
                        "indptr_lines_per_batch": lines_touched(dsts, 8),
                        "input_nodes_per_batch": float(np.mean([t.numel() for t in nodes]))}
    edges: dict[str, int] = {}

    def observe(name: str, output) -> None:
        """Counts the sampled edges of every timed call (outside the timed region)."""
        edges[name] = edges.get(name, 0) + output_counts(output)[0]

    seconds = time_interleaved(calls, list(enumerate(batches)), warmup=3,
                               repeats=args.repeats, observe=observe)
    rows = {}
    for name, secs in seconds.items():
        ms = summarize(secs)["ms_median"]
        rows[name] = {"ms_per_batch": ms, "edges_per_s": edges[name] / len(secs) / ms * 1e3}
        print(f"{name:24s} {ms:7.2f} ms  {rows[name]['edges_per_s'] / 1e6:6.1f}M edges/s",
              flush=True)
    for name, c in counts.items():
        print(f"{name:12s} map lines {c['map_lines_per_batch']:9.0f}  indptr lines "
              f"{c['indptr_lines_per_batch']:8.0f}  input nodes {c['input_nodes_per_batch']:9.0f}")
    report = {"benchmark": "locality-order",
              "params": {"graph": args.graph, "scale": args.scale, "orders": list(orders),
                         "fanouts": FANOUTS, "batch_size": 1024, "batches": len(batches),
                         "repeats": args.repeats, "threads": args.threads,
                         "num_nodes": graph.num_nodes, "num_edges": graph.num_edges},
              "order_s": order_s, "samplers": rows, "touched": counts, "env": environment()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
