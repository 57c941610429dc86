"""`bench loader`: the mini-batch pipeline alone, as a GPU trainer would see it.

What a GPU user's epoch costs outside the model: the time to deliver every batch of an epoch
ready for compute (sampled blocks plus gathered features, and with CUDA on the device), with
the model step replaced by nothing or by a busy-wait of `step_ms` per batch, a stand-in for a
GPU's forward and backward (not a model; the JSON says so). On a CPU machine the model takes
most of an epoch and hides what the pipeline does; here nothing hides it.

DGL's DataLoader (its NeighborSampler with its own feature slicing, iterated natively, as a
DGL user's loop sees it) and our pipelines deliver the same number of batches of the same size
in one process, each with its loader built once (workers started, caches warm) and one
untimed warm-up epoch; then `rounds` rounds, one epoch per pipeline per round, in Williams
orders. Reported per pipeline: the median epoch time over rounds, batches/s and the spread.

With no stand-in step (step_ms 0) nothing runs on the trainer's thread but the hand-over, so
`workers` None gives fused+pinned one worker per thread (`threads`), the cores DGL's loader
and the serial pipelines sample with; with a step, workers are resolved as for training
(gnnrepro.config.resolve_workers). The JSON records what was used.

Peers (gnnrepro.peers: GraphBolt's ItemSampler -> sample_neighbor -> fetch_feature on its
DataLoader, PyG's NeighborLoader) deliver the same epochs (same training ids, batch size,
fanouts and threads, no worker processes, as their examples run on a CPU) from their own
processes, one epoch per round after ours, with an untimed warm-up epoch first; they run only
with no stand-in step. One that is not set up is listed under peers_not_run.
"""
from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Iterator, Sequence
from typing import Any

import torch

from gnnrepro.bench.timing import check_pipelines, round_orders, speedups
from gnnrepro.checks import check_int
from gnnrepro.config import PIPELINES, SETTINGS, TrainConfig, resolve_threads, validate
from gnnrepro.datasets import load_scaled
from gnnrepro.env import environment
from gnnrepro.peers import PEERS, check_peers, open_peers
from gnnrepro.progress import Progress
from gnnrepro.training import make_loader

__all__ = ["STEP_NOTE", "format_table", "measure"]

STEP_NOTE = ("step_ms is a fixed busy-wait per batch standing in for a GPU model step; no model "
             "runs in this benchmark")


