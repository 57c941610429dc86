"""k data-parallel ranks against one rank with the same global batch (issue 49 item 3).

Without dropout, k ranks each training 1/k of every global batch compute what one rank computes
for the whole batch: the ranks' batches of a step sample with the step's batch id (the sampler's
random numbers are keyed by node, so a node gets the same neighbours in any rank's batch), each
rank's loss is the mean over its equal share, and the all-reduce averages the shares' gradients
into the global batch's mean gradient. So after N steps every rank holds the same weights, and
they equal the one-rank run's up to the order of floating-point sums. `rank_equivalence` runs
both and reports the largest relative difference; the training ids are cut to whole global
batches that every world size splits evenly (a rank's mean over an unequal share would weigh
its seeds differently).

On a GPU machine the ranks may share GPU 0 (`share_device`: collectives over gloo on CUDA
tensors, since NCCL refuses two ranks on one device): the multi-GPU code path runs, but ranks
sharing a chip are not scaling, and no time from it is reported as such. What each added rank
costs the host is reported beside it: the launcher's whole process tree's PSS at the end of
training (shared pages, the one shared copy of the data among them, counted once), less the
one-rank run's, per added rank; against the same at the largest k with every rank holding its
own copy of the data (`launch(own_data=True)`: processes that each load the dataset); and, on a
GPU, what one CUDA context costs the host (part of each GPU rank's share, reported apart).
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import torch

from gnnrepro.checks import check_int
from gnnrepro.datasets.dataset import Dataset
from gnnrepro.distributed.launch import DistributedResult, launch
from gnnrepro.distributed.memory import cuda_context_pss_bytes
from gnnrepro.env import environment
from gnnrepro.progress import announce

__all__ = ["METHOD", "rank_equivalence", "relative_difference"]

METHOD = ("max over parameter tensors of ||w_k - w_1|| / ||w_1|| (float64), w_k a k-rank "
          "run's rank-0 weights and w_1 the one-rank run's, after the same steps of the same "
          "global batches (dropout 0, the training ids cut to whole global batches); "
          "ranks_identical: every rank's weights equal rank 0's bit for bit")


def relative_difference(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    """max over tensors of ||a - b|| / ||b|| (0 where both are zero)."""
    if a.keys() != b.keys():
        raise ValueError(f"the parameter names differ: {sorted(a.keys() ^ b.keys())}")
    worst = 0.0
    for name, ref in b.items():
        diff = torch.linalg.vector_norm(a[name].double() - ref.double()).item()
        norm = torch.linalg.vector_norm(ref.double()).item()
        worst = max(worst, diff / norm if norm else (0.0 if diff == 0 else math.inf))
    return worst


def _extra_per_rank(result: DistributedResult, one: DistributedResult, k: int) -> float | None:
    """(PSS of k ranks' process tree - one rank's) / (k - 1), None where either is missing."""
    total, base = result.memory.get("pss_bytes"), one.memory.get("pss_bytes")
    return None if total is None or base is None else (total - base) / (k - 1)


def _ranks_identical(result: DistributedResult) -> bool:
    first = result.states[0]
    return all(all(torch.equal(state[k], first[k]) for k in first) for state in result.states)


def rank_equivalence(dataset: Dataset, world_sizes: Sequence[int] = (2, 4, 8), *,
                     steps: int = 50, batch_size: int = 512, device: str = "cpu",
                     share_device: bool = True, seed: int = 0,
                     **settings: Any) -> dict[str, Any]:
    """One rank with `batch_size` seeds a step against each k of `world_sizes` with
    batch_size / k each, for at least `steps` steps (whole epochs of whole global batches);
    `settings` are further TrainConfig fields (fanouts, hidden, threads, ...). Returns the
    rows (backend, steps, ranks_identical, relative_difference) and the method."""
    steps = check_int("steps", steps, 1)
    batch_size = check_int("batch_size", batch_size, 1)
    sizes = [check_int("world_sizes", k, 2) for k in world_sizes]
    if not sizes:
        raise ValueError("world_sizes must name at least one world size (>= 2)")
    uneven = [k for k in sizes if batch_size % k]
    if uneven:
        raise ValueError(f"batch_size={batch_size} does not split evenly between {uneven} ranks")
    per_epoch = dataset.train_idx.numel() // batch_size
    if per_epoch < 1:
        raise ValueError(f"batch_size={batch_size} exceeds the {dataset.train_idx.numel()} "
                         f"training ids")
    whole = dataclasses.replace(dataset, train_idx=dataset.train_idx[:per_epoch * batch_size])
    epochs = math.ceil(steps / per_epoch)
    run = dict(settings, pipeline=settings.get("pipeline", "fused"), epochs=epochs,
               dropout=0.0, seed=seed, device=device, eval_ids=settings.get("eval_ids", 256))
    announce(f"rank equivalence: 1 rank, {per_epoch * epochs} steps of {batch_size} seeds")
    one = launch(1, whole, batch_size=batch_size, **run)
    rows = [{"world_size": 1, "backend": one.params["backend"], "share_device": False,
             "data": "one shared copy", "steps": per_epoch * epochs, "ranks_identical": True,
             "relative_difference": 0.0, "test_acc": one.test_acc,
             "pss_bytes": one.memory.get("pss_bytes"), "extra_pss_per_rank_bytes": None}]
    for k, own in [(k, False) for k in sizes] + [(max(sizes), True)]:
        data = "own copy per rank" if own else "one shared copy"
        announce(f"rank equivalence: {k} ranks, {batch_size // k} seeds each, {data}")
        result = launch(k, whole, batch_size=batch_size // k, share_device=share_device,
                        own_data=own, **run)
        rows.append({"world_size": k, "backend": result.params["backend"],
                     "share_device": share_device, "data": data, "steps": per_epoch * epochs,
                     "ranks_identical": _ranks_identical(result),
                     "relative_difference": relative_difference(result.states[0],
                                                                one.states[0]),
                     "test_acc": result.test_acc,
                     "pss_bytes": result.memory.get("pss_bytes"),
                     "extra_pss_per_rank_bytes": _extra_per_rank(result, one, k)})
    cuda_context = cuda_context_pss_bytes() if device.startswith("cuda") else None
    return {"benchmark": "rank-equivalence", "method": METHOD,
            "cuda_context_pss_bytes": cuda_context,
            "dataset_bytes": sum(a.numel() * a.element_size() for a in whole.arrays().values()),
            "params": {"dataset": dataset.name, "dataset_params": dict(dataset.params),
                       "global_batch": batch_size, "train_ids_used": whole.train_idx.numel(),
                       **run},
            "rows": rows, "env": environment()}
