"""`torchrun ... -m gnnrepro.distributed ...`: the same data-parallel training under torchrun.

torchrun starts the ranks and sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT
(env:// rendezvous), so one command scales to several machines with torchrun's own options
(--nnodes, --node-rank, --rdzv-endpoint, ...); torchrun watches its ranks and stops them all when
one fails. The lowest rank of each machine loads the dataset (from the $GNNREPRO_DATA cache
once built) into shared memory, and the machine's other ranks and all sampling workers map those
pages (gnnrepro.distributed.machine_share): one copy per machine, as with
gnnrepro.distributed.run.

Rank 0 prints the result and writes it as JSON to --out.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import torch.distributed as dist

from gnnrepro.datasets import load_scaled
from gnnrepro.distributed.machine_share import share_on_machine
from gnnrepro.distributed.memory import tree_memory
from gnnrepro.distributed.rank import RunConfig, init_process_group, train_rank
from gnnrepro.env import environment


def _parser() -> argparse.ArgumentParser:
    from gnnrepro.__main__ import parse_fanouts
    p = argparse.ArgumentParser(prog="torchrun --nproc-per-node N -m gnnrepro.distributed")
    p.add_argument("--dataset", default="products-sim")
    p.add_argument("--scale", type=float, default=0.05, help="products-sim scale")
    p.add_argument("--root", default=None, help="dataset root (OGB datasets)")
    p.add_argument("--pipeline", default="fused+pinned")
    p.add_argument("--fanouts", type=parse_fanouts, default=[15, 10, 5])
    p.add_argument("--batch-size", type=int, default=1024, help="seeds per rank per step")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--lr", type=float, default=0.003)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--threads", type=int, default=1, help="torch threads per rank")
    p.add_argument("--workers", type=int, default=1, help="sampling workers per rank")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu", help="cpu (gloo) or cuda (NCCL, GPU LOCAL_RANK)")
    p.add_argument("--timeout", type=float, default=60.0,
                   help="collective timeout, seconds; must also cover the dataset load of each "
                        "machine's first rank, which the others wait for")
    p.add_argument("--out", type=Path, default=None, help="JSON file rank 0 writes")
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
    args = _parser().parse_args(argv)
    config = RunConfig(pipeline=args.pipeline, fanouts=tuple(args.fanouts),
                       batch_size=args.batch_size, epochs=args.epochs, lr=args.lr,
                       hidden=args.hidden, threads=args.threads, workers=args.workers,
                       seed=args.seed, device=args.device, timeout_s=args.timeout)
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    device = init_process_group(config, rank, world_size, int(os.environ["LOCAL_RANK"]))
    try:
        dataset, how = share_on_machine(
            lambda: load_scaled(args.dataset, args.root, args.scale))
        result = train_rank(config, dataset, device, _memory)
        shared: list[str] = [""] * world_size
        dist.all_gather_object(shared, how)
    finally:
        dist.destroy_process_group()
    if rank == 0:
        from gnnrepro.atomic import write_json_atomic
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
    sys.exit(main())
