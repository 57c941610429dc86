"""`bench storage`: feature stores on data larger than the memory they may use, side by side.

Each store (memory | disk | mmap | lmdb) runs in a child process of its own. Capped stores run
in a memory cgroup (v1 or v2, created here; root or a delegated cgroup needed): the child
first loads the graph (into memory), builds the model, trains one warm-up step on random
inputs and commits the Loader's staging slots, then caps itself at its peak so far plus
`memory_limit` bytes (at least 16 MiB), so page cache and the store's own buffers get exactly
that much (default: `memory_fraction` of the feature file). Without a writable cgroup the children
run uncapped and the JSON says so. The file's page cache is dropped (fadvise) before each
child, so no store inherits another's warm pages. `memory` (the whole table in RAM) runs
uncapped: the upper bound.

Per store: gather throughput over `batches` sampled batches for `epochs` epochs (the same
batches for every store; every gathered batch is hashed and compared with the in-memory
store's: `rows_identical`), read amplification, hit rate per epoch, and one training epoch end
to end (GraphSAGE, workers=0) with its stage times. The device ceiling is measured in the same
run with fio (random direct reads at the row's block size and 4 KiB, queue depth 1 and 32,
and at the disk store's mean request size).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import torch

from gnnrepro.config import SETTINGS, STORAGE_DEFAULTS

__all__ = ["format_table", "measure"]

_CGROUP_V1 = Path("/sys/fs/cgroup/memory")
_CGROUP_V2 = Path("/sys/fs/cgroup")
STORES = ("memory", "disk", "mmap", "lmdb")
# The least a capped store gets beyond the baseline: a process's own fixed costs (an I/O
# thread's malloc arena and stack, the reader's buffers) need a few MiB whatever the file's
# size, so caps of tiny files (tests) would only measure those.
_MIN_CAP = 16 << 20


# ---- memory cap --------------------------------------------------------------------------

def make_cgroup() -> tuple[Path, str] | None:
    """A fresh memory cgroup this process may fill and cap: (its directory, "v1"|"v2")."""
    name = f"gnnrepro-storage-{os.getpid()}-{time.monotonic_ns()}"
    for root, kind, limit in ((_CGROUP_V1, "v1", "memory.limit_in_bytes"),
                              (_CGROUP_V2, "v2", "memory.max")):
        if not (root / limit).exists() and not (root / "cgroup.controllers").exists():
            continue
        try:
            path = root / name
            path.mkdir()
            if (path / limit).exists():
                return path, kind
            path.rmdir()
        except OSError:
            continue
    return None


def _limit_file(cgroup: Path, kind: str) -> Path:
    return cgroup / ("memory.limit_in_bytes" if kind == "v1" else "memory.max")


def _usage(cgroup: Path, kind: str) -> int:
    return int((cgroup / ("memory.usage_in_bytes" if kind == "v1" else "memory.current"))
               .read_text())


def _peak_file(cgroup: Path, kind: str) -> Path:
    return cgroup / ("memory.max_usage_in_bytes" if kind == "v1" else "memory.peak")


def _reset_peak(cgroup: Path, kind: str) -> None:
    """Restart the cgroup's peak-usage counter (v2 kernels before 6.12 cannot: then the peak
    since the cgroup was made, which is all this child's life, is what counts)."""
    try:
        _peak_file(cgroup, kind).write_text("0")
    except OSError:
        pass


def _peak(cgroup: Path, kind: str) -> int:
    try:
        return int(_peak_file(cgroup, kind).read_text())
    except (OSError, ValueError):
        return 0


