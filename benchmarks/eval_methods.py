"""Evaluation methods side by side: one model trained for `--epochs`, then its test (and val)
accuracy by layer-wise full-neighbour inference and by sampled mini-batches, each timed, beside
the time of a training epoch (the issue's bound: an evaluation costs no more than one epoch).
`--architecture dgl-sage` trains DGL's example model instead (a caller's model of dgl.nn
layers, evaluated layer-wise through its forward_layer: gnnrepro.training.layer_by_layer).

    .venv/bin/python benchmarks/eval_methods.py --scale 1.0 --out benchmarks/results/eval-methods-cpu.json
    .venv/bin/python benchmarks/eval_methods.py --scale 1.0 --architecture dgl-sage \
        --out benchmarks/results/eval-methods-dgl-cpu.json
"""
from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

import torch

from gnnrepro.config import TrainConfig, resolve_threads
from gnnrepro.datasets import load
from gnnrepro.env import environment
from gnnrepro.sampling import FusedSampler
from gnnrepro.training import accuracy, run_training
from gnnrepro.training.loop import MODELS, build_model


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--architecture", choices=sorted(MODELS), default="graphsage")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    torch.set_num_threads(resolve_threads(args.threads))
    start = time.perf_counter()
    dataset = load("products-sim", scale=args.scale)
    load_s = time.perf_counter() - start
    config = TrainConfig(pipeline="fused+pinned", epochs=args.epochs, threads=args.threads,
                         eval_method="layerwise")
    result = run_training(dataset, config, architecture=args.architecture)
    model = build_model(dataset, len(config.fanouts), config.hidden, config.dropout,
                        config.seed, torch.device("cpu"), args.architecture)
    model.load_state_dict(result.state)
    layout = MODELS[args.architecture][2]
    evaluator = FusedSampler(dataset.graph, list(config.fanouts), seed=config.seed)
    rows = {}
    for split in ("val", "test"):
        ids = getattr(dataset, f"{split}_idx")
        for method in ("layerwise", "sampled"):
            t0 = time.perf_counter()
            acc = accuracy(model, dataset, evaluator, ids, torch.device("cpu"),
                           config.eval_batch_size, method=method, layout=layout)
            seconds = time.perf_counter() - t0
            rows[f"{split}/{method}"] = {"ids": ids.numel(), "accuracy": acc,
                                         "seconds": seconds}
            print(f"{split:4s} {method:9s} {ids.numel():8d} ids  acc {acc:.4f}  "
                  f"{seconds:7.1f} s", flush=True)
    epoch_s = [e.epoch_s for e in result.epochs]
    report = {"params": {"dataset": "products-sim", "scale": args.scale, "epochs": args.epochs,
                         "architecture": args.architecture, "model": result.params["model"],
                         "config": config.to_dict(), "threads": torch.get_num_threads()},
              "load_s": load_s, "epoch_s": epoch_s, "evaluations": rows,
              "test_layerwise_over_epoch": rows["test/layerwise"]["seconds"] / min(epoch_s),
              "test_sampled_over_epoch": rows["test/sampled"]["seconds"] / min(epoch_s),
              "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
              "env": environment()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k not in ("env", "params")}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
