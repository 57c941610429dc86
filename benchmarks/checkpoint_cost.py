"""What checkpoints cost at ogbn-products' size: one epoch of fused+pinned on products-sim 1.0
without checkpoints and with one every 10 and every 50 steps and at the epoch's end, in one
process on one loaded dataset; each checkpoint's time (gathered, encoded, written, fsynced,
renamed) and their share of the epoch; then the time to resume from the last one.

    .venv/bin/python benchmarks/checkpoint_cost.py \
        --out benchmarks/results/checkpoint-cost-cpu.json

The share is the checkpoints' own measured seconds over the epoch's; the epochs' wall times
are also recorded side by side, but runs differ by several percent here, more than the
checkpoints cost, so they do not measure it.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gnnrepro.atomic import write_json_atomic  # noqa: E402
from gnnrepro.datasets import load  # noqa: E402
from gnnrepro.env import environment  # noqa: E402
from gnnrepro.training import Checkpointing, train_pipeline  # noqa: E402

FANOUTS = [15, 10, 5]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--every", default="off,10,50,epoch",
                        help="checkpoint intervals in steps, 'epoch' or 'off', comma-separated")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    dataset = load("products-sim", scale=args.scale)
    settings = {"epochs": 1, "batch_size": 1024, "threads": args.threads}
    runs = []
    with tempfile.TemporaryDirectory(prefix="gnnrepro-ckpt-cost-") as tmp:
        for every in args.every.split(","):
            directory = Path(tmp) / every
            checkpointing = (None if every == "off" else
                             Checkpointing(directory, None if every == "epoch" else int(every)))
            print(f"checkpoint_cost: every {every}", file=sys.stderr, flush=True)
            result = train_pipeline("fused+pinned", dataset, FANOUTS,
                                    checkpointing=checkpointing, **settings)
            epoch = result.epochs[0]
            saves = result.params.get("checkpoint", {}).get("save_s", [])
            sizes = sorted(p.stat().st_size for p in directory.glob("*.ckpt")) if saves else []
            runs.append({"every": every, "epoch_s": epoch.epoch_s, "checkpoints": len(saves),
                         "save_s": saves, "checkpoint_bytes": sizes[-1] if sizes else None,
                         "share_of_epoch": sum(saves) / epoch.epoch_s, "loss": epoch.loss,
                         "test_acc": result.test_acc})
        last = runs[-1]["every"]
        began = time.perf_counter()
        resumed = train_pipeline("fused+pinned", dataset, FANOUTS,
                                 checkpointing=Checkpointing(Path(tmp) / last, resume=True),
                                 **settings)
        resume = {"from": last, "restore_s": resumed.params["checkpoint"]["restore_s"],
                  "call_s": time.perf_counter() - began,  # loader, restore, evaluation
                  "same_test_acc": resumed.test_acc == runs[-1]["test_acc"]}
    report = {"params": {"dataset": dataset.name, "dataset_params": dict(dataset.params),
                         "pipeline": "fused+pinned", "fanouts": FANOUTS, **settings},
              "steps_per_epoch": -(-dataset.train_idx.numel() // settings["batch_size"]),
              "runs": runs, "resume": resume, "env": environment()}
    write_json_atomic(args.out, report)
    for run in runs:
        print(f"every {run['every']}: epoch {run['epoch_s']:.1f} s, {len(run['save_s'])} "
              f"checkpoints, {run['share_of_epoch']:.2%} of the epoch", file=sys.stderr)
    print(f"resume: {resume['restore_s']:.3f} s to restore", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
