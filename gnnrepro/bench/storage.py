"""`bench storage`: feature stores on data larger than the memory they may use, side by side.

Each store (memory | disk | mmap | lmdb) runs in a child process of its own
(gnnrepro.bench.child_process; the child: gnnrepro.bench.storage_child). Capped stores run
in a memory cgroup (v1 or v2, created here; root or a delegated cgroup needed; see
gnnrepro.bench.memory_cap): the child first loads the graph (into memory), builds the model,
trains one warm-up step on random inputs and commits the Loader's staging slots, then caps
itself at its peak so far plus `memory_limit` bytes (at least 16 MiB), so page cache and the
store's own buffers get exactly that much (default: `memory_fraction` of the feature file).
Without a memory cgroup the children run uncapped and the JSON says so and why: `memory_cap`
({"mode": "cgroup-v1" | "cgroup-v2" | "none", "reason": why none}) and each capped store's
`cap` ({"mode": "none", "reason": ...}). The file's page cache is dropped (fadvise) before each
child, so no store inherits another's warm pages. `memory` (the whole table in RAM) runs
uncapped: the upper bound.

Per store: gather throughput over `batches` sampled batches for `epochs` epochs (the same
batches for every store; every gathered batch is hashed and compared with the in-memory
store's: `rows_identical`), read amplification, hit rate per epoch, and one training epoch end
to end (GraphSAGE, workers=0) with its stage times. The device ceiling is measured in the same
run with fio (random direct reads at the row's block size and 4 KiB, queue depth 1 and 32,
and at the disk store's mean request size).

A store whose child runs past `timeout_s` is killed and reported as a lower bound (it is at
least this slow) from the progress it had reported (`lower_bound`: true, `timeout_s`,
`timed_out_in`: gather | train): killed in an epoch of gathers, that epoch as far as it got
(`complete`: false) with its rows/s at most what it reached (so where it is mmap, the others'
speedup_vs_mmap is at least what it says); killed in the training epoch,
`train.epoch_s_at_least`. The other stores' results are kept.
"""
from __future__ import annotations

import functools
import gc
import time
from pathlib import Path
from typing import Any

from gnnrepro.bench import memory_cap
from gnnrepro.bench.child_process import drop_page_cache, resident_bytes, run_child
from gnnrepro.bench.device_ceiling import fio_random_read
from gnnrepro.bench.storage_child import digest, sampled_batches
from gnnrepro.config import SETTINGS, STORAGE_DEFAULTS

__all__ = ["format_table", "measure"]

STORES = ("memory", "disk", "mmap", "lmdb")
#: The module each store's child runs.
CHILD = "gnnrepro.bench.storage_child"


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
    # The dataset's features may be a mapping of the very file mmap reads (the cache maps
    # features.gnnf once it exists): pages mapped here cannot be dropped, and a capped child
    # would find them cached outside its cgroup. Nothing below needs the dataset.
    del data
    gc.collect()
    cap = _probe_cap()
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
            "device_ceiling": device, "memory_cap": cap, "stores": results}


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
    return [[digest(mem.gather(ids)) for ids in
             sampled_batches(data, fanouts, batch_size, batches, seed, e)]
            for e in range(epochs)]


def _run_store(settings: dict[str, Any], file: Path, packed: Path,
               timeout: float) -> dict[str, Any]:
    """The child for store `settings["store"]`, after dropping the page cache of the feature
    file, its packed copy and its LMDB database (no store inherits another's warm pages), in
    a fresh memory cgroup unless it is the in-memory store."""
    drop_page_cache(file)
    drop_page_cache(packed)
    if file.with_suffix(".lmdb").exists():
        drop_page_cache(file.with_suffix(".lmdb"))
    # what is still cached after the drop is read at memory speed whatever the cap: counted
    read = {"disk": packed, "mmap": file, "lmdb": file.with_suffix(".lmdb") / "data.mdb"}
    resident = resident_bytes(read[settings["store"]]) if settings["store"] in read else None
    made = memory_cap.make_cgroup() if settings["store"] != "memory" else None
    cg = made if isinstance(made, tuple) else None
    try:
        result = run_child(CHILD, "storage",
                           dict(settings, cgroup=str(cg[0]) if cg else None,
                                cgroup_kind=cg[1] if cg else None), timeout,
                           functools.partial(_timed_out, settings["store"]))
    finally:
        if cg is not None:
            memory_cap.remove_cgroup(cg[0])
    if isinstance(made, str) and "cap" in result:  # uncapped: why
        result["cap"]["reason"] = made
    if "cap" in result and resident is not None:  # the in-memory store reads no file
        result["cap"]["file_resident_at_start_bytes"] = resident
    return result


