"""The measured parts of a k-rank step (issue 49 item 4; gnnrepro.distributed.projection).

`measure_parts` starts k processes at once, each a rank's CPU side with max(1, C // k) of the
machine's C cores (torch threads, which the fused op uses too). Each samples its share of each
step with the pipeline's sampler and gathers the input rows into a staging buffer (pinned where
CUDA is present, as the pipelines stage them); on a GPU machine fused+pinned's batches are
prepared by the worker threads its Loader would run there. CPU ranks also run the model's
forward, backward and optimizer step on the batch, then wait for the other ranks at a gloo
barrier (their gradients' all-reduce makes CPU ranks move in step; the wait is timed apart).
The ranks start together after six warm-up batches and time every batch. A rank's host part
is reported two ways: the slowest rank's mean (`batch_s`: what a pipeline that runs ahead of
its step waits for, fused+pinned on a GPU) and the mean over steps of the slowest rank's batch
at each step (`step_max_s`: what ranks that meet every step wait for, the serial pipelines).
Between CPU ranks it also times the gradient all-reduce (gloo, the model's gradient bytes,
after the batches). On a GPU it measures, alone, what a rank's own GPU does: the model's
forward, backward and optimizer step on the batches, the copy rate of the batches' bytes and
the host memory's read rate.
"""
from __future__ import annotations

import copy
import statistics
import threading
import time
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

from gnnrepro.checks import check_int
from gnnrepro.config import resolve_threads, resolve_workers
from gnnrepro.datasets.dataset import Dataset
from gnnrepro.distributed.machine_share import share_dataset_
from gnnrepro.distributed.projection import OVERLAPPED
from gnnrepro.progress import announce
from gnnrepro.sampling import FusedSampler, ReferenceSampler
from gnnrepro.sampling.block import MiniBatch
from gnnrepro.pipeline.thread_workers import set_local_num_threads
from gnnrepro.supervisor import ChildFailed, Heartbeat, Supervisor, run_reporting
from gnnrepro.training.loop import build_model
from gnnrepro.training.pipelines import worker_threads

__all__ = ["SAMPLERS", "measure_parts", "rank_batch_size"]

#: The sampler each pipeline's host work runs (fused and fused+pinned do the same host work
#: per batch; fused+pinned spreads it over workers and overlaps it with the GPU).
SAMPLERS = {"reference": "reference", "fused": "fused", "fused+pinned": "fused"}
_WARMUP = 6
_ALLREDUCE_CALLS = 20
_GRACE_S = 2.0  # after a rank fails: how long the others may still report theirs


