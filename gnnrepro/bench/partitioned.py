"""`bench partitioned`: partitioned training on 1, 2, ... machines of this host (each a torchrun
agent told it is a different machine, loopback only), beside DGL's distributed pipeline.

For each machine count M the dataset is partitioned into M parts (METIS), then trained with
gnnrepro.distributed.partitioned under torchrun. `batch_size` is the global batch: each of the
M * G ranks takes ceil(batch_size / (M * G)) seeds per step, so every machine count takes about
the same optimizer steps and the accuracies are comparable (M = 1 is one machine's training).
Reported per M: the epoch times (slowest rank) and their median after the first, bytes each
rank sends per training batch (sampling requests and answers; feature requests and rows), the
fractions of sampled edges and of input rows that were remote, the share of the loader's work
hidden behind compute (loading_hidden_fraction), val/test accuracy, the
partition's statistics, and `blocks_identical`: each rank's first `digest_batches` batches,
sampled across the machines, against the single-machine FusedSampler on the same seeds and
batch ids. For each M, DGL's DistDGL (gnnrepro.bench.partitioned_dgl) runs the same training
and reports its figures, or the step that failed and why.

Both systems evaluate with sampled mini-batches across the machines, so the val and test
splits are each cut to a seeded subset of at most `eval_ids` ids (default: as many as the
training ids, which keeps an evaluation under a training epoch; ogbn-products' 2.2M test ids
would take several epochs), the same ids for both; the result records the sizes.
"""
from __future__ import annotations

import dataclasses
import json
import math
import statistics
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from gnnrepro.checks import check_int
from gnnrepro.bench.partitioned_dgl import run_distdgl
from gnnrepro.config import SETTINGS, TrainConfig
from gnnrepro.datasets import load_scaled
from gnnrepro.distributed.partitioned.local import run_local_machines
from gnnrepro.distributed.partitioned.train import block_digest
from gnnrepro.env import environment
from gnnrepro.eval_subset import eval_subset
from gnnrepro.partition import partition_dataset
from gnnrepro.sampling import FusedSampler

__all__ = ["format_table", "measure", "train_args"]


def train_args(config: TrainConfig) -> list[str]:
    """`config` as gnnrepro.distributed.partitioned's command-line options."""
    args = []
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if value is None:
            continue
        text = ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
        args += [f"--{f.name.replace('_', '-')}", text]
    return args


