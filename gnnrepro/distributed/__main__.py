"""`torchrun ... -m gnnrepro.distributed ...`: the same data-parallel training under torchrun.

torchrun starts the ranks and sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT
(env:// rendezvous), so one command scales to several machines with torchrun's own options
(--nnodes, --node-rank, --rdzv-endpoint, ...); torchrun watches its ranks and stops them all when
one fails. The lowest rank of each machine loads the dataset (from the $GNNREPRO_DATA cache
once built) into shared memory, and the machine's other ranks and all sampling workers map those
pages (gnnrepro.distributed.machine_share): one copy per machine, as with
gnnrepro.distributed.launch. The options are gnnrepro.config's settings, as for
`python -m gnnrepro`; --batch-size is per rank.

Rank 0 prints the result and writes it as JSON to --out (and the final weights to --weights).
With --checkpoint-dir the ranks write checkpoints together and --resume goes on from the newest
valid one (gnnrepro.training.resume): with torchrun's --max-restarts, a group restarted after a
rank died goes on from there when the command has --resume (which starts from the beginning
while there is no checkpoint yet).
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import sys
from pathlib import Path

import torch
import torch.distributed as dist

from gnnrepro.atomic import write_json_atomic
from gnnrepro.config import TrainConfig, add_options
from gnnrepro.datasets import load_scaled
from gnnrepro.distributed.machine_share import share_on_machine
from gnnrepro.distributed.memory import tree_memory
from gnnrepro.distributed.rank import exit_rank, init_process_group, train_rank
from gnnrepro.env import environment
from gnnrepro.training.resume import (TrainingStopped, add_checkpoint_options,
                                      checkpointing_from_args)

#: The TrainConfig fields, as options (every setting a rank trains with).
TRAIN_OPTIONS = [f.name for f in dataclasses.fields(TrainConfig)]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="torchrun --nproc-per-node N -m gnnrepro.distributed")
    add_options(p, ["dataset", "scale", "root", *TRAIN_OPTIONS])
    add_checkpoint_options(p)
    p.add_argument("--out", type=Path, default=None, help="JSON file rank 0 writes")
    p.add_argument("--weights", type=Path, default=None,
                   help="the final weights rank 0 writes (torch.save of the state dict)")
    return p


def _memory() -> dict:
    """Every rank samples its own process tree at once; the totals are summed over all ranks
    (over every machine of a multi-node run)."""
    dist.barrier()
    mine = tree_memory()
    everyone: list[dict] = [{} for _ in range(dist.get_world_size())]
    dist.all_gather_object(everyone, mine)
    dist.barrier()
    return {key: sum(m[key] for m in everyone) for key in mine if key.endswith("_bytes")}


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    config = TrainConfig(**{name: getattr(args, name) for name in TRAIN_OPTIONS})
    try:
        checkpointing = checkpointing_from_args(args)
    except ValueError as exc:
        parser.error(str(exc))
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    init_process_group(config, rank, world_size, int(os.environ["LOCAL_RANK"]))
    try:
        dataset, how = share_on_machine(
            lambda: load_scaled(args.dataset, args.root, args.scale))
        result = train_rank(config, dataset, _memory, checkpointing=checkpointing)
        shared: list[str] = [""] * world_size
        dist.all_gather_object(shared, how)
    except TrainingStopped as stopped:
        if rank == 0:
            print(stopped, file=sys.stderr)
        return 128 + int(getattr(signal.Signals, stopped.signal_name, signal.SIGTERM))
    finally:
        dist.destroy_process_group()
    if rank == 0:
        if args.weights is not None:
            torch.save({k: torch.from_numpy(v) for k, v in result["state"].items()},
                       args.weights)
        del result["state"]
        result.update(params={**config.to_dict(), "world_size": world_size,
                              "dataset": dataset.name, "dataset_params": dict(dataset.params),
                              "launcher": "torchrun (env://)"},
                      dataset_bytes=dataset.nbytes(), data_sharing_ranks=shared,
                      env=environment())
        print(f"world_size={world_size} epoch_s={[e['epoch_s'] for e in result['epochs']]} "
              f"ids_per_epoch={result['ids_per_epoch']} test_acc={result['test_acc']:.4f}")
        if args.out is not None:
            write_json_atomic(args.out, result)
    return 0


if __name__ == "__main__":
    exit_rank(main())
