"""The child process of `bench storage`: one feature store measured, in a memory cgroup of
its own when one could be made (gnnrepro.bench.memory_cap).

The child loads the graph (into memory), builds the model, trains one warm-up step on random
inputs and commits the Loader's staging slots, then caps itself at its peak so far plus
`memory_limit` bytes (at least 16 MiB). It gathers every epoch's batches (hashing each one
against the in-memory store's), then trains one epoch end to end through the Loader. As it
goes it reports its progress to the parent (gnnrepro.bench.child_process.progress): its
result after the store is open and after each epoch ("result", with what comes "next"),
every batch before it is gathered ("batch") and every training step before it is taken
("step"), from which the parent reports a store it had to stop as a lower bound.
"""
from __future__ import annotations

import dataclasses
import hashlib
import time
from pathlib import Path
from typing import Any

import torch

from gnnrepro.bench import memory_cap
from gnnrepro.bench.child_process import child_main, progress
from gnnrepro.config import SETTINGS

__all__ = ["child", "digest", "sampled_batches"]

# The least a capped store gets beyond the baseline: a process's own fixed costs (an I/O
# thread's malloc arena and stack, the reader's buffers) need a few MiB whatever the file's
# size, so caps of tiny files (tests) would only measure those.
_MIN_CAP = 16 << 20


def sampled_batches(dataset: Any, fanouts: list[int], batch_size: int, batches: int, seed: int,
                    epoch: int) -> list[torch.Tensor]:
    """The input nodes of the first `batches` batches of epoch `epoch`, sampled with the fused
    sampler: the Loader's batch plan with one rank, so a batch here is the batch the Loader
    would train on."""
    from gnnrepro.pipeline import BatchPlan
    from gnnrepro.sampling import FusedSampler
    sampler = FusedSampler(dataset.graph, fanouts, seed=seed)
    plan = BatchPlan(dataset.train_idx, batch_size, seed=seed)
    order = plan.epoch_ids(epoch)
    return [sampler.sample(plan.seeds(order, b), plan.batch_id(epoch, b)).input_nodes.clone()
            for b in range(min(batches, len(plan)))]


def digest(rows: torch.Tensor) -> str:
    return hashlib.blake2b(rows.contiguous().view(torch.uint8).numpy().tobytes(),
                           digest_size=16).hexdigest()


def _warm_up(data: Any, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
             fanouts: list[int], batch_size: int, seed: int) -> None:
    """One training step on random inputs of a batch's shape, so that the peak before the cap
    holds a step's activations and the optimizer state at full size without reading a single
    feature page. Twice a batch's seeds: the peak then covers the largest batch's too."""
    from gnnrepro.sampling import FusedSampler
    warm = FusedSampler(data.graph, fanouts, seed=seed).sample(data.train_idx[:2 * batch_size], 0)
    x = torch.randn(warm.input_nodes.numel(), data.num_features)
    loss = torch.nn.functional.cross_entropy(model(warm.blocks, x), data.labels[warm.seeds])
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def _cap(cgroup: Path, kind: str, memory_limit: int, reserved: torch.Tensor) -> dict[str, Any]:
    """Cap the cgroup at this process's baseline (its usage or peak so far) plus
    `memory_limit` bytes (at least _MIN_CAP); the cap's description for the result."""
    baseline = max(memory_cap.usage(cgroup, kind), memory_cap.peak(cgroup, kind))
    limit = baseline + max(memory_limit, _MIN_CAP)
    memory_cap.set_limit(cgroup, kind, limit)
    return {"mode": f"cgroup-{kind}", "baseline_bytes": baseline,
            "reserved_for_staging_bytes": reserved.numel() * reserved.element_size(),
            "limit_bytes": limit}


