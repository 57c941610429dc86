"""docs/peers.md's measured table: each stack (ours, DGL's pipeline, DGL's whole stack,
GraphBolt, PyG, DistDGL) side by side, read from the stored JSONs so no cell is typed.

Each cell is "default scale / products size", one JSON per side and column; the line above the
table names the commit, day and machine of every file it reads. Numbers are formatted from
unrounded values (3 significant digits, as tools/headline.py). A missing file or field raises
MissingField naming both, so tools/generated_blocks.py --check fails rather than print a blank.
tools/generated_blocks.py writes the block between its markers.
"""
from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

TOOLS = str(Path(__file__).resolve().parent)
if TOOLS not in sys.path:
    sys.path.insert(0, TOOLS)  # headline.py beside this file, also when loaded by path

import headline  # noqa: E402  (its RESULTS folder: one folder for both tables)

__all__ = ["MissingField", "peers_table"]

#: Column -> (default-scale JSON, products-size JSON), in the table's order.
FILES = {"sampling": ("peers-sampling-cpu", "peers-sampling-cpu-products"),
         "loader": ("peers-loader-cpu", "peers-loader-cpu-products"),
         "train": ("peers-train-cpu", "peers-train-cpu-products"),
         "memory": ("scaling-cpu", "scaling-cpu-products")}
DISTDGL = "partitioned-cpu-10ep"
#: The validation accuracy shown is the one after this many epochs.
EPOCHS_SHOWN = 2


class Stack(NamedTuple):
    """A row: its label ({versions}: the peer's, from its runs), its sampler in the sampling
    JSONs (None: "as DGL's"), its name in the loader and training JSONs, whether it is a peer
    (another environment's stack, which a run may not have run) and whether it is ours (bold)."""
    label: str
    sampler: str | None
    name: str
    peer: bool = False
    ours: bool = False


STACKS = (Stack("**ours** (fused; fused+pinned)", "fused", "fused+pinned", ours=True),
          Stack("DGL's pipeline, our model (dgl-fused; dgl)", "dgl-fused", "dgl"),
          Stack("DGL's whole stack (`dgl-native`: its loader and its model)", None, "dgl-native"),
          Stack("GraphBolt {versions}", "graphbolt", "graphbolt", peer=True),
          Stack("PyG {versions}", "pyg", "pyg", peer=True))
NOT_ASKED = "not run (not asked for in this run; why: [NOTES](../benchmarks/NOTES.md))"


class MissingField(LookupError):
    """A stored result lacks the file or field a cell is read from."""


def _plain(value: float) -> str:
    """Three significant digits, without an exponent for values of 1,000 and more."""
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"


@functools.lru_cache(maxsize=32)
def _read(path: Path, version: tuple[int, int]) -> dict[str, Any]:
    """The JSON at `path` as of `version` (its mtime and size): each file parsed once per
    version, not once per cell."""
    return json.loads(path.read_text())


def _load(name: str) -> dict[str, Any]:
    path = headline.RESULTS / f"{name}.json"
    if not path.exists():
        raise MissingField(f"benchmarks/results/{name}.json: no such file")
    stat = path.stat()
    return _read(path, (stat.st_mtime_ns, stat.st_size))


def _get(name: str, *path: str | int) -> Any:
    """result[path[0]][path[1]]... of the JSON `name`, or MissingField naming the file and the
    field's path."""
    value: Any = _load(name)
    for depth, key in enumerate(path):
        try:
            value = value[key]
        except (KeyError, IndexError, TypeError):
            field = ".".join(str(k) for k in path[:depth + 1])
            raise MissingField(f"benchmarks/results/{name}.json: no field {field}") from None
    return value


def _not_run(name: str, section: str, key: str, peer: bool) -> str | None:
    """None where result[section] has the stack; for a peer the run did not run, why not."""
    if not peer or key in _get(name, section):
        return None
    why = _load(name).get("peers_not_run", {}).get(key)
    return NOT_ASKED if why is None else f"not run: {why.splitlines()[0][:200]}"


def _sides(column: str, cell: Callable[[str], str], bold: bool = False) -> str:
    """"default / products", each side cell(its JSON's name), bold for ours."""
    return " / ".join(f"**{cell(n)}**" if bold else cell(n) for n in FILES[column])


def _sampling(sampler: str, peer: bool) -> Callable[[str], str]:
    def cell(name: str) -> str:
        at = ("samplers", sampler)
        return _not_run(name, *at, peer) or (
            f"{_plain(_get(name, *at, 'ms_per_batch'))} ms, "
            f"{_get(name, *at, 'edges_per_s') / 1e6:.3g}M/s")
    return cell