def rank_batch_size(batch_size: int, k: int, per_rank_batch: bool) -> int:
    """Seeds per rank: `batch_size` itself (DGL's multi-GPU convention) or the global batch
    split between the k ranks (bench scaling's default)."""
    return batch_size if per_rank_batch else -(-batch_size // k)


def _model_settings(fanouts: Sequence[int], hidden: int, lr: float, seed: int) -> dict[str, Any]:
    return {"fanouts": list(fanouts), "hidden": hidden, "lr": lr, "seed": seed}


def _make_sampler(kind: str, dataset: Dataset, fanouts: Sequence[int], seed: int) -> Any:
    if kind == "reference":
        return ReferenceSampler(dataset.graph, fanouts, seed=seed)
    return FusedSampler(dataset.graph, fanouts, seed=seed)


def _rank_batches(dataset: Dataset, rank: int, k: int, rank_batch: int, count: int,
                  seed: int) -> list[tuple[int, torch.Tensor]]:
    """This rank's share of `count` steps of a seeded shuffle, (global step id, seeds)."""
    order = dataset.train_idx[torch.randperm(dataset.train_idx.numel(),
                                             generator=torch.Generator().manual_seed(seed))]
    per_step = k * rank_batch
    steps = order.numel() // per_step  # whole steps only (measure_parts checks there is one)
    out = []
    for i in range(count):
        step = i % steps
        start = step * per_step + rank * rank_batch
        out.append((step, order[start:start + rank_batch]))
    return out


def _gather(dataset: Dataset, mb: MiniBatch, staging: torch.Tensor
            ) -> tuple[torch.Tensor, torch.Tensor]:
    """The batch's input rows gathered into `staging` (pinned where CUDA is present, as the
    pipelines stage rows), grown by a quarter when a batch needs more; (rows, staging)."""
    rows = mb.input_nodes.numel()
    if rows > staging.shape[0]:
        staging = torch.empty((rows + rows // 4, dataset.features.shape[1]),
                              dtype=dataset.features.dtype,
                              pin_memory=torch.cuda.is_available())
    out = staging[:rows]
    torch.index_select(dataset.features, 0, mb.input_nodes, out=out)
    return out, staging


def _batch_bytes(x: torch.Tensor, mb: MiniBatch) -> int:
    """What a batch moves to the GPU: its rows and its blocks' arrays."""
    return x.nbytes + sum(t.nbytes for b in mb.blocks for t in b.tensors())


_NO_STAGING = torch.empty((0, 0))


def _rank_main(rank: int, k: int, threads: int, dataset: Dataset, kind: str,
               rank_batch: int, batches: int, model: dict[str, Any], store_port: int | None,
               timeout_s: float, workers: tuple[int, int], inbox: Any, outbox: Any) -> None:
    """One rank's CPU side (a Supervisor child): warm up, report ready, wait for go, time
    `batches` batches, then (CPU ranks, k > 1) the gradient all-reduce. CPU ranks (k > 1)
    wait for each other after every batch, as their gradients' all-reduce makes them: a rank
    held up by another's use of the cores holds up every rank. `workers`: (W, threads each);
    W > 0 times the batches as W sampling worker threads prepare them, as fused+pinned's
    Loader does on a GPU (no model step on the host)."""
    synced = model["compute"] and store_port is not None and k > 1

    def body() -> dict[str, Any]:
        if workers[0] > 0:
            return _worker_batches(rank, k, threads, dataset, kind, rank_batch, batches,
                                   model, workers, inbox, outbox)
        if synced:
            _join(rank, k, store_port, timeout_s)
        try:
            return _timed_batches()
        finally:
            if synced:
                dist.destroy_process_group()

    def _timed_batches() -> dict[str, Any]:
        torch.set_num_threads(threads)
        seed, fanouts = model["seed"], model["fanouts"]
        sampler = _make_sampler(kind, dataset, fanouts, seed)
        plan = _rank_batches(dataset, rank, k, rank_batch, _WARMUP + batches, seed)
        staging = _NO_STAGING
        net = optimizer = None
        if model["compute"]:
            net = build_model(dataset, len(fanouts), model["hidden"], 0.5, seed,
                              torch.device("cpu"))
            optimizer = torch.optim.Adam(net.parameters(), lr=model["lr"])
        names = ("sample_s", "gather_s", "compute_s", "wait_s", "batch_s")
        times: dict[str, list[float]] = {name: [] for name in names}
        nbytes: list[int] = []
        beat = Heartbeat(outbox)
        for i, (step, seeds) in enumerate(plan):
            if i == _WARMUP:
                outbox.send(("ready",))
                inbox.recv()
            t0 = time.perf_counter()
            mb = sampler.sample(seeds, batch_id=step)
            t1 = time.perf_counter()
            x, staging = _gather(dataset, mb, staging)
            t2 = t3 = time.perf_counter()
            if net is not None:
                logits = net(mb.blocks, x)
                loss = torch.nn.functional.cross_entropy(logits, dataset.labels[seeds])
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                t3 = time.perf_counter()
            t4 = t3
            if synced:
                dist.barrier()
                t4 = time.perf_counter()
            if i >= _WARMUP:
                for name, value in zip(names, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t0)):
                    times[name].append(value)
                nbytes.append(_batch_bytes(x, mb))
            beat()
        result: dict[str, Any] = {name: statistics.fmean(v) for name, v in times.items()}
        result["batches_s"] = times["batch_s"]
        result["copy_bytes"] = statistics.fmean(nbytes)
        result["input_rows"] = int(mb.input_nodes.numel())
        if synced:
            result["allreduce_s"] = _time_allreduce(net)
        return result

    run_reporting(body, outbox)


def _worker_batches(rank: int, k: int, threads: int, dataset: Dataset, kind: str,
                    rank_batch: int, batches: int, model: dict[str, Any],
                    workers: tuple[int, int], inbox: Any, outbox: Any) -> dict[str, Any]:
    """The rank's batches prepared by W worker threads (each its own sampler copy, staging and
    intra-op threads: the Loader's thread workers), after warm-up batches on every thread:
    batch_s is the wall time of the timed batches over their count (the throughput the
    trainer sees), sample_s and gather_s the work per batch summed over the threads."""
    count, per_worker = workers
    torch.set_num_threads(threads)
    sampler = _make_sampler(kind, dataset, model["fanouts"], model["seed"])
    plan = _rank_batches(dataset, rank, k, rank_batch, count * _WARMUP + batches,
                         model["seed"])
    warm, timed = plan[:count * _WARMUP], plan[count * _WARMUP:]
    lock = threading.Lock()
    work = {"sample_s": 0.0, "gather_s": 0.0, "bytes": [], "rows": 0}
    failures: list[BaseException] = []

    def run(w: int, items: list[tuple[int, torch.Tensor]], record: bool) -> None:
        try:
            set_local_num_threads(per_worker)
            mine, staging = copy.copy(sampler), _NO_STAGING
            for step, seeds in items[w::count]:
                t0 = time.perf_counter()
                mb = mine.sample(seeds, batch_id=step)
                t1 = time.perf_counter()
                x, staging = _gather(dataset, mb, staging)
                t2 = time.perf_counter()
                if record:
                    with lock:
                        work["sample_s"] += t1 - t0
                        work["gather_s"] += t2 - t1
                        work["bytes"].append(_batch_bytes(x, mb))
                        work["rows"] = int(mb.input_nodes.numel())
        except BaseException as exc:  # raised in the rank's main thread
            failures.append(exc)

    def all_threads(items: list[tuple[int, torch.Tensor]], record: bool) -> float:
        pool = [threading.Thread(target=run, args=(w, items, record)) for w in range(count)]
        start = time.perf_counter()
        for t in pool:
            t.start()
        beat = Heartbeat(outbox)
        for t in pool:
            while t.is_alive():
                t.join(0.5)
                beat()
        if failures:
            raise failures[0]
        return time.perf_counter() - start

    all_threads(warm, False)
    outbox.send(("ready",))
    inbox.recv()
    wall = all_threads(timed, True)
    n = len(timed)
    batch_s = wall / n
    return {"sample_s": work["sample_s"] / n, "gather_s": work["gather_s"] / n,
            "compute_s": 0.0, "wait_s": 0.0, "batch_s": batch_s, "batches_s": [batch_s] * n,
            "copy_bytes": statistics.fmean(work["bytes"]), "input_rows": work["rows"],
            "workers": count, "threads_per_worker": per_worker}


def _join(rank: int, k: int, port: int, timeout_s: float) -> None:
    """Join the parts' gloo group (the parent serves its store)."""
    timeout = timedelta(seconds=timeout_s)
    store = dist.TCPStore("127.0.0.1", port, k, is_master=False, timeout=timeout)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=k, timeout=timeout)


