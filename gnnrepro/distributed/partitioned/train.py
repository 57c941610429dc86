"""`train_partitioned`: one rank of partitioned training - its machine's part, DDP over every
rank of every machine, gnnrepro.training's epoch loop, evaluation on all ranks.

The ranks agree without talking on the initial weights (torch.manual_seed(seed), and DDP
broadcasts rank 0's anyway) and on the number of steps (PartitionedPlan), so the gradients
are averaged over every rank each step and the parameters stay identical everywhere. Sampling
and feature exchanges run on a process group of their own (gloo), the loader's thread.
"""
from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

from gnnrepro.config import TrainConfig, resolve_device, resolve_prefetch, resolve_threads
from gnnrepro.distributed.partitioned.exchange import GlooExchange
from gnnrepro.distributed.partitioned.features import PartitionedFeatures
from gnnrepro.distributed.partitioned.loader import PartitionedPlan, partitioned_loader
from gnnrepro.distributed.partitioned.sampler import PartitionedSampler
from gnnrepro.partition.manifest import Partition
from gnnrepro.pipeline.loader import Loader
from gnnrepro.sampling.block import MiniBatch
from gnnrepro.training import (Checkpointing, StageTimer, build_model, correct_in,
                               data_parallel, train_epochs)

__all__ = ["block_digest", "train_partitioned"]


def block_digest(mb: MiniBatch) -> str:
    """sha256 of a mini-batch's blocks (indptr, indices, src_nodes, layer by layer): equal
    digests mean bit-identical blocks."""
    h = hashlib.sha256()
    for block in mb.blocks:
        for t in (block.indptr, block.indices, block.src_nodes):
            h.update(t.to(torch.int64).contiguous().numpy().tobytes())
    return h.hexdigest()


def _gather(value: Any) -> list[Any]:
    out: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(out, value)
    return out


def train_partitioned(partition: Partition, config: TrainConfig, *, machine: int,
                      local_rank: int, local_world_size: int, digest_batches: int = 0,
                      heartbeat: Callable[[], None] | None = None,
                      checkpointing: Checkpointing | None = None) -> dict[str, Any]:
    """Train `config` on `partition` as this rank (the default process group must exist;
    machine p holds part p and ranks p * local_world_size .. + local_world_size - 1). Returns
    the summary, identical on every rank: epochs (epoch_s of the slowest rank, loss over all
    seeds, per rank the loader's sample and extract work and the time training waited for
    it), val/test accuracy, exchanged bytes per training batch and remote fractions (summed
    over ranks), and the digests of each rank's first `digest_batches` training batches of
    epoch 0 (block_digest, with their seeds and batch ids) to check against one machine.
    `checkpointing`: checkpoints and resume, as for train() (the same on every rank)."""
    if resolve_device(config.device) != "cpu":
        raise ValueError(f"device={config.device!r}: partitioned training runs on CPU ranks "
                         "(gloo) only; use device='cpu'")
    rank, world_size = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(resolve_threads(config.threads, local_world_size))
    group = dist.new_group(backend="gloo", timeout=timedelta(seconds=config.timeout_s))
    exchange = GlooExchange(group)
    rank_of_part = [p * local_world_size + local_rank for p in range(partition.num_parts)]
    part = partition.part(machine)
    sampler = PartitionedSampler(part, partition.node_part, config.fanouts, exchange,
                                 rank_of_part, seed=config.seed)
    features = PartitionedFeatures(part, partition.node_part, partition.node_local, exchange,
                                   rank_of_part)

    def loader(ids: torch.Tensor, batch_size: int, shuffle: bool) -> Loader:
        return partitioned_loader(sampler, features, partition.labels, ids, batch_size,
                                  rank=rank, world_size=world_size, seed=config.seed,
                                  prefetch=resolve_prefetch(config.prefetch, 0),
                                  shuffle=shuffle, timeout_s=config.timeout_s)

    with contextlib.closing(loader(partition.train_idx, config.batch_size, True)) as train_loader:
        digests = _digests(sampler, train_loader.plan, digest_batches)
        sampler.stats = {k: 0 for k in sampler.stats}  # before the loader's thread copies it
        exchange.bytes_sent.clear()
        return _train(partition, config, train_loader, loader, heartbeat, digests,
                      (sampler, features, exchange), checkpointing)


def _digests(sampler: PartitionedSampler, plan: PartitionedPlan,
             batches: int) -> list[dict[str, Any]]:
    """block_digest of the first `batches` batches of epoch 0, with their seeds and batch ids:
    sampled before training, in the same order on every rank (the exchanges pair up)."""
    order = plan.epoch_ids(0)
    out = []
    for b in range(min(batches, len(plan))):
        seeds, batch_id = plan.seeds(order, b), plan.batch_id(0, b)
        out.append({"batch_id": batch_id, "seeds": seeds.tolist(),
                    "digest": block_digest(sampler.sample(seeds, batch_id))})
    return out