def _loader(pipeline: str, peer: bool) -> Callable[[str], str]:
    def cell(name: str) -> str:
        return (_not_run(name, "pipelines", pipeline, peer)
                or _plain(_get(name, 'pipelines', pipeline, 'batches_per_s')))
    return cell


def _epoch(stack: str, peer: bool) -> Callable[[str], str]:
    def cell(name: str) -> str:
        at = ("peers" if peer else "pipelines", stack)
        return _not_run(name, *at, peer) or _plain(_get(name, *at, 'epoch_s'))
    return cell


def _accuracy(stack: str, peer: bool) -> Callable[[str], str]:
    """Validation accuracy after EPOCHS_SHOWN epochs, and when the run's target came later."""
    def cell(name: str) -> str:
        at = ("peers" if peer else "pipelines", stack)
        if _not_run(name, *at, peer):
            return "-"
        text = f"{_get(name, *at, 'val_acc_epochs', EPOCHS_SHOWN - 1):.3g}"
        reached, target = _get(name, *at, "epochs_to_target"), _get(name, "params", "target_acc")
        if reached is None:
            epochs = len(_get(name, *at, "val_acc_epochs"))
            text += f" ({target:.2f} not reached in {epochs} epochs)"
        elif reached > EPOCHS_SHOWN:
            text += f" ({target:.2f} after {reached} epochs)"
        return text
    return cell


def _memory(pipeline: str) -> Callable[[str], str]:
    """Extra memory per added rank at the result's largest world size (as the headline's)."""
    def cell(name: str) -> str:
        runs = [i for i, r in enumerate(_get(name, "runs")) if not r.get("skipped")]
        if pipeline not in {_get(name, "runs", i, "pipeline") for i in runs}:
            return "not measured"
        size = max(_get(name, "runs", i, "world_size") for i in runs)
        at = next((i for i in runs if _get(name, "runs", i, "world_size") == size
                   and _get(name, "runs", i, "pipeline") == pipeline), None)
        if at is None:
            raise MissingField(f"benchmarks/results/{name}.json: no run of {pipeline} at "
                               f"world_size {size}")
        return f"{_get(name, 'runs', at, 'extra_rss_per_rank_bytes') / 1e6:.3g} MB"
    return cell


def _versions(peer: str) -> str:
    """The peer's versions as its runs recorded them (one value, or each where they differ)."""
    found: dict[str, list[str]] = {}
    for column in ("sampling", "loader", "train"):
        for name in FILES[column]:
            result = _load(name)
            versions = (result.get("peer_versions", {}).get(peer)
                        or result.get("peers", {}).get(peer, {}).get("versions") or {})
            for key, value in versions.items():
                value = str(value).partition("+")[0]
                if value not in found.setdefault(key, []):
                    found[key].append(value)
    if not found:
        return "(versions not recorded: it ran in none of these files)"
    v = {key: "/".join(values) for key, values in found.items()}
    if peer == "graphbolt":
        return f"(DGL {v.get('dgl', '?')}, torch {v.get('torch', '?')})"
    lib = ("**without pyg-lib** (not in any registry here)" if v.get("pyg_lib") == "False"
           else f"with pyg-lib {v.get('pyg_lib', '?')}")
    return f"{v.get('torch_geometric', '?')} with torch-sparse {v.get('torch_sparse', '?')}, {lib}"


def _stack_row(stack: Stack) -> list[str]:
    label = stack.label.format(versions=_versions(stack.name)) if stack.peer else stack.label
    s, name, peer, ours = stack.sampler, stack.name, stack.peer, stack.ours
    memory = _sides("memory", _memory(name))
    return [label,
            "as DGL's" if s is None else _sides("sampling", _sampling(s, peer), ours),
            "as DGL's" if s is None else _sides("loader", _loader(name, peer), ours),
            _sides("train", _epoch(name, peer), ours),
            _sides("train", _accuracy(name, peer)),
            "not measured" if memory == "not measured / not measured" else memory]


