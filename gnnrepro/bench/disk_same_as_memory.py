"""`bench disk-training --same-as-memory`: the disk store trains the same model as the
in-memory store, bit for bit.

GraphSAGE trained with the features in memory and from the disk store, at a scale that fits
in memory, in this process: the same batches, rows and steps, so the final weights must be
equal bit for bit, and so the accuracies. The defaults are gnnrepro.config's
DISK_TRAINING_DEFAULTS (as `bench disk-training`'s) and SETTINGS.
"""
from __future__ import annotations

from typing import Any

import torch

from gnnrepro.config import DISK_TRAINING_DEFAULTS, SETTINGS

__all__ = ["format_same_as_memory", "same_as_memory"]

_D = DISK_TRAINING_DEFAULTS


def same_as_memory(*, dataset: str = _D.dataset, scale: float = 0.01, root: str | None = None,
                   fanouts: list[int] | None = None,
                   batch_size: int = SETTINGS["batch_size"].default, epochs: int = 3,
                   target_acc: float = 0.7, budget_fraction: float = _D.budget_fraction,
                   threads: int = 2, hidden: int = SETTINGS["hidden"].default,
                   seed: int = SETTINGS["seed"].default) -> dict[str, Any]:
    """Train the same GraphSAGE with the features in memory and from the disk store (at a
    scale that fits in memory), in this process: the final weights must be equal bit for bit
    (same batches, same rows, same steps), and so the accuracies; val accuracy after every
    epoch and the epochs each needed to reach `target_acc`."""
    from gnnrepro.datasets import load_scaled
    from gnnrepro.env import environment
    from gnnrepro.features import open_feature_store
    from gnnrepro.pipeline import Loader
    from gnnrepro.sampling import FusedSampler
    from gnnrepro.training import train
    fanouts = fanouts or list(_D.fanouts)
    torch.set_num_threads(threads)
    data = load_scaled(dataset, root, scale)
    budget = int(data.features.numel() * data.features.element_size() * budget_fraction)
    runs: dict[str, Any] = {}
    states = {}
    for kind in ("memory", "disk"):
        options = ({"hot_bytes": budget // 2, "cache_bytes": budget - budget // 2}
                   if kind == "disk" else {})
        store = open_feature_store(kind, data, share=False, **options)
        sampler = FusedSampler(data.graph, fanouts, seed=seed)
        with Loader(data, sampler, "cpu", batch_size, seed=seed, feature_store=store) as loader:
            result = train(data, loader, FusedSampler(data.graph, fanouts, seed=seed),
                           epochs=epochs, hidden=hidden, seed=seed, eval_every=1)
        val = [e.val_acc for e in result.epochs]
        runs[kind] = {"epoch_s": [e.epoch_s for e in result.epochs], "val_acc": val,
                      "test_acc": result.test_acc,
                      "epochs_to_target": next((i + 1 for i, a in enumerate(val)
                                                if a >= target_acc), None)}
        states[kind] = result.state
        if hasattr(store, "close"):
            store.close()
    identical = all(torch.equal(states["memory"][k], states["disk"][k]) for k in states["memory"])
    return {"benchmark": "disk-same-as-memory", "env": environment(),
            "params": {"dataset": dataset, "scale": scale, "fanouts": fanouts,
                       "batch_size": batch_size, "epochs": epochs, "target_acc": target_acc,
                       "budget_fraction": budget_fraction, "threads": threads,
                       "hidden": hidden, "seed": seed},
            "dataset": data.summary(), "weights_identical": identical, "runs": runs}


def format_same_as_memory(result: dict[str, Any]) -> str:
    """One line per store."""
    lines = [f"weights bit-identical after {result['params']['epochs']} epochs: "
             f"{result['weights_identical']}",
             f"{'store':7} {'epoch s':>8} {'val acc per epoch':>30} {'test acc':>8} "
             f"epochs to {result['params']['target_acc']}"]
    for name, r in result["runs"].items():
        val = " ".join(f"{a:.4f}" for a in r["val_acc"])
        lines.append(f"{name:7} {sum(r['epoch_s']) / len(r['epoch_s']):8.1f} {val:>30} "
                     f"{r['test_acc']:8.4f} {r['epochs_to_target']}")
    return "\n".join(lines)