def _probe_cap() -> dict[str, Any]:
    """Whether the capped stores can be capped here: a memory cgroup made and removed at once
    ({"mode": "cgroup-v1" | "cgroup-v2"}), or why none can be ({"mode": "none", "reason"})."""
    made = memory_cap.make_cgroup()
    if isinstance(made, str):
        return {"mode": "none", "reason": made}
    memory_cap.remove_cgroup(made[0])
    return {"mode": f"cgroup-{made[1]}"}


def _timed_out(store: str, lines: list[dict[str, Any]], timeout: float) -> dict[str, Any]:
    """The result of store `store`, whose child was killed after `timeout` seconds, from its
    progress lines (gnnrepro.bench.storage_child): the result it last reported, marked a lower
    bound, and the epoch or training it was killed in, the step in flight counted as done at
    the kill (so its rows/s are at most, its epoch time at least, what it reached)."""
    now = time.time()
    reported = [line for line in lines if line["progress"] == "result"]
    if not reported:
        return {"store": store, "error": f"timed out after {timeout:.0f} s, before its store "
                                         "was open"}
    last = lines[-1]
    result = dict(reported[-1]["result"], lower_bound=True, timeout_s=timeout,
                  timed_out_in={"batch": "gather", "step": "train"}.get(
                      last["progress"], last.get("next")))
    seconds = last.get("seconds", 0.0) + now - last["time"]
    if last["progress"] == "batch":
        in_store = last["store_seconds"] + now - last["time"]
        rows = last["rows"] + last["batch_rows"]
        result["epochs"] = [*result["epochs"], {
            "epoch": last["epoch"], "batches": last["batches"], "complete": False,
            "seconds": seconds, "store_seconds": in_store, "rows": last["rows"],
            "rows_per_s": rows / in_store, "wall_rows_per_s": rows / seconds,
            "bytes_per_s": rows * last["row_bytes"] / in_store}]
        result["rows_identical"] = result.get("rows_identical", True) and last["identical"]
    elif last["progress"] == "step":
        result["train"] = {"epoch_s_at_least": seconds * last["batches"]
                           / (last["batches_done"] + 1),
                           "batches": last["batches"], "batches_done": last["batches_done"]}
    if not result["epochs"]:
        return {"store": store, "error": f"timed out after {timeout:.0f} s, before its first "
                                         "batch"}
    return result


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
    memory = results.get("memory", {}).get("train", {})
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
        if "train" in r and "epoch_s" in memory:  # a store stopped in training: at least
            epoch = r["train"].get("epoch_s", r["train"].get("epoch_s_at_least"))
            r["train"]["vs_memory"] = epoch / memory["epoch_s"]


def _reached_words(name: str, cap: dict[str, Any]) -> str:
    """' (limit reached)'; for the disk store under its cap, that it stayed within it (its
    budget bounds it); for a baseline that never reached its cap, why that is no capped
    measurement; '' where there was no cap."""
    got = memory_cap.reached(cap)
    if got is None:
        return ""
    if got:
        return " (limit reached)"
    if name == "disk":
        return (f" (within it: peak {cap['peak_bytes'] / 2**20:.0f} of "
                f"{cap['limit_bytes'] / 2**20:.0f} MiB)")
    cached = cap.get("file_resident_at_start_bytes")
    return (f" (NOT reached: peak {cap['peak_bytes'] / 2**20:.0f} of {cap['limit_bytes'] / 2**20:.0f}"
            " MiB" + ("" if cached is None else
                      f"; {cached / 2**20:.0f} MiB of its file cached at its start")
            + ": no capped measurement)")


def format_table(result: dict[str, Any]) -> str:
    """One line per store; a store stopped at its time limit says so (its rows/s are at most,
    its epoch time at least, what the line shows)."""
    cap = result.get("memory_cap", {})
    lines = [f"feature file {result['feature_file']['bytes'] / 2**20:.0f} MiB, memory limit "
             f"{result['params']['memory_limit'] / 2**20:.0f} MiB"
             + (f"; uncapped: {cap['reason']}" if "reason" in cap else ""),
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
                     f"{tr.get('epoch_s', tr.get('epoch_s_at_least', float('nan'))):8.2f} "
                     f"{tr.get('vs_memory', 1.0):6.2f} {r['rows_identical']} {r['cap']['mode']}"
                     + _reached_words(name, r["cap"])
                     + (f" (stopped after {r['timeout_s']:.0f} s in {r['timed_out_in']}: rows/s"
                        " <, epoch s >)" if r.get("lower_bound") else ""))
    return "\n".join(lines)