def _store_options(settings: dict[str, Any]) -> dict[str, Any]:
    """open_feature_store's options for the store `settings` names: the disk store's budget
    split into hot set and cache, and its reader's settings; none for the others."""
    if settings["store"] != "disk":
        return {}
    budget, hot_share = settings["budget_bytes"], settings["hot_share"]
    return {"hot_bytes": int(budget * hot_share), "cache_bytes": int(budget * (1 - hot_share)),
            "hot_policy": settings["hot_policy"], "engine": settings["engine"],
            "threads": settings["io_threads"], "queue_depth": settings["queue_depth"],
            "max_gap_bytes": settings["max_gap_bytes"]}


def _gather_epoch(store: Any, disk: bool, batches: list[torch.Tensor], out: torch.Tensor,
                  digests: list[str], lookahead: int, limit_s: float,
                  epoch: int) -> tuple[dict[str, Any], bool]:
    """Gather one epoch's `batches` into `out` (the disk store reading `lookahead` batches
    ahead), stopping after `limit_s` seconds; (the epoch's entry, whether every gathered batch
    hashes as the in-memory store's did)."""
    if disk:
        store.discard_prefetched()
        store.reset_stats()
    rows = done = 0
    identical = True
    inside = 0.0  # seconds in the store's calls; the hashing between them is the "compute"
    start = time.perf_counter()
    for b, ids in enumerate(batches):
        if time.perf_counter() - start > limit_s:
            break  # a slow store: rates from the batches done (the JSON says how many)
        progress("batch", epoch=epoch, batches=done, rows=rows, batch_rows=ids.numel(),
                 store_seconds=inside, seconds=time.perf_counter() - start,
                 row_bytes=store.dim * store.dtype.itemsize, identical=identical)
        t0 = time.perf_counter()
        if lookahead:
            if b == 0:
                for k in range(min(lookahead, len(batches))):
                    store.prefetch(batches[k])
            elif b + lookahead - 1 < len(batches):
                store.prefetch(batches[b + lookahead - 1])
        got = store.gather(ids, out)
        inside += time.perf_counter() - t0
        rows += ids.numel()
        identical &= digest(got) == digests[b]
        done += 1
    seconds = time.perf_counter() - start
    row_bytes = store.dim * store.dtype.itemsize
    entry = {"epoch": epoch, "batches": done, "seconds": seconds, "store_seconds": inside,
             "rows": rows, "rows_per_s": rows / inside, "wall_rows_per_s": rows / seconds,
             "bytes_per_s": rows * row_bytes / inside}
    if disk:
        entry.update(store.stats.to_dict(row_bytes))
        entry["device_bytes_per_s"] = store.stats.bytes_read / seconds  # wall: reads overlap
    return entry, identical


