"""`torchrun ... -m gnnrepro.distributed.partitioned --partition DIR ...`: partitioned training,
one part per machine (torchrun's node = GROUP_RANK = the part it trains on), every rank of
every machine in one DDP group.

Before any rank trains, every machine checks its part of the partition directory against the
manifest (files, shapes, checksums; the expected --dataset and --scale; one part per machine)
and the ranks exchange the verdicts: a mismatch anywhere stops every rank with the same error
naming the machine. Ranks die with their torchrun agent (PR_SET_PDEATHSIG), and a rank that
raises leaves its traceback with torchrun (torch.distributed.elastic's @record). Rank 0 prints
the result and writes it as JSON to --out. --checkpoint-dir and --resume: checkpoints as for
gnnrepro.training (docs/checkpoints.md).
"""
from __future__ import annotations

import argparse
import ctypes
import dataclasses
import os
import signal
import sys
from pathlib import Path

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record

from gnnrepro.atomic import write_json_atomic
from gnnrepro.config import TrainConfig, add_options
from gnnrepro.distributed.machine_share import machine_id
from gnnrepro.distributed.partitioned.liveness import Liveness
from gnnrepro.distributed.partitioned.train import train_partitioned
from gnnrepro.distributed.rank import exit_rank, init_process_group
from gnnrepro.env import environment
from gnnrepro.partition.manifest import PartitionError, load_partition
from gnnrepro.training.resume import (TrainingStopped, add_checkpoint_options,
                                      checkpointing_from_args)

TRAIN_OPTIONS = [f.name for f in dataclasses.fields(TrainConfig)]
_PR_SET_PDEATHSIG = 1


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="torchrun --nnodes M --node-rank I --nproc-per-node G ... "
             "-m gnnrepro.distributed.partitioned")
    add_options(p, ["dataset", "scale", *TRAIN_OPTIONS])
    p.add_argument("--partition", type=Path, required=True,
                   help="partition directory (python -m gnnrepro partition) with M parts")
    p.add_argument("--digest-batches", type=int, default=0,
                   help="record block digests of each rank's first N batches")
    add_checkpoint_options(p)
    p.add_argument("--out", type=Path, default=None, help="JSON file rank 0 writes")
    p.add_argument("--weights", type=Path, default=None,
                   help="the final weights rank 0 writes (torch.save of the state dict)")
    return p


def _check_partition(args: argparse.Namespace, machine: int, machines: int) -> str | None:
    """Why this machine's part of the partition is not usable, or None."""
    try:
        partition = load_partition(args.partition, dataset=args.dataset, num_parts=machines,
                                   verify_parts=[machine])
    except PartitionError as err:
        return str(err)
    scale = partition.manifest["dataset_params"].get("scale")
    if args.dataset == "products-sim" and scale != args.scale:
        return f"{args.partition} partitions products-sim at scale {scale}, not {args.scale}"
    return None


@record
def main(argv: list[str] | None = None) -> int:
    try:  # die with the torchrun agent: a killed machine leaves no rank behind
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass
    parser = build_parser()
    args = parser.parse_args(argv)
    config = TrainConfig(**{name: getattr(args, name) for name in TRAIN_OPTIONS})
    try:
        checkpointing = checkpointing_from_args(args)
    except ValueError as exc:
        parser.error(str(exc))
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank, local_world = int(os.environ["LOCAL_RANK"]), int(os.environ["LOCAL_WORLD_SIZE"])
    machine, machines = int(os.environ["GROUP_RANK"]), world_size // local_world
    init_process_group(config, rank, world_size, local_rank)
    liveness = Liveness(dist.distributed_c10d._get_default_store(), rank, world_size,
                        local_world)
    try:
        verdicts: list = [None] * world_size
        dist.all_gather_object(verdicts, (machine, machine_id(),
                                          _check_partition(args, machine, machines)))
        bad = sorted({f"machine {m} ({who}): {why}" for m, who, why in verdicts if why})
        if bad:
            raise PartitionError("the partition does not match on " + "; ".join(bad))
        partition = load_partition(args.partition)  # checked above, by its machine
        result = liveness.guard(lambda: train_partitioned(
            partition, config, machine=machine, local_rank=local_rank,
            local_world_size=local_world, digest_batches=args.digest_batches,
            checkpointing=checkpointing))
    except TrainingStopped as stopped:
        if rank == 0:
            print(stopped, file=sys.stderr)
        return 128 + int(getattr(signal.Signals, stopped.signal_name, signal.SIGTERM))
    finally:
        liveness.stop()
        dist.destroy_process_group()
    if rank == 0:
        if args.weights is not None:
            torch.save({k: torch.from_numpy(v) for k, v in result["state"].items()},
                       args.weights)
        del result["state"]
        result.update(params={**config.to_dict(), "machines": machines,
                              "ranks_per_machine": local_world, "world_size": world_size,
                              "dataset": partition.manifest["dataset"],
                              "dataset_params": partition.manifest["dataset_params"],
                              "partition": str(args.partition),
                              "launcher": "torchrun (env://)"},
                      machines_ranks=[{"machine": m, "machine_id": who}
                                      for m, who, _ in verdicts],
                      partition_stats=partition.manifest["stats"],
                      partition_parts=partition.manifest["parts"], env=environment())
        print(f"machines={machines} epoch_s={[e['epoch_s'] for e in result['epochs']]} "
              f"test_acc={result['test_acc']:.4f} bytes_per_batch={result['bytes_per_batch']}")
        if args.out is not None:
            write_json_atomic(args.out, result)
    return 0


if __name__ == "__main__":
    exit_rank(main())