def measure(config: TrainConfig, *, dataset: str = SETTINGS["dataset"].default,
            scale: float = SETTINGS["scale"].default, root: str | None = None,
            machines: Sequence[int] = (1, 2), ranks_per_machine: int = 1,
            digest_batches: int = 2, dgl_baseline: bool = True,
            timeout_s: float = 1800.0, eval_ids: int | None = None) -> dict[str, Any]:
    """Run the benchmark (see the module doc) and return its JSON-ready result."""
    check_int("ranks_per_machine", ranks_per_machine, 1)
    check_int("digest_batches", digest_batches, 0)
    for m in machines:
        check_int("machines[i]", m, 1)
    data = load_scaled(dataset, root, scale)
    limit = data.train_idx.numel() if eval_ids is None else check_int("eval_ids", eval_ids, 1)
    data = dataclasses.replace(data, val_idx=eval_subset(data.val_idx, limit, config.seed),
                               test_idx=eval_subset(data.test_idx, limit, config.seed))
    single = FusedSampler(data.graph, list(config.fanouts), seed=config.seed)
    runs = []
    dgl: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="gnnrepro-partitioned-") as tmp:
        for m in machines:
            ranks = m * ranks_per_machine
            per_rank = dataclasses.replace(config, batch_size=math.ceil(config.batch_size / ranks))
            manifest = partition_dataset(data, m, Path(tmp) / f"parts-{m}")
            out = Path(tmp) / f"run-{m}.json"
            run_local_machines(m, ["--partition", str(Path(tmp) / f"parts-{m}"),
                                   "--dataset", dataset, "--scale", str(scale),
                                   *train_args(per_rank), "--digest-batches",
                                   str(digest_batches), "--out", str(out)],
                               ranks_per_machine=ranks_per_machine, timeout_s=timeout_s)
            result = json.loads(out.read_text())
            digests = [d for rank in result["digests_ranks"] for d in rank]
            same = [d["digest"] == block_digest(single.sample(torch.tensor(d["seeds"]),
                                                              d["batch_id"]))
                    for d in digests]
            epoch_s = [e["epoch_s"] for e in result["epochs"]]
            if dgl_baseline:
                (Path(tmp) / f"dgl-{m}").mkdir()
                dgl[str(m)] = run_distdgl(data, m, config, Path(tmp) / f"dgl-{m}",
                                          timeout_s=timeout_s, data_args={
                                              "name": dataset, "root": root, "scale": scale})
            runs.append({
                "machines": m, "ranks": ranks, "batch_size_per_rank": per_rank.batch_size,
                "epoch_s": statistics.median(epoch_s[1:] or epoch_s), "epochs": result["epochs"],
                "steps_per_epoch": result["steps_per_epoch"],
                "loading_hidden_fraction": _hidden(result["epochs"][1:] or result["epochs"]),
                "bytes_per_batch": result["bytes_per_batch"],
                "remote_edge_fraction": result["remote_edge_fraction"],
                "remote_row_fraction": result["remote_row_fraction"],
                "val_acc": result["val_acc"], "test_acc": result["test_acc"],
                "blocks_identical": all(same), "blocks_checked": len(same),
                "partition": {"stats": manifest["stats"], "parts": manifest["parts"]},
                "machine_ids": result["machines_ranks"]})
    return {"params": {**config.to_dict(), "dataset": dataset, "dataset_params": data.params,
                       "machines": list(machines), "ranks_per_machine": ranks_per_machine,
                       "digest_batches": digest_batches, "batch_size_is": "global",
                       "eval_ids": {"val": data.val_idx.numel(),
                                    "test": data.test_idx.numel(),
                                    "of": "a seeded subset of each split, the same for DGL"},
                       "network": "loopback (127.0.0.1), machines simulated on one host"},
            "runs": runs, "dgl": dgl, "env": environment()}


def _hidden(epochs: list[dict[str, Any]]) -> float:
    """The share of the loader's work (sampling and feature exchange) that ran while the
    model computed: 1 - waited / worked, over the given epochs and all ranks."""
    loading = [r for e in epochs for r in e["ranks_loading"]]
    work = sum(r["sample_work_s"] + r["extract_work_s"] for r in loading)
    return 1.0 - sum(r["wait_s"] for r in loading) / work if work else float("nan")


def format_table(result: dict[str, Any]) -> str:
    lines = ["machines  epoch_s  sampling_B/batch  features_B/batch  remote_edges  "
             "remote_rows  hidden  test_acc  blocks_identical"]
    for r in result["runs"]:
        b = r["bytes_per_batch"]
        lines.append(f"{r['machines']:>8}  {r['epoch_s']:7.3f}  {b['sampling']:16.0f}  "
                     f"{b['features']:16.0f}  {r['remote_edge_fraction']:12.3f}  "
                     f"{r['remote_row_fraction']:11.3f}  {r['loading_hidden_fraction']:6.2f}  "
                     f"{r['test_acc']:8.4f}  "
                     f"{r['blocks_identical']}")
    for m, dgl in result["dgl"].items():
        lines.append(f"dgl, {m} machine(s): " + (
            f"epoch_s {dgl['epoch_s']:.3f}, test_acc {dgl['test_acc']:.4f}, loopback "
            f"{dgl['loopback_bytes_per_step'] / 1e6:.2f} MB per step" if dgl["ran"]
            else f"not run - {dgl['step']}: {dgl['reason'][-200:]}"))
    return "\n".join(lines)