def child(settings: dict[str, Any]) -> dict[str, Any]:
    """Run one store (in this process, which may join a cgroup and cap itself)."""
    cgroup = Path(settings["cgroup"]) if settings.get("cgroup") else None
    if cgroup is not None:
        memory_cap.join(cgroup)
    from gnnrepro.datasets import load_scaled
    from gnnrepro.features import open_feature_store
    from gnnrepro.training import build_model
    torch.set_num_threads(settings["threads"])
    kind = settings["store"]
    data = load_scaled(settings["dataset"], settings["root"], settings["scale"])
    # The graph in (shared) memory, as in every pipeline with workers: the cap is for the
    # features. Left as a file mapping, sampling would page the graph in and out under it.
    data.graph.share_memory_()
    fanouts, bs, seed = settings["fanouts"], settings["batch_size"], settings["seed"]
    epochs = [sampled_batches(data, fanouts, bs, settings["batches"], seed, e)
              for e in range(settings["epochs"])]
    model = build_model(data, len(fanouts), settings["hidden"], SETTINGS["dropout"].default,
                        seed, torch.device("cpu"))
    optimizer = torch.optim.Adam(model.parameters(), lr=SETTINGS["lr"].default)
    biggest = max(b.numel() for e in epochs for b in e)
    out = torch.ones((biggest, data.num_features), dtype=data.features.dtype)  # committed
    # The baseline is the peak of one training step, measured from here.
    if cgroup is not None:
        memory_cap.reset_peak(cgroup, settings["cgroup_kind"])
    _warm_up(data, model, optimizer, fanouts, bs, seed)
    # The end-to-end Loader's staging slots (2 x prefetch, each holding at most a batch) are
    # the training process's too: reserved (committed) now, so they count in the baseline
    # and no store's page cache can use them while gathers are measured; handed back just
    # before the Loader fills them. A store's own buffers come out of its cap.
    prefetch = max(settings["lookahead"], 1)
    reserve = torch.ones(2 * prefetch * out.numel(), dtype=out.dtype)
    cap: dict[str, Any] = {"mode": "none"}
    if cgroup is not None and kind != "memory":
        cap = _cap(cgroup, settings["cgroup_kind"], settings["memory_limit"], reserve)
    t0 = time.perf_counter()
    store = open_feature_store(kind, data, share=False, **_store_options(settings))
    result: dict[str, Any] = {"store": kind, "cap": cap, "open_s": time.perf_counter() - t0,
                              "epochs": []}
    if kind == "disk":
        result["engine"] = store.engine
        result["memory_bytes"] = store.memory_bytes()
    progress("result", result=result, next="gather")
    identical = True
    for e, batches in enumerate(epochs):
        entry, same = _gather_epoch(store, kind == "disk", batches, out, settings["digests"][e],
                                    settings["lookahead"] if kind == "disk" else 0,
                                    settings["epoch_seconds"], e)
        result["epochs"].append(entry)
        identical &= same
        result["rows_identical"] = bool(identical)
        progress("result", result=result,
                 next="gather" if e + 1 < len(epochs) else "train" if settings["train"] else "end")
    # End to end: one training epoch through the Loader with this store (a slow store stops
    # after epoch_seconds; its epoch time is then extrapolated from the batches it did).
    del reserve
    if settings["train"]:
        result["train"] = _train(data, store, model, optimizer, settings)
    if cgroup is not None and cap["mode"] != "none":
        result["cap"]["peak_bytes"] = memory_cap.peak(cgroup, settings["cgroup_kind"])
    return result


def _train(data: Any, store: Any, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
           settings: dict[str, Any]) -> dict[str, Any]:
    """Train on the first `train_batches` batches through a Loader reading from `store`."""
    from gnnrepro.pipeline import Loader
    from gnnrepro.sampling import FusedSampler
    bs, seed = settings["batch_size"], settings["seed"]
    if hasattr(store, "reset_stats"):
        store.reset_stats()
    part = dataclasses.replace(data, train_idx=data.train_idx[:settings["train_batches"] * bs])
    loader = Loader(part, FusedSampler(data.graph, settings["fanouts"], seed=seed), "cpu", bs,
                    workers=0, prefetch=max(settings["lookahead"], 1), seed=seed,
                    feature_store=store)
    model.train()
    done, waited = 0, 0.0
    start = time.perf_counter()
    batches = iter(loader)
    while True:
        progress("step", batches=len(loader), batches_done=done,
                 seconds=time.perf_counter() - start)
        t0 = time.perf_counter()
        mb = next(batches, None)
        waited += time.perf_counter() - t0
        if mb is None:
            break
        loss = torch.nn.functional.cross_entropy(model(mb.blocks, mb.x), mb.y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        done += 1
        del mb
        if time.perf_counter() - start > settings["epoch_seconds"]:
            break
    seconds = time.perf_counter() - start
    loader.close()
    out = {"epoch_s": seconds * len(loader) / max(done, 1), "batches": len(loader),
           "batches_done": done, "extrapolated": done < len(loader),
           "loader_wait_s": waited * len(loader) / max(done, 1),
           "work_s": loader.work_seconds()}
    if hasattr(store, "stats"):
        out["hit_rate"] = store.stats.hit_rate()
        out["bytes_read_per_byte_used"] = store.stats.bytes_read_per_byte_used(
            store.dim * store.dtype.itemsize)
    return out


if __name__ == "__main__":  # settings as JSON in argv[1], result as JSON on stdout
    child_main(child)
