"""`train_partitioned`: one rank of partitioned training - its machine's part, DDP over every
rank of every machine, gnnrepro.training's epoch loop, evaluation on all ranks.

The ranks agree without talking on the initial weights (torch.manual_seed(seed), and DDP
broadcasts rank 0's anyway) and on the number of steps (PartitionedLoader), so the gradients
are averaged over every rank each step and the parameters stay identical everywhere. Sampling
and feature exchanges run on a process group of their own (gloo), the loader's thread.
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from gnnrepro.config import TrainConfig, resolve_device, resolve_prefetch, resolve_threads
from gnnrepro.distributed.partitioned.exchange import GlooExchange
from gnnrepro.distributed.partitioned.features import PartitionedFeatures
from gnnrepro.distributed.partitioned.loader import PartitionedLoader
from gnnrepro.distributed.partitioned.sampler import PartitionedSampler
from gnnrepro.models.graphsage import GraphSAGE
from gnnrepro.partition.manifest import Partition
from gnnrepro.sampling.args import stream_seed
from gnnrepro.sampling.block import MiniBatch
from gnnrepro.training import StageTimer, train_epoch

__all__ = ["block_digest", "train_partitioned"]


def block_digest(mb: MiniBatch) -> str:
    """sha256 of a mini-batch's blocks (indptr, indices, src_nodes, layer by layer): equal
    digests mean bit-identical blocks."""
    h = hashlib.sha256()
    for block in mb.blocks:
        for t in (block.indptr, block.indices, block.src_nodes):
            h.update(t.to(torch.int64).contiguous().numpy().tobytes())
    return h.hexdigest()


@torch.no_grad()
def _correct(model: torch.nn.Module, loader: PartitionedLoader) -> torch.Tensor:
    """[correct, seen] over this rank's share of the loader's ids."""
    model.eval()
    out = torch.zeros(2, dtype=torch.int64)
    for mb in loader:
        out[0] += int((model(mb.blocks, mb.x).argmax(dim=1) == mb.y).sum())
        out[1] += mb.y.numel()
    model.train()
    return out


def _gather(value: Any) -> list[Any]:
    out: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(out, value)
    return out


def train_partitioned(partition: Partition, config: TrainConfig, *, machine: int,
                      local_rank: int, local_world_size: int, digest_batches: int = 0,
                      heartbeat: Callable[[], None] | None = None) -> dict[str, Any]:
    """Train `config` on `partition` as this rank (the default process group must exist;
    machine p holds part p and ranks p * local_world_size .. + local_world_size - 1). Returns
    the summary, identical on every rank: epochs (epoch_s of the slowest rank, loss over all
    seeds, per rank the loader's sample and extract work and the time training waited for
    it), val/test accuracy, exchanged bytes per training batch and remote fractions (summed
    over ranks), and the digests of each rank's first `digest_batches` training batches of
    epoch 0 (block_digest, with their seeds and batch ids) to check against one machine."""
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

    def loader(ids: torch.Tensor, batch_size: int, shuffle: bool) -> PartitionedLoader:
        return PartitionedLoader(sampler, features, partition.labels, ids, batch_size,
                                 rank=rank, world_size=world_size, seed=config.seed,
                                 prefetch=resolve_prefetch(config.prefetch, 0),
                                 shuffle=shuffle)

    train_loader = loader(partition.train_idx, config.batch_size, True)
    digests = []
    for batch_id, seeds in list(train_loader.batches(0))[:digest_batches]:
        # sampled before training, in the same order on every rank (the exchanges pair up)
        digests.append({"batch_id": batch_id, "seeds": seeds.tolist(),
                        "digest": block_digest(sampler.sample(seeds, batch_id))})
    sampler.stats = {k: 0 for k in sampler.stats}
    exchange.bytes_sent.clear()

    torch.manual_seed(config.seed)
    model = GraphSAGE(partition.num_features, config.hidden, partition.num_classes,
                      len(config.fanouts), config.dropout)
    trained: torch.nn.Module = model
    if world_size > 1:  # DDP broadcasts rank 0's weights; each rank its own dropout masks
        torch.manual_seed(stream_seed(config.seed, rank))
        trained = DistributedDataParallel(model)
    optimizer = torch.optim.Adam(trained.parameters(), lr=config.lr)
    timer = StageTimer(torch.device("cpu"), in_process=False)
    history = [train_epoch(trained, optimizer, train_loader, timer, torch.device("cpu"), e,
                           heartbeat=heartbeat) for e in range(config.epochs)]
    batches = config.epochs * len(train_loader)
    traffic = {"bytes_per_batch": {k: v / batches for k, v in exchange.bytes_sent.items()},
               **sampler.stats, **features.stats}

    val = _correct(model, loader(partition.val_idx, config.eval_batch_size, False))
    test = _correct(model, loader(partition.test_idx, config.eval_batch_size, False))
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
        "state": {k: v.detach().numpy().copy() for k, v in model.state_dict().items()},
    }
