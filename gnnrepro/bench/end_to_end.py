"""`bench end-to-end`: end-to-end training of the named pipelines side by side (the paper's 1.80x).

Every pipeline trains the same model (same initial weights) for the same epochs on batches of
the same size, each in a fresh process of its own: peak memory is then per pipeline, and no
pipeline inherits another's warm caches, allocator state or workers. The dataset is
built (and cached) once before they start, so no pipeline pays for building it. With
`repeats` > 1 the pipelines run that many rounds, round r in row r of a Williams design
(bench.timing.williams_orders), so a slow spell of a shared machine does not land on one
pipeline only. The design balances (each pipeline follows each other equally often) when
`repeats` is a multiple of its rows: n for n pipelines if n is even, 2n if odd; fewer rounds
take its first rows (2 rounds of 3 pipelines: two rotations).

Reported per pipeline: epoch_s, the median epoch time over the epochs after the first (the
first includes start-up: workers, DGL's first-call allocations, page faults) pooled over
rounds, and speedup_vs_dgl from it; speedup_vs_dgl_rounds, the same ratio in each round alone
(its spread shows how far one round can be trusted); per-stage work and exposed seconds
(median per epoch, same epochs); accuracy of the first round, and with `target_acc` the
validation accuracy after every epoch of it and the epochs it took to reach target_acc (None:
not within the epochs run; "dgl-native" trains DGL's own model, so accuracy is where the whole
stacks differ); speedup_vs_dgl_native beside speedup_vs_dgl when "dgl-native" ran; peak RSS of the training
process (worker threads included, worker processes not: the training process's getrusage;
RUSAGE_CHILDREN would also count the pre-exec RSS of any subprocess it forks, such as the git
call that records the commit).

Peers (gnnrepro.peers: GraphBolt feeding DGL's SAGEConv, PyG's NeighborLoader feeding its
SAGEConv) train their own models with the same settings (epochs, batch size, fanouts, lr,
hidden, dropout, threads) in their own processes and environments, after our pipelines in each
round, scored on the validation ids after every epoch by their own samplers. They are reported
under `peers`, with speedup_vs_<peer> for every pipeline; one not set up, or that fails or
goes silent for timeout_s while training, is listed under peers_not_run with the reason.
"""
from __future__ import annotations

import resource
import statistics
import sys
from collections.abc import Sequence
from typing import Any

from gnnrepro.bench.timing import check_pipelines, round_orders, speedups
from gnnrepro.checks import check_fraction, check_int
from gnnrepro.config import (PIPELINES, SETTINGS, TrainConfig, resolve_device, resolve_threads,
                             validate)
from gnnrepro.datasets import load_scaled
from gnnrepro.env import environment
from gnnrepro.peers import PEERS, PeerFailed, PeerProcess, check_peers, open_peers
from gnnrepro.pipeline.spans import STAGES
from gnnrepro.supervisor import ChildFailed, Heartbeat, Supervisor, run_reporting
from gnnrepro.training import reduce_stages, run_training
from gnnrepro.training.loop import MODELS
from gnnrepro.training.profiler import WAIT_ABOVE_WORK

__all__ = ["format_table", "measure"]

def _train_one(name: str, config: TrainConfig, data_args: dict[str, Any],
               timeline_batches: int, eval_every: int | None, architecture: str | None,
               inbox: Any, outbox: Any) -> None:
    """Child process: train pipeline `name`, beating while it trains; send ("ok", summary)
    or ("error", traceback)."""
    def body() -> dict[str, Any]:
        data = load_scaled(**data_args)
        result = run_training(data, config.replace(pipeline=name), eval_every=eval_every,
                              timeline_batches=timeline_batches, heartbeat=Heartbeat(outbox),
                              architecture=architecture)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
        epochs = result.epochs
        return {
            "epochs": [{"epoch_s": e.epoch_s, "stages": e.stages, "wait_s": e.loader_wait_s,
                        "seeds_per_s": e.seeds_per_s, "loss": e.loss, "val_acc": e.val_acc,
                        "peak_gpu_mb": e.peak_gpu_mb} for e in epochs],
            "timeline": epochs[min(1, len(epochs) - 1)].timeline,
            "val_acc": result.val_acc, "test_acc": result.test_acc,
            "peak_rss_bytes": rss,
            "params": result.params}
    run_reporting(body, outbox)


