"""`python -m gnnrepro.training ...`: train one pipeline in this process, with checkpoints.

    python -m gnnrepro.training --pipeline fused+pinned --epochs 3 \\
        --checkpoint-dir ckpt --checkpoint-every 50          # stopped or killed: run again
    python -m gnnrepro.training --pipeline fused+pinned --epochs 3 \\
        --checkpoint-dir ckpt --checkpoint-every 50 --resume # the same final weights

The options are gnnrepro.config's settings (as for `python -m gnnrepro` and the torchrun entry
gnnrepro.distributed) plus the checkpoint options. It prints the run's summary and writes its
JSON to --out and its final weights to --weights (a torch file of tensors). SIGINT or SIGTERM
stops after the current step with a checkpoint written (exit status 128 + the signal); an error
is one line (exit status 2 for a bad argument or another run's checkpoint, 1 otherwise).
"""
from __future__ import annotations

import argparse
import dataclasses
import signal
import sys
from pathlib import Path

import torch

from gnnrepro.atomic import write_json_atomic
from gnnrepro.config import TrainConfig, add_options
from gnnrepro.datasets import load_scaled
from gnnrepro.errors import DEBUG_ENV, report_error
from gnnrepro.training.pipelines import run_training
from gnnrepro.training.resume import (TrainingStopped, add_checkpoint_options,
                                      checkpointing_from_args)

#: The TrainConfig fields, as options.
TRAIN_OPTIONS = [f.name for f in dataclasses.fields(TrainConfig)]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m gnnrepro.training",
                                description="train one pipeline, with checkpoints")
    add_options(p, ["dataset", "scale", "root", *TRAIN_OPTIONS])
    add_checkpoint_options(p)
    p.add_argument("--eval-every", type=int, default=None, metavar="EPOCHS",
                   help="validation accuracy every EPOCHS epochs (default: at the end)")
    p.add_argument("--out", type=Path, default=None, help="the result's JSON")
    p.add_argument("--weights", type=Path, default=None,
                   help="the final weights (torch.save of the model's state dict)")
    p.add_argument("--debug", action="store_true",
                   help=f"show the traceback of an error (or set {DEBUG_ENV}=1)")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        config = TrainConfig(**{name: getattr(args, name) for name in TRAIN_OPTIONS})
        checkpointing = checkpointing_from_args(args)
    except (TypeError, ValueError) as exc:
        parser.error(str(exc))
    try:
        dataset = load_scaled(args.dataset, args.root, args.scale)
        result = run_training(dataset, config, eval_every=args.eval_every,
                              checkpointing=checkpointing)
    except TrainingStopped as stopped:
        print(stopped, file=sys.stderr)
        return 128 + int(getattr(signal.Signals, stopped.signal_name, signal.SIGTERM))
    except Exception as exc:  # one line naming what is wrong (another run's checkpoint, ...)
        return report_error(parser.prog, exc, args.debug)
    print(result.summary())
    if args.out is not None:
        write_json_atomic(args.out, result.to_dict())
    if args.weights is not None:
        torch.save(result.state, args.weights)
    return 0


if __name__ == "__main__":
    sys.exit(main())