def _evaluate(model: torch.nn.Module, loader: Loader,
              heartbeat: Callable[[], None] | None) -> torch.Tensor:
    """[correct, seen] on this rank's share of a split, through its own Loader."""
    with contextlib.closing(loader):
        return correct_in(model, loader, len(loader), torch.device("cpu"), heartbeat)


def _train(partition: Partition, config: TrainConfig, train_loader: Loader,
           loader: Callable[[torch.Tensor, int, bool], Loader],
           heartbeat: Callable[[], None] | None, digests: list[dict[str, Any]],
           counted: tuple[PartitionedSampler, PartitionedFeatures, GlooExchange],
           checkpointing: Checkpointing | None) -> dict[str, Any]:
    """Train and evaluate; the summary of train_partitioned, gathered from every rank
    (`counted`: what counts the traffic)."""
    world_size = dist.get_world_size()
    sampler, features, exchange = counted
    cpu = torch.device("cpu")
    model = build_model(partition, len(config.fanouts), config.hidden, config.dropout,
                        config.seed, cpu)
    trained = data_parallel(model, config.seed, cpu)
    optimizer = torch.optim.Adam(trained.parameters(), lr=config.lr)
    timer = StageTimer(cpu, in_process=False)
    history, checkpoints = train_epochs(
        trained, model, optimizer, train_loader, timer, cpu, config.epochs,
        identity=_identity(partition, config, world_size), checkpointing=checkpointing,
        heartbeat=heartbeat)
    # the batches this process ran (a resumed run ran fewer)
    batches = config.epochs * len(train_loader) - (checkpoints or {}).get("resumed_at_step", 0)
    traffic = {"bytes_per_batch": {k: v / max(batches, 1) for k, v in exchange.bytes_sent.items()},
               **sampler.stats, **features.stats}

    val = _evaluate(model, loader(partition.val_idx, config.eval_batch_size, False), heartbeat)
    test = _evaluate(model, loader(partition.test_idx, config.eval_batch_size, False),
                     heartbeat)
    counts = torch.cat([val, test]).to(torch.float64)
    losses = torch.tensor([[e.loss * e.seeds, e.seeds] for e in history], dtype=torch.float64)
    dist.all_reduce(counts)
    dist.all_reduce(losses)
    ranks_epoch_s = _gather([e.epoch_s for e in history])
    # how much of the loader thread's work (sampling with its exchanges, feature exchange)
    # the training loop waited for: the rest ran behind the previous batches' compute
    ranks_loading = _gather([{"wait_s": e.loader_wait_s,
                              "sample_work_s": e.stages["sample"]["work_s"],
                              "extract_work_s": e.stages["extract"]["work_s"]}
                             for e in history])
    ranks_traffic = _gather(traffic)
    ranks_digests = _gather(digests)
    total = {k: sum(t[k] for t in ranks_traffic) for k in ("edges", "remote_edges", "rows",
                                                         "remote_rows")}
    return {
        "epochs": [{"epoch": e, "epoch_s": max(r[e] for r in ranks_epoch_s),
                    "ranks_epoch_s": [r[e] for r in ranks_epoch_s],
                    "ranks_loading": [r[e] for r in ranks_loading],
                    "loss": losses[e, 0].item() / max(losses[e, 1].item(), 1.0),
                    "seeds": int(losses[e, 1].item())} for e in range(config.epochs)],
        "val_acc": counts[0].item() / max(counts[1].item(), 1.0),
        "test_acc": counts[2].item() / max(counts[3].item(), 1.0),
        "steps_per_epoch": len(train_loader),
        "bytes_per_batch": {kind: sum(t["bytes_per_batch"].get(kind, 0.0)
                                      for t in ranks_traffic) / world_size
                            for kind in ("sampling", "features")},
        "remote_edge_fraction": total["remote_edges"] / max(total["edges"], 1),
        "remote_row_fraction": total["remote_rows"] / max(total["rows"], 1),
        "traffic_ranks": ranks_traffic,
        "digests_ranks": ranks_digests,
        "checkpoint": checkpoints,
        "state": {k: v.detach().numpy().copy() for k, v in model.state_dict().items()},
    }


def _identity(partition: Partition, config: TrainConfig, world_size: int) -> dict[str, Any]:
    """What a checkpoint of this run must share with the run that resumes from it."""
    return {"dataset": partition.manifest["dataset"],
            "dataset_params": partition.manifest["dataset_params"],
            "num_parts": partition.num_parts, "model": "GraphSAGE-mean",
            "num_layers": len(config.fanouts), "hidden": config.hidden,
            "dropout": config.dropout, "fanouts": list(config.fanouts),
            "batch_size": config.batch_size, "lr": config.lr, "seed": config.seed,
            "world_size": world_size, "optimizer": "Adam", "loss": "cross_entropy"}