def _run_child(name: str, config: TrainConfig, data_args: dict[str, Any],
               timeline_batches: int, eval_every: int | None,
               architecture: str | None = None) -> dict[str, Any]:
    """Run `_train_one` in a fresh spawned process, supervised (a child that dies, raises or
    sends nothing for config.timeout_s raises RuntimeError naming the pipeline)."""
    supervisor = Supervisor("spawn")
    try:
        supervisor.start(f"pipeline {name!r}", _train_one,
                         (name, config, data_args, timeline_batches, eval_every,
                          architecture))
        while True:
            for _, (_, payload) in supervisor.receive(1.0):
                return payload
            supervisor.check_silence([0], config.timeout_s)
    except ChildFailed as exc:
        raise RuntimeError(f"bench end-to-end failed: {exc}") from None
    finally:
        supervisor.stop()


def _steady(one_round: dict[str, Any]) -> list[dict[str, Any]]:
    """One round's epochs after the first (all of them if just one): the first pays start-up."""
    return one_round["epochs"][1:] or one_round["epochs"]


def _steady_median(one_round: dict[str, Any]) -> float:
    """Median epoch time of one round's steady epochs."""
    return statistics.median(e["epoch_s"] for e in _steady(one_round))


def epochs_to_reach(val_accs: list[float | None], target: float) -> int | None:
    """The number of epochs after which validation accuracy first reached `target` (None:
    it never did, or was not measured)."""
    for epoch, acc in enumerate(val_accs, start=1):
        if acc is not None and acc >= target:
            return epoch
    return None


def _summarize(rounds: list[dict[str, Any]], target_acc: float | None) -> dict[str, Any]:
    """Pool a pipeline's rounds: medians over the epochs after the first of every round."""
    steady = [e for r in rounds for e in _steady(r)]
    first = rounds[0]
    val_accs = [e.get("val_acc") for e in first["epochs"]]
    gpu_peaks = [e["peak_gpu_mb"] for e in steady if e["peak_gpu_mb"] is not None]
    return {
        "epoch_s": statistics.median(e["epoch_s"] for e in steady),
        "epochs_s": [e["epoch_s"] for r in rounds for e in r["epochs"]],
        "steady_epochs_s": [e["epoch_s"] for e in steady],  # those epoch_s is the median of
        "stages": reduce_stages([e["stages"] for e in steady], statistics.median),
        "wait_s": statistics.median(e["wait_s"] for e in steady),
        "seeds_per_s": statistics.median(e["seeds_per_s"] for e in steady),
        "loss": [e["loss"] for e in first["epochs"]],
        "val_acc": first["val_acc"], "test_acc": first["test_acc"],
        "val_acc_epochs": val_accs,
        "epochs_to_target": (None if target_acc is None
                             else epochs_to_reach(val_accs, target_acc)),
        "peak_rss_bytes": max(r["peak_rss_bytes"] for r in rounds),
        "peak_gpu_mb": max(gpu_peaks) if gpu_peaks else None,
        "timeline": first["timeline"],
        "loader": first["params"]["loader"],
        "eval_methods": first["params"].get("eval_methods", {}),
        "eval_counts": first["params"].get("eval_counts", {}),
    }


def _train_peer(peer: PeerProcess, config: TrainConfig) -> dict[str, Any]:
    """One round of a peer: train its model with `config`'s settings."""
    return peer.request("train", epochs=config.epochs, lr=config.lr, hidden=config.hidden,
                        dropout=config.dropout, device=resolve_device(config.device),
                        eval_ids=config.eval_ids)


def _summarize_peer(name: str, peer: PeerProcess, rounds: list[dict[str, Any]],
                    target_acc: float | None) -> dict[str, Any]:
    """A peer's rounds pooled as ours are: the median over the epochs after the first."""
    steady = [s for r in rounds for s in (r["epochs_s"][1:] or r["epochs_s"])]
    val_accs = rounds[0]["val_acc"]
    return {"label": PEERS[name].label, "versions": peer.opened["versions"],
            "threads": peer.opened["threads"], "epoch_s": statistics.median(steady),
            "epochs_s": [s for r in rounds for s in r["epochs_s"]],
            "loss": rounds[0]["loss"], "val_acc": val_accs[-1], "val_acc_epochs": val_accs,
            "epochs_to_target": (None if target_acc is None
                                 else epochs_to_reach(val_accs, target_acc)),
            "peak_rss_bytes": max(r["peak_rss_bytes"] for r in rounds),
            **({"test_acc": rounds[0]["test_acc"]} if "test_acc" in rounds[0] else {}),
            "eval_counts": rounds[0].get("eval_counts", {}),
            "evaluation": "the peer's own sampler (training fanouts) on the validation ids"
                          + (" and the test ids" if "test_acc" in rounds[0] else "")
                          + " (eval_counts: how many; eval_ids: our pipelines' subsets)"}