def drop_page_cache(path: Path) -> None:
    """Evict `path`'s (clean) pages from the page cache."""
    files = [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else [path]
    for f in files:
        fd = os.open(f, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


# ---- device ceiling ------------------------------------------------------------------------

def fio_random_read(path: Path, block: int, depth: int, seconds: float = 2.0) -> dict | None:
    """fio random O_DIRECT reads of `block` bytes at queue depth `depth` on `path` (read only);
    None without fio."""
    if shutil.which("fio") is None:
        return reader_random_read(path, block, depth, seconds)
    cmd = ["fio", "--name=ceiling", f"--filename={path}", "--readonly", "--rw=randread",
           f"--bs={block}", f"--iodepth={depth}", "--direct=1", "--ioengine=io_uring",
           "--time_based", f"--runtime={seconds}", "--output-format=json",
           "--randrepeat=0", "--norandommap"]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        cmd[cmd.index("--ioengine=io_uring")] = "--ioengine=psync"
        cmd[cmd.index(f"--iodepth={depth}")] = f"--numjobs={depth}"
        cmd += ["--group_reporting"]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            return None
    job = json.loads(done.stdout)["jobs"][0]["read"]
    return {"block": block, "depth": depth, "iops": job["iops"],
            "bytes_per_s": job["bw_bytes"], "tool": "fio"}


def reader_random_read(path: Path, block: int, depth: int, seconds: float = 2.0) -> dict:
    """The same measurement with our own reader (where fio is not installed): random distinct
    `block`-sized O_DIRECT reads, `depth` in flight, for about `seconds`."""
    from gnnrepro import _ops
    blocks = os.path.getsize(path) // block
    reader = _ops._C.DiskReader(str(path), 0, block, blocks, min(block, 4096), depth, depth, 0,
                                max(block, 4096), "auto", True)
    gen = torch.Generator().manual_seed(0)
    n = max(depth * 64, 1024)
    buf = torch.empty((n, block), dtype=torch.uint8)
    done = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        pos = torch.unique(torch.randint(0, blocks, (n,), generator=gen))
        requests, _ = reader.submit(pos, buf).wait()
        done += requests
    elapsed = time.perf_counter() - start
    tool = f"gnnrepro DiskReader ({reader.engine})"
    reader.close()
    return {"block": block, "depth": depth, "iops": done / elapsed,
            "bytes_per_s": done * block / elapsed, "tool": tool}


# ---- the child ---------------------------------------------------------------------------

def _batches(dataset: Any, fanouts: list[int], batch_size: int, batches: int, seed: int,
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


def _digest(rows: torch.Tensor) -> str:
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
    baseline = max(_usage(cgroup, kind), _peak(cgroup, kind))
    limit = baseline + max(memory_limit, _MIN_CAP)
    _limit_file(cgroup, kind).write_text(str(limit))
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
        identical &= _digest(got) == digests[b]
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
        (cgroup / "cgroup.procs").write_text(str(os.getpid()))
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
    epochs = [_batches(data, fanouts, bs, settings["batches"], seed, e)
              for e in range(settings["epochs"])]
    model = build_model(data, len(fanouts), settings["hidden"], SETTINGS["dropout"].default,
                        seed, torch.device("cpu"))
    optimizer = torch.optim.Adam(model.parameters(), lr=SETTINGS["lr"].default)
    biggest = max(b.numel() for e in epochs for b in e)
    out = torch.ones((biggest, data.num_features), dtype=data.features.dtype)  # committed
    # The baseline is the peak of one training step, measured from here.
    if cgroup is not None:
        _reset_peak(cgroup, settings["cgroup_kind"])
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
    identical = True
    for e, batches in enumerate(epochs):
        entry, same = _gather_epoch(store, kind == "disk", batches, out, settings["digests"][e],
                                    settings["lookahead"] if kind == "disk" else 0,
                                    settings["epoch_seconds"], e)
        result["epochs"].append(entry)
        identical &= same
    result["rows_identical"] = bool(identical)
    # End to end: one training epoch through the Loader with this store (a slow store stops
    # after epoch_seconds; its epoch time is then extrapolated from the batches it did).
    del reserve
    if settings["train"]:
        result["train"] = _train(data, store, model, optimizer, settings)
    if cgroup is not None and cap["mode"] != "none":
        result["cap"]["peak_bytes"] = _peak(cgroup, settings["cgroup_kind"])
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


# ---- the parent ----------------------------------------------------------------------------

def _run_child(settings: dict[str, Any], timeout: float) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "gnnrepro.bench.storage", json.dumps(settings)]
    print(f"bench storage: {settings['store']} ...", file=sys.stderr, flush=True)
    # A fixed malloc mmap threshold: large buffers freed go back to the system at once (glibc's
    # adaptive threshold would keep them in the heap, charged to the cap, after the first).
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="131072")
    done = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, timeout=timeout, check=False,
                          env=env)
    if done.returncode != 0:  # its traceback went to our stderr
        return {"store": settings["store"], "error": f"child exited with {done.returncode}"
                                                      " (-9: killed, e.g. out of memory)"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(*, dataset: str = SETTINGS["dataset"].default, scale: float = 0.25,
            root: str | None = None, fanouts: list[int] | None = None,
            batch_size: int = SETTINGS["batch_size"].default,
            batches: int = STORAGE_DEFAULTS.batches, epochs: int = STORAGE_DEFAULTS.epochs,
            stores: list[str] | None = None, memory_limit: int | None = None,
            budget_fraction: float = STORAGE_DEFAULTS.budget_fraction,
            hot_share: float = STORAGE_DEFAULTS.hot_share, hot_policy: str = "degree",
            engine: str = "auto", io_threads: int = STORAGE_DEFAULTS.io_threads,
            queue_depth: int = STORAGE_DEFAULTS.queue_depth, max_gap_bytes: int | None = None,
            lookahead: int = STORAGE_DEFAULTS.lookahead, threads: int = 2,
            hidden: int = SETTINGS["hidden"].default, seed: int = SETTINGS["seed"].default,
            train: bool = True, train_batches: int = STORAGE_DEFAULTS.train_batches,
            epoch_seconds: float = STORAGE_DEFAULTS.epoch_seconds,
            memory_fraction: float = STORAGE_DEFAULTS.memory_fraction,
            ceiling_seconds: float = STORAGE_DEFAULTS.ceiling_seconds, ceiling: bool = True,
            timeout_s: float = 900.0) -> dict[str, Any]:
    """Run the stores side by side (see the module doc); returns the JSON-ready result.
    Defaults: gnnrepro.config's SETTINGS and STORAGE_DEFAULTS (fanouts: SETTINGS')."""
    from gnnrepro.datasets import load_scaled
    from gnnrepro.env import environment
    from gnnrepro.feature_file import read_header
    fanouts = fanouts or list(SETTINGS["fanouts"].default)
    stores = stores or list(STORES)
    for s in stores:
        if s not in STORES:
            raise ValueError(f"stores: unknown store {s!r} (known: {', '.join(STORES)})")
    data = load_scaled(dataset, root, scale)
    file, packed, block = _feature_files(data, "lmdb" in stores)
    info = read_header(file)
    file_bytes = info.data_bytes
    if memory_limit is None:
        memory_limit = int(file_bytes * memory_fraction)
    settings = {"dataset": dataset, "scale": scale, "root": root, "fanouts": fanouts,
                "batch_size": batch_size, "batches": batches, "epochs": epochs,
                "memory_limit": memory_limit, "budget_bytes": int(file_bytes * budget_fraction),
                "hot_share": hot_share, "hot_policy": hot_policy, "engine": engine,
                "io_threads": io_threads, "queue_depth": queue_depth,
                "max_gap_bytes": max_gap_bytes, "lookahead": lookahead, "threads": threads,
                "hidden": hidden, "seed": seed, "train": train, "train_batches": train_batches,
                "epoch_seconds": epoch_seconds,
                "digests": _memory_digests(data, fanouts, batch_size, batches, seed, epochs)}
    results = {kind: _run_store(dict(settings, store=kind), file, packed, timeout_s)
               for kind in stores}
    row_block = -(-info.row_bytes // block) * block
    device = (_device_ceiling(file, results.get("disk", {}), row_block, block, queue_depth,
                              ceiling_seconds) if ceiling else {})
    _summarise(results, device, row_block, queue_depth)
    return {"benchmark": "storage", "env": environment(),
            "params": {k: v for k, v in settings.items() if k != "digests"},
            "feature_file": {"path": str(file), "bytes": file_bytes,
                             "row_bytes": info.row_bytes, "block_size": block,
                             "disk_store_file": str(packed),
                             "disk_store_file_bytes": read_header(packed).span_bytes},
            "device_ceiling": device, "stores": results}


def _feature_files(data: Any, lmdb: bool) -> tuple[Path, Path, int]:
    """(the dense feature file mmap and lmdb read, the disk store's block-packed copy, the
    device's block size); built here, not in a capped child, as is the LMDB database when
    `lmdb`."""
    from gnnrepro.features.factory import feature_file_for
    from gnnrepro.feature_file import block_size_of, read_header
    file = feature_file_for(data)
    block = block_size_of(file)
    packed = (feature_file_for(data, pack_block=block) if read_header(file).row_bytes % block
              else file)
    if lmdb:
        from gnnrepro.features import open_feature_store
        open_feature_store("lmdb", file).close()
    return file, packed, block


def _memory_digests(data: Any, fanouts: list[int], batch_size: int, batches: int, seed: int,
                    epochs: int) -> list[list[str]]:
    """The hash of every measured batch's rows from the in-memory store, per epoch: what
    every store's gathered rows must equal."""
    from gnnrepro.features import InMemoryFeatureStore
    mem = InMemoryFeatureStore(data.features, share=False, pin=False)
    return [[_digest(mem.gather(ids)) for ids in
             _batches(data, fanouts, batch_size, batches, seed, e)] for e in range(epochs)]


def _run_store(settings: dict[str, Any], file: Path, packed: Path,
               timeout: float) -> dict[str, Any]:
    """The child for store `settings["store"]`, after dropping the page cache of the feature
    file, its packed copy and its LMDB database (no store inherits another's warm pages), in
    a fresh memory cgroup unless it is the in-memory store."""
    drop_page_cache(file)
    drop_page_cache(packed)
    if file.with_suffix(".lmdb").exists():
        drop_page_cache(file.with_suffix(".lmdb"))
    cg = make_cgroup() if settings["store"] != "memory" else None
    try:
        return _run_child(dict(settings, cgroup=str(cg[0]) if cg else None,
                               cgroup_kind=cg[1] if cg else None), timeout)
    finally:
        if cg is not None:
            try:
                cg[0].rmdir()
            except OSError:
                pass


def _device_ceiling(file: Path, disk: dict[str, Any], row_block: int, block: int,
                    depth: int, seconds: float) -> dict[str, Any]:
    """Random direct reads of `file` at the row's block size and 4 KiB, queue depth 1 and 32,
    and (when the disk store ran) at its mean request size and `depth`, which is added to
    `disk` as mean_request_bytes."""
    device = {f"{b}B_qd{d}": fio_random_read(file, b, d, seconds)
              for b in sorted({row_block, 4096}) for d in (1, 32)}
    if "epochs" in disk and disk["epochs"][-1].get("requests"):
        e = disk["epochs"][-1]
        mean = max(block, round(e["bytes_read"] / e["requests"] / block) * block)
        device[f"{mean}B_qd{depth}"] = fio_random_read(file, mean, depth, seconds)
        disk["mean_request_bytes"] = mean
    return device


def _summarise(results: dict[str, Any], ceiling: dict[str, Any], row_block: int,
               depth: int) -> None:
    """Add speedup_vs_mmap and fraction_of_device_ceiling to each store's result."""
    def rate(r: dict) -> float | None:
        return r["epochs"][-1]["rows_per_s"] if "epochs" in r else None

    mmap = rate(results.get("mmap", {}))
    row_ceiling = ceiling.get(f"{row_block}B_qd{depth}") or ceiling.get(f"{row_block}B_qd32")
    for name, r in results.items():
        if "epochs" not in r:
            continue
        e = r["epochs"][-1]
        r["rows_per_s"] = e["rows_per_s"]
        r["hit_rate"] = [x.get("hit_rate") for x in r["epochs"]]
        r["bytes_read_per_byte_used"] = e.get("bytes_read_per_byte_used")
        r["speedup_vs_mmap"] = r["rows_per_s"] / mmap if mmap else None
        if row_ceiling:  # rows the device could deliver with one request per row
            r["fraction_of_device_ceiling"] = {
                "rows": r["rows_per_s"] / row_ceiling["iops"]}
        mean = r.get("mean_request_bytes")
        at_size = ceiling.get(f"{mean}B_qd{depth}") if mean else None
        if at_size and "device_bytes_per_s" in e:
            r.setdefault("fraction_of_device_ceiling", {})["bandwidth_same_request_size"] = (
                e["device_bytes_per_s"] / at_size["bytes_per_s"])
        if "train" in r and "memory" in results and "train" in results["memory"]:
            r["train"]["vs_memory"] = r["train"]["epoch_s"] / results["memory"]["train"]["epoch_s"]


def format_table(result: dict[str, Any]) -> str:
    lines = [f"feature file {result['feature_file']['bytes'] / 2**20:.0f} MiB, memory limit "
             f"{result['params']['memory_limit'] / 2**20:.0f} MiB",
             f"{'store':8} {'Mrows/s':>8} {'x mmap':>7} {'B read/B':>9} {'hit':>6} "
             f"{'epoch s':>8} {'x mem':>6} identical cap"]
    for name, r in result["stores"].items():
        if "error" in r:
            lines.append(f"{name:8} ERROR {r['error'][:200]}")
            continue
        amp = r.get("bytes_read_per_byte_used")
        hit = r["hit_rate"][-1]
        tr = r.get("train", {})
        lines.append(f"{name:8} {r['rows_per_s'] / 1e6:8.3f} "
                     f"{(r['speedup_vs_mmap'] or 0):7.2f} "
                     f"{'' if amp is None else f'{amp:.2f}':>9} "
                     f"{'' if hit is None else f'{hit:.2f}':>6} "
                     f"{tr.get('epoch_s', float('nan')):8.2f} {tr.get('vs_memory', 1.0):6.2f} "
                     f"{r['rows_identical']} {r['cap']['mode']}")
    return "\n".join(lines)


if __name__ == "__main__":  # a child: settings as JSON in argv[1], result as JSON on stdout
    print(json.dumps(child(json.loads(sys.argv[1]))))