def _busy_wait(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def _epoch(loader: Any, name: str, step_s: float) -> tuple[float, int]:
    """(seconds, batches) for one epoch of `loader`, with the stand-in step per batch."""
    batches: Iterator = loader.native_epoch() if name == "dgl" else iter(loader)
    cuda = loader.device.type == "cuda"
    count = 0
    start = time.perf_counter()
    for batch in batches:
        if cuda:  # the batch is ready for compute once its copies are done
            torch.cuda.current_stream(loader.device).synchronize()
        _busy_wait(step_s)
        count += 1
        del batch  # frees its staging slot before the next batch is prepared
    return time.perf_counter() - start, count


def measure(config: TrainConfig, *, dataset: str = SETTINGS["dataset"].default,
            scale: float = SETTINGS["scale"].default, root: str | None = None,
            pipelines: Sequence[str] = ("dgl", "fused", "fused+pinned"), rounds: int = 5,
            step_ms: float = 0.0, peers: Sequence[str] = ()) -> dict[str, Any]:
    """Time each pipeline's loader, and each of `peers`', over whole epochs (see the module
    doc); return the JSON-ready result: params, dataset, pipelines {name: {epoch_s,
    batches_per_s, epochs_s, batches}} (peers among them), peers_not_run, speedup_vs_dgl,
    env."""
    pipelines = check_pipelines(pipelines, PIPELINES)
    check_int("rounds", rounds, 1)
    if isinstance(step_ms, bool) or not isinstance(step_ms, (int, float)) or step_ms < 0:
        raise ValueError(f"step_ms must be a number >= 0, got {step_ms!r}")
    check_peers(peers)
    if peers and step_ms:
        raise ValueError("peers run with no stand-in step: use step_ms=0 with peers")
    data = load_scaled(validate("dataset", dataset), root, validate("scale", scale))
    threads = resolve_threads(config.threads)
    torch.set_num_threads(threads)
    if config.workers is None and step_ms == 0:  # the trainer's core is free: see the doc
        config = config.replace(workers=threads)
    seconds: dict[str, list[float]] = {name: [] for name in [*pipelines, *peers]}
    counts: dict[str, int] = {}
    setup = {"dataset": dataset, "root": root, "scale": scale, "fanouts": list(config.fanouts),
             "batch_size": config.batch_size, "threads": threads, "seed": config.seed}
    with contextlib.ExitStack() as stack:
        loaders = {name: stack.enter_context(contextlib.closing(
            make_loader(data, config.replace(pipeline=name)))) for name in pipelines}
        running, peers_not_run = stack.enter_context(open_peers(list(peers), setup))
        orders = round_orders(pipelines, rounds)
        with Progress("bench loader", total=(len(pipelines) + len(running)) * (rounds + 1),
                      unit="epoch") as progress:
            for name, loader in loaders.items():  # warm-up: workers started, first-call costs
                _epoch(loader, name, step_ms / 1e3)
                progress.update(note=f"{name} warm-up")
            for name, peer in running.items():
                peer.request("loader_epoch", epoch=0)
                progress.update(note=f"{name} warm-up")
            for index, order in enumerate(orders):
                for name in order:
                    epoch_s, counts[name] = _epoch(loaders[name], name, step_ms / 1e3)
                    seconds[name].append(epoch_s)
                    progress.update(note=f"round {index + 1}/{rounds}: {name} {epoch_s:.2f} s")
                for name, peer in running.items():
                    reply = peer.request("loader_epoch", epoch=index + 1)
                    seconds[name].append(reply["seconds"])
                    counts[name] = reply["batches"]
                    progress.update(note=f"round {index + 1}/{rounds}: {name} "
                                         f"{reply['seconds']:.2f} s")
        described = {name: repr(loader) for name, loader in loaders.items()}
        described |= {name: PEERS[name].label for name in running}
        resolved = {name: {"workers": getattr(loader, "workers", 0),
                           "prefetch": getattr(loader, "prefetch", None)}
                    for name, loader in loaders.items()}
        resolved |= {name: {"workers": 0, "threads": peer.opened["threads"]}
                     for name, peer in running.items()}
        peer_versions = {name: peer.opened["versions"] for name, peer in running.items()}
    summaries = {}
    for name in [*pipelines, *running]:
        epoch_s = statistics.median(seconds[name])
        summaries[name] = {"epoch_s": epoch_s, "epochs_s": seconds[name],
                           "batches": counts[name], "batches_per_s": counts[name] / epoch_s,
                           "epoch_s_min": min(seconds[name]), "epoch_s_max": max(seconds[name]),
                           "loader": described[name]}
    return {
        "benchmark": "loader",
        "params": {**config.to_dict(), "threads": threads, "dataset": dataset, "scale": scale,
                   "root": root, "pipelines": pipelines, "rounds": rounds,
                   "round_orders": orders, "step_ms": step_ms, "step_note": STEP_NOTE,
                   "resolved": resolved, "peers": list(peers)},
        "dataset": data.summary(),
        "pipelines": summaries,
        "peer_versions": peer_versions,
        "peers_not_run": peers_not_run,
        "speedup_vs_dgl": speedups({name: s["epoch_s"] for name, s in summaries.items()}),
        "env": environment(),
    }


def format_table(result: dict[str, Any]) -> str:
    """Epoch time (median, min-max over rounds), batches/s and speedup per pipeline."""
    lines = [f"{'pipeline':<13} {'epoch s':>8} {'min-max':>13} {'batches/s':>10} {'vs dgl':>7}",
             *(f"{name:<13} {r['epoch_s']:8.3f} "
               f"{r['epoch_s_min']:6.3f}-{r['epoch_s_max']:<6.3f} {r['batches_per_s']:10.1f} "
               f"{result['speedup_vs_dgl'].get(name, float('nan')):6.2f}x"
               for name, r in result["pipelines"].items())]
    for name, why in result.get("peers_not_run", {}).items():
        lines.append(f"{name:<13} not run: {why}")
    step = result["params"]["step_ms"]
    lines.append(f"model step: {'none' if not step else f'{step} ms busy-wait (stand-in)'}")
    return "\n".join(lines)