def measure(config: TrainConfig, *, dataset: str = SETTINGS["dataset"].default,
            scale: float = SETTINGS["scale"].default, root: str | None = None,
            pipelines: Sequence[str] = ("dgl", "fused", "fused+pinned"), repeats: int = 1,
            timeline_batches: int = 0, target_acc: float | None = None,
            peers: Sequence[str] = (), model: str | None = None) -> dict[str, Any]:
    """Train each pipeline with `config`'s settings (a fresh process each, `repeats` rounds);
    return the JSON-ready result: params, dataset, pipelines {name: summary},
    speedup_vs_dgl (and speedup_vs_dgl_native), env. With `target_acc` (in (0, 1]) every
    epoch is evaluated on the validation ids (after its timing ends). `model` (a MODELS key)
    is the model every pipeline trains, e.g. "dgl-sage": DGL's example model on DGL's loader
    ("dgl-native") and on ours, what a DGL user gains by changing the loader alone; None:
    each pipeline's own."""
    pipelines = check_pipelines(pipelines, PIPELINES)
    check_int("repeats", repeats, 1)
    check_int("timeline_batches", timeline_batches, 0)
    if target_acc is not None:
        check_fraction("target_acc", target_acc)
    check_peers(peers)
    if model is not None and model not in MODELS:
        raise ValueError(f"model must be one of {', '.join(MODELS)}, got {model!r}")
    eval_every = None if target_acc is None else 1
    data_args = {"name": validate("dataset", dataset), "root": root,
                 "scale": validate("scale", scale)}
    data = load_scaled(**data_args)  # built (and cached) once, before the children
    rounds: dict[str, list[dict[str, Any]]] = {name: [] for name in pipelines}
    peer_rounds: dict[str, list[dict[str, Any]]] = {name: [] for name in peers}
    orders = round_orders(pipelines, repeats)
    setup = {"dataset": data_args["name"], "root": root, "scale": data_args["scale"],
             "fanouts": list(config.fanouts), "batch_size": config.batch_size,
             "threads": resolve_threads(config.threads), "seed": config.seed}
    with open_peers(list(peers), setup) as (running, peers_not_run):
        for r, order in enumerate(orders):
            for name in order:
                print(f"bench end-to-end: round {r + 1}/{len(orders)}, {name}",
                      file=sys.stderr, flush=True)
                rounds[name].append(_run_child(name, config, data_args, timeline_batches,
                                               eval_every, model))
            for name, peer in list(running.items()):
                print(f"bench end-to-end: round {r + 1}/{len(orders)}, peer {name}",
                      file=sys.stderr, flush=True)
                try:
                    peer_rounds[name].append(_train_peer(peer, config))
                except PeerFailed as exc:  # a peer's failure is its result, not ours
                    peers_not_run[name] = f"failed in round {r + 1}: {exc}"[-2000:]
                    del running[name]
                    peer.close()
        peer_summaries = {name: _summarize_peer(name, peer, peer_rounds[name], target_acc)
                          for name, peer in running.items()}
    summaries = {name: _summarize(rounds[name], target_acc) for name in pipelines}
    epoch_s = {name: s["epoch_s"] for name, s in summaries.items()}
    everyone = epoch_s | {name: s["epoch_s"] for name, s in peer_summaries.items()}
    per_round = [speedups({name: _steady_median(rounds[name][r]) for name in pipelines})
                 for r in range(len(orders))]
    return {
        "benchmark": "end-to-end",
        "params": {**config.to_dict(), "dataset": dataset, "scale": scale, "root": root,
                   "threads": rounds[pipelines[0]][0]["params"]["threads"],
                   "resolved": {name: {key: rounds[name][0]["params"].get(key)
                                       for key in ("threads", "workers", "prefetch")}
                                for name in pipelines},
                   "pipelines": pipelines, "repeats": repeats, "round_orders": orders,
                   "timeline_batches": timeline_batches, "target_acc": target_acc,
                   "model": {name: rounds[name][0]["params"]["model"] for name in pipelines},
                   "model_option": model,
                   "optimizer": "Adam",
                   "evaluation": "eval_method (config): layer-wise full-neighbour inference "
                                 "or sampled mini-batches with the fused sampler (same fanouts); "
                                 "each pipeline's eval_methods says which per split"},
        "dataset": data.summary(),
        "pipelines": summaries,
        "speedup_vs_dgl": speedups(epoch_s),
        "speedup_vs_dgl_native": speedups(epoch_s, base="dgl-native"),
        "peers": peer_summaries,
        "peers_not_run": peers_not_run,
        **{f"speedup_vs_{name.replace('-', '_')}": speedups(everyone, base=name)
           for name in peer_summaries},
        # The same ratio in each round (its steady epochs' median): its spread shows how stable
        # the pooled figure is on this machine.
        "speedup_vs_dgl_rounds": {name: [r[name] for r in per_round] for name in pipelines}
        if "dgl" in pipelines else {},
        "env": environment(),
    }