def _time_allreduce(net: torch.nn.Module) -> float:
    """Median seconds of a gloo all-reduce of the model's gradients, flattened (one DDP
    bucket: they are far under its 25 MB)."""
    flat = torch.cat([p.detach().reshape(-1) for p in net.parameters()])
    dist.barrier()
    calls = []
    for _ in range(_ALLREDUCE_CALLS):
        t0 = time.perf_counter()
        dist.all_reduce(flat)
        calls.append(time.perf_counter() - t0)
    return statistics.median(calls)


def _run_ranks(k: int, cores: int, dataset: Dataset, kind: str, rank_batch: int,
               batches: int, model: dict[str, Any], timeout_s: float,
               workers: tuple[int, int] = (0, 0)) -> list[dict[str, Any]]:
    """k ranks at once; each rank's result, in rank order. A rank that fails raises
    RuntimeError naming the first cause (a rank that died before others lost their peer)."""
    store = (dist.TCPStore("127.0.0.1", 0, k, is_master=True, wait_for_workers=False,
                           timeout=timedelta(seconds=timeout_s))
             if model["compute"] and k > 1 else None)
    threads = max(1, cores // k)
    supervisor = Supervisor("spawn")
    results: dict[int, dict[str, Any]] = {}
    ready: set[int] = set()
    try:
        for rank in range(k):
            supervisor.start(f"rank {rank}", _rank_main,
                             (rank, k, threads, dataset, kind, rank_batch, batches, model,
                              store.port if store is not None else None, timeout_s, workers))
        try:
            while len(results) < k:
                for rank, message in supervisor.receive(1.0):
                    if message[0] == "ready":
                        ready.add(rank)
                        if len(ready) == k:  # every rank warmed up: start them together
                            for r in range(k):
                                supervisor.send(r, ("go",))
                    elif message[0] == "ok":
                        results[rank] = message[1]
                # a ready rank waits silently for the others' warm-up; then it beats
                supervisor.check_silence((r for r in range(k) if r not in results
                                          and (r not in ready or len(ready) == k)), timeout_s)
        except ChildFailed:
            deadline = time.monotonic() + _GRACE_S
            while (time.monotonic() < deadline
                   and len(results) + len(supervisor.failures) < k):
                supervisor.receive(max(0.0, deadline - time.monotonic()), raise_failure=False)
            raise RuntimeError(f"scaling parts ({kind}, {k} ranks) failed: "
                               f"{supervisor.first_cause()}") from None
    finally:
        supervisor.stop()
    return [results[r] for r in range(k)]


def _host_workers(pipeline: str, device: str, cores: int, k: int) -> tuple[int, int]:
    """(worker threads, intra-op threads each) of the pipeline's host work on k ranks: on a
    GPU, fused+pinned's Loader's (resolve_workers, worker_threads); else none (the serial
    pipelines; CPU ranks, whose model step shares the cores: their host part is serial)."""
    if device != "cuda" or pipeline not in OVERLAPPED:
        return 0, 0
    threads = max(1, cores // k)
    count = resolve_workers(None, "cuda", "cpu", ranks_per_machine=k)
    return count, worker_threads(torch.device("cuda"), count, threads)


def _combine(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The ranks' parts: the slowest rank's means (batch_s: what a pipeline running ahead of
    its step waits for), step_max_s (the mean over steps of the slowest rank's batch: what
    ranks meeting every step wait for), each rank's mean, the mean bytes."""
    slowest = max(rows, key=lambda r: r["batch_s"])
    per_step = list(zip(*(r["batches_s"] for r in rows)))
    return {**{name: value for name, value in slowest.items() if name != "batches_s"},
            "step_max_s": statistics.fmean(max(step) for step in per_step),
            "copy_bytes": statistics.fmean(r["copy_bytes"] for r in rows),
            "ranks_batch_s": [r["batch_s"] for r in rows]}


def _device_parts(dataset: Dataset, model: dict[str, Any], rank_batch: int, batches: int
                  ) -> tuple[float, float]:
    """On GPU 0, alone: (forward + backward + optimizer step per batch of `rank_batch` seeds,
    mean; the host-to-device rate of those batches' bytes, median: rows from pinned staging,
    blocks and labels from pageable memory, as the copy the projection prices)."""
    device = torch.device("cuda", 0)
    fanouts = model["fanouts"]
    sampler = _make_sampler("fused", dataset, fanouts, model["seed"])
    net = build_model(dataset, len(fanouts), model["hidden"], 0.5, model["seed"], device)
    optimizer = torch.optim.Adam(net.parameters(), lr=model["lr"])
    staging = _NO_STAGING
    compute, rates = [], []
    for i, (step, seeds) in enumerate(_rank_batches(dataset, 0, 1, rank_batch,
                                                    _WARMUP + batches, model["seed"])):
        mb = sampler.sample(seeds, batch_id=step)
        x, staging = _gather(dataset, mb, staging)
        labels = dataset.labels[seeds]
        torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        gpu_x = x.to(device, non_blocking=True)
        blocks = [b.to(device, non_blocking=True) for b in mb.blocks]
        y = labels.to(device, non_blocking=True)
        torch.cuda.synchronize(device)
        t1 = time.perf_counter()
        loss = torch.nn.functional.cross_entropy(net(blocks, gpu_x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize(device)
        t2 = time.perf_counter()
        if i >= _WARMUP:
            rates.append((_batch_bytes(x, mb) + labels.nbytes) / (t1 - t0))
            compute.append(t2 - t1)
    return statistics.fmean(compute), statistics.median(rates)


def _host_read_rate() -> float:
    """The host memory's read rate (bytes/s): a sum over a 1 GiB array on every torch
    thread, median of 3."""
    big = torch.ones(2**28, dtype=torch.float32)
    reads = []
    for _ in range(3):
        t0 = time.perf_counter()
        big.sum()
        reads.append(big.nbytes / (time.perf_counter() - t0))
    return statistics.median(reads)


def measure_parts(dataset: Dataset, ranks: Sequence[int], pipelines: Sequence[str], *,
                  fanouts: Sequence[int], batch_size: int, per_rank_batch: bool,
                  hidden: int, lr: float, seed: int, batches: int = 10,
                  device: str = "cpu", cores: int | None = None,
                  timeout_s: float = 300.0) -> dict[str, Any]:
    """The parts of every pipeline's step at every k in `ranks` (see the module doc):
    {"host": {pipeline: {k: {sample_s, gather_s, compute_s, wait_s, batch_s, step_max_s,
    copy_bytes, ...}}},
    "rank_batch": {k: seeds}, "gradient_bytes", "allreduce_s": {k: s} (CPU ranks), "gpu":
    {device_s: {k: s}, pcie_bytes_per_s, host_read_bytes_per_s, name} (device cuda), "cores",
    "threads_per_rank": {k: threads}}."""
    unknown = [p for p in pipelines if p not in SAMPLERS]
    if unknown:
        raise ValueError(f"pipelines: {unknown} have no measured parts; choose of "
                         f"{list(SAMPLERS)}")
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device='cuda' needs a GPU; this machine has none")
    for k in ranks:
        check_int("ranks", k, 1)
    check_int("batches", batches, 1)
    largest = max(k * rank_batch_size(batch_size, k, per_rank_batch) for k in ranks)
    if largest > dataset.train_idx.numel():
        raise ValueError(f"batch_size: a step of {largest} seeds (k ranks x rank batch) "
                         f"exceeds the dataset's {dataset.train_idx.numel()} training ids")
    cores = cores or resolve_threads(None)
    share_dataset_(dataset)
    model = {**_model_settings(fanouts, hidden, lr, seed), "compute": device == "cpu"}
    net = build_model(dataset, len(fanouts), hidden, 0.5, seed, torch.device("cpu"))
    gradient_bytes = sum(p.numel() * p.element_size() for p in net.parameters())
    host: dict[tuple, dict[int, dict[str, Any]]] = {}
    allreduce: dict[int, float] = {}
    plans = {(p, k): (SAMPLERS[p], _host_workers(p, device, cores, k))
             for p in pipelines for k in ranks}
    for key in sorted(set(plans.values())):
        kind, workers = key
        for k in sorted({k for (_, k), v in plans.items() if v == key}):
            threads = max(1, cores // k)
            announce(f"scaling parts: {kind} host work on {k} rank(s) at once, {threads} "
                     f"core(s) each" + (f", {workers[0]} worker threads of {workers[1]}"
                                        if workers[0] else ""))
            rows = _run_ranks(k, cores, dataset, kind,
                              rank_batch_size(batch_size, k, per_rank_batch), batches, model,
                              timeout_s, workers)
            host.setdefault(key, {})[k] = _combine(rows)
            if model["compute"]:
                allreduce[k] = max((r.get("allreduce_s", 0.0) for r in rows), default=0.0)
    result: dict[str, Any] = {
        "host": {p: {k: host[plans[p, k]][k] for k in sorted(set(ranks))} for p in pipelines},
        "rank_batch": {k: rank_batch_size(batch_size, k, per_rank_batch) for k in ranks},
        "gradient_bytes": gradient_bytes, "cores": cores,
        "threads_per_rank": {k: max(1, cores // k) for k in ranks}}
    if model["compute"]:
        result["allreduce_s"] = allreduce
    else:
        announce("scaling parts: the model and the copy on one GPU")
        by_batch = {b: _device_parts(dataset, model, b, batches)
                    for b in sorted(set(result["rank_batch"].values()))}
        result["gpu"] = {
            "device_s": {k: by_batch[b][0] for k, b in result["rank_batch"].items()},
            "pcie_bytes_per_s": statistics.median(r for _, r in by_batch.values()),
            "host_read_bytes_per_s": _host_read_rate(),
            "name": torch.cuda.get_device_name(0)}
    return result