def _distdgl_row() -> tuple[list[str], str]:
    """DistDGL's row (its largest machine count against ours on as many) and its traffic."""
    machines = max(int(m) for m in _get(DISTDGL, "dgl"))
    dgl = ("dgl", str(machines))
    at = next((i for i, r in enumerate(_get(DISTDGL, "runs")) if r.get("machines") == machines),
              None)
    if at is None:
        raise MissingField(f"benchmarks/results/{DISTDGL}.json: no run of ours on {machines} "
                           "machines")
    ours = ("runs", at)
    label = f"DistDGL, {machines} machines on one host [5]"
    if not _get(DISTDGL, *dgl, "ran"):
        why = str(_get(DISTDGL, *dgl, "reason")).splitlines()[0][:200]
        return [label, "-", "-", f"not run: {why}", "-", "-"], ""
    sent = (_get(DISTDGL, *ours, "bytes_per_batch", "sampling")
            + _get(DISTDGL, *ours, "bytes_per_batch", "features"))
    traffic = (f"On loopback [5], DistDGL's {machines} machines sent "
               f"{_get(DISTDGL, *dgl, 'loopback_bytes_per_step') / 1e6:.3g} MB per step; ours "
               f"{sent / 1e6:.3g} MB per rank per batch (sampling and feature exchange).")
    return [label, "-", "-",
            f"{_get(DISTDGL, *dgl, 'epoch_s'):.3g} (ours {_get(DISTDGL, *ours, 'epoch_s'):.3g})",
            f"test {_get(DISTDGL, *dgl, 'test_acc'):.3g} "
            f"(ours {_get(DISTDGL, *ours, 'test_acc'):.3g})", "-"], traffic


def _unique(names: list[str], *path: str) -> str:
    """The value at `path` in each of `names`, once each ("0.05", or "0.05 and 0.1")."""
    values: list[str] = []
    for name in names:
        value = _get(name, *path)
        text = ",".join(map(str, value)) if isinstance(value, list) else str(value)
        if text not in values:
            values.append(text)
    return " and ".join(values)


def _cells_line() -> str:
    """What each side of a cell ran: the scales, batch, fanouts and threads of its runs."""
    default = [FILES[column][0] for column in ("loader", "train", "memory")]
    peers_runs = [n for column in ("sampling", "loader", "train") for n in FILES[column]]
    products = [FILES[column][1] for column in FILES]
    return (f"Cells: default scale (products-sim {_unique(default, 'params', 'scale')}; sampling"
            f" at {_unique([FILES['sampling'][0]], 'params', 'scale')}) / products size "
            f"(products-sim {_unique(products, 'params', 'scale')}); batch "
            f"{_unique(peers_runs, 'params', 'batch_size')}, fanouts "
            f"{_unique(peers_runs, 'params', 'fanouts')}, "
            f"{_unique(peers_runs, 'params', 'threads')} threads in columns [1]-[3].")


def _machine(name: str) -> str:
    """'AMD EPYC, 2 cores, no GPU': the machine a result names, as docs/figures.md does."""
    gpu = _get(name, "env", "gpu")
    gpus = f"{_get(name, 'env', 'gpu_count') or 1} x {gpu}" if gpu else "no GPU"
    return f"{_get(name, 'env', 'cpu')}, {_get(name, 'env', 'cpu_count')} cores, {gpus}"


def _measured_line() -> str:
    """Each file's commit and day, files measured at the same grouped, and the machine (once
    where every file names the same one)."""
    groups: dict[str, list[str]] = {}
    machines: dict[str, str] = {}
    for name in [n for pair in FILES.values() for n in pair] + [DISTDGL]:
        machines[name] = _machine(name)
        when = (f"{str(_get(name, 'env', 'git_commit'))[:7]} "
                f"({str(_get(name, 'env', 'timestamp'))[:10]})")
        groups.setdefault(when, []).append(name)
    one = len(set(machines.values())) == 1
    files = {when: ", ".join(f"[{n}](../benchmarks/results/{n}.json)"
                             + ("" if one else f" ({machines[n]})") for n in names)
             for when, names in groups.items()}
    return ("Measured at " + "; ".join(f"{when}: {names}" for when, names in files.items())
            + (f"; all on {next(iter(machines.values()))}." if one else "."))


def peers_table() -> str:
    """The block: what the cells ran and where, the table, and DistDGL's traffic."""
    distdgl, traffic = _distdgl_row()
    rows = [_stack_row(stack) for stack in STACKS] + [distdgl]
    lines = [_cells_line(), _measured_line(), "",
             "| stack | sampling: ms per batch, sampled edges/s [1] | loader alone: batches/s [2] "
             f"| training: s per epoch [3] | val accuracy after {EPOCHS_SHOWN} epochs [3] | "
             "memory per added rank [4] |",
             "| --- | --- | --- | --- | --- | --- |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    if traffic:
        lines += ["", traffic]
    return "\n".join(lines)