def format_table(result: dict[str, Any]) -> str:
    """The stage breakdown (work/exposed seconds per epoch), epoch time, speedups, accuracy."""
    native = result.get("speedup_vs_dgl_native", {})
    target = result.get("params", {}).get("target_acc")
    head = (f"{'pipeline':<13} {'epoch s':>8} {'vs dgl':>7}"
            + (f" {'vs native':>9}" if native else "") + " "
            + " ".join(f"{s + ' w/e':>14}" for s in STAGES) + f" {'test acc':>9}"
            + (f" {'to ' + format(target, '.2f'):>8}" if target is not None else "")
            + f" {'peak RSS':>9}")
    lines = [head]
    over = []
    for name, r in result["pipelines"].items():
        cells = []
        for stage in STAGES:
            work, exposed = r["stages"][stage]["work_s"], r["stages"][stage]["exposed_s"]
            if exposed is not None and exposed > work:
                over.append(f"{name} {stage}")
            cells.append(f"{work:6.2f}/{'  -  ' if exposed is None else f'{exposed:5.2f}':>6}"
                         .rjust(14))
        speedup = result["speedup_vs_dgl"].get(name)
        reached = r.get("epochs_to_target")
        lines.append(f"{name:<13} {r['epoch_s']:8.2f} "
                     f"{'-' if speedup is None else f'{speedup:.2f}x':>7}"
                     + (f" {native[name]:8.2f}x" if native else "") + " "
                     + " ".join(cells) + f" {r['test_acc']:9.4f}"
                     + (f" {'-' if reached is None else reached:>8}"
                        if target is not None else "")
                     + f" {r['peak_rss_bytes'] / 2**30:7.2f}GB")
    for name, r in result.get("peers", {}).items():
        reached = r.get("epochs_to_target")
        lines.append(f"{name:<13} {r['epoch_s']:8.2f}  (peer: its own model; val acc "
                     f"{r['val_acc']:.4f}"
                     + (f", epochs to {target:.2f}: {'-' if reached is None else reached}"
                        if target is not None else "")
                     + f", peak RSS {r['peak_rss_bytes'] / 2**30:.2f}GB)")
        ours = result.get(f"speedup_vs_{name.replace('-', '_')}", {})
        lines.append(f"{'':<13} ours vs {name}: "
                     + ", ".join(f"{p} {ours[p]:.2f}x" for p in result["pipelines"]))
    for name, why in result.get("peers_not_run", {}).items():
        lines.append(f"{name:<13} not run: {why}")
    for name, ratios in result.get("speedup_vs_dgl_rounds", {}).items():
        if name != "dgl" and len(ratios) > 1:
            lines.append(f"{name} vs dgl per round: {min(ratios):.2f}x-{max(ratios):.2f}x "
                         f"(median {statistics.median(ratios):.2f}x)")
    lines.append("w/e: seconds of work / seconds the loop waited for it, per epoch"
                 + (f"; {', '.join(over)}: {WAIT_ABOVE_WORK}" if over else ""))
    if target is not None:
        lines.append(f"to {target:.2f}: epochs until validation accuracy first reached "
                     f"{target:.2f} (-: not within {len(r['val_acc_epochs'])})")
    return "\n".join(lines)
