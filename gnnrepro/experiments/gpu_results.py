"""The GPU rows the notebooks show beside their CPU rows: the stored results of GPU sessions.

A GPU session (benchmarks/gpu_session.py, `make gpu-session`) writes session.json and its
measurements' JSONs, packed in one archive (RESULTS_ARCHIVE; sessions before it wrote them
loose); a session that ran on a GPU is committed, as it came back, as a folder
`benchmarks/results/gpu-<machine>/`, one per machine, holding that machine's latest session
(earlier ones, and second calls that reran a step alone, in its `run<N>-<commit>/` folders).
Each row here names the machine it came from (GPU, runtime, torch, commit), and every ratio is
within one session. Where no session is stored the tables hold one row saying NOT_MEASURED,
and the figures say so: nothing is extrapolated to a GPU.
"""
from __future__ import annotations

import json
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from gnnrepro.experiments import paper

__all__ = ["NOT_MEASURED", "GpuSession", "gpu_copy", "gpu_end_to_end", "gpu_label",
           "gpu_sampling", "readme_block", "stored_gpu_sessions"]

NOT_MEASURED = "GPU: not measured"
#: The archive a session's measurements come back in (benchmarks/gpu_runner.py's ARCHIVE).
RESULTS_ARCHIVE = "results.tar.gz"
#: Where committed GPU sessions live in a checkout.
RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
#: The unfused two-step sampler on the GPU: the row the paper's 1.52x (vs DGL) stands beside.
UNFUSED = "unfused-cuda"
#: What each baseline of the ladder is, in words.
BASELINES = {"dgl": "DGL's pipeline", "reference": "our unfused pipeline (CPU sampler, serial)"}
#: The ladder's rungs in order, baseline first.
LADDER = ("dgl", "reference", "fused", "fused+pinned", "fused@gpu")


@dataclass(frozen=True)
class GpuSession:
    """One stored session: its folder and its session.json."""

    folder: Path
    session: dict[str, Any]

    @property
    def label(self) -> str:
        """The machine, as every row and figure names it."""
        m = self.session.get("machine", {})
        commit = self.commit or "commit unknown"
        return (f"{m.get('gpu', '?')} ({m.get('runtime', '?')}, torch {m.get('torch', '?')}, "
                f"{commit})")

    @property
    def commit(self) -> str | None:
        """The commit the session ran, shortened to 7 digits; None where it is not recorded."""
        commit = self.session.get("commit")
        return commit[:7] if commit else None

    def later_calls(self) -> list[GpuSession]:
        """Second calls of this session stored beside it (its `run*/` folders at the same
        commit: a step run again alone, such as `--steps pyg`), by folder name."""
        return [s for s in stored_gpu_sessions(self.folder) if s.commit == self.commit]

    def result(self, name: str) -> dict[str, Any] | None:
        """The measurement `name` (placements, copy-overlap, end-to-end, h2d), if stored: its
        JSON in the folder, or in the session's archive (RESULTS_ARCHIVE)."""
        path = self.folder / f"{name}.json"
        if path.exists():
            return json.loads(path.read_text())
        archive = self.folder / RESULTS_ARCHIVE
        if not archive.exists():
            return None
        with tarfile.open(archive) as tar:
            try:
                member = tar.extractfile(f"{name}.json")
            except KeyError:
                return None
            return json.loads(member.read()) if member is not None else None


def stored_gpu_sessions(root: Path | str | None = None) -> list[GpuSession]:
    """Sessions under `root` (default: the checkout's benchmarks/results) that ran on a GPU,
    by folder name: each machine's latest, never the `run*/` folders inside them; none where
    there is no such folder (an installed package)."""
    root = RESULTS if root is None else Path(root)
    sessions = []
    for path in sorted(root.glob("*/session.json")):
        session = json.loads(path.read_text())
        if not session.get("dry_run") and session.get("machine", {}).get("gpu"):
            sessions.append(GpuSession(path.parent, session))
    return sessions


def gpu_label(sessions: list[GpuSession]) -> str:
    """What a GPU figure's corner says: the machines, or NOT_MEASURED."""
    return "; ".join(s.label for s in sessions) if sessions else NOT_MEASURED


def _not_measured(columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame([{c: (NOT_MEASURED if c == "machine" else None) for c in columns}],
                        columns=columns)


SAMPLING_COLUMNS = ["machine", "sampler", "ms_per_batch", "fused_cuda_speedup",
                    "blocks_equal_cpu"]


def gpu_sampling(sessions: list[GpuSession]) -> pd.DataFrame:
    """Per session and sampler placement: ms per batch, the fused CUDA sampler's speedup over
    it, and for the fused GPU placements how many batches' blocks equalled the CPU op's. No
    paper column: the paper's 1.52x is over DGL's GPU sampler, which no row is."""
    rows = []
    for s in sessions:
        result = s.result("placements")
        if result is None or "fused-cuda" not in result["samplers"]:
            continue
        ours = result["samplers"]["fused-cuda"]["ms_per_batch"]
        equal = result.get("blocks_equal_cpu", {})
        for name, r in result["samplers"].items():
            rows.append({"machine": s.label, "sampler": name, "ms_per_batch": r["ms_per_batch"],
                         "fused_cuda_speedup": r["ms_per_batch"] / ours,
                         "blocks_equal_cpu": (f"{equal[name]['equal']}/{equal[name]['batches']}"
                                              if name in equal else None)})
    return pd.DataFrame(rows, columns=SAMPLING_COLUMNS) if rows else \
        _not_measured(SAMPLING_COLUMNS)


END_TO_END_COLUMNS = ["machine", "pipeline", "epoch_s", "baseline", "speedup", "paper_speedup",
                      "test_acc"]


def gpu_end_to_end(sessions: list[GpuSession]) -> pd.DataFrame:
    """Per session and pipeline of the ladder: epoch time, the speedup over the ladder's
    baseline (DGL's pipeline where it ran, else the unfused reference), test accuracy, and the
    paper's 1.80x on the full method's row where the baseline is DGL's (the paper's ratio is
    over DGL's pipeline, never over our reference)."""
    rows = []
    for s in sessions:
        result = s.result("end-to-end")
        if result is None:
            continue
        epochs = {name: r["epoch_s"] for name, r in result["pipelines"].items()}
        base = next((b for b in ("dgl", "reference") if b in epochs), None)
        ordered = sorted(result["pipelines"].items(),
                         key=lambda item: LADDER.index(item[0]) if item[0] in LADDER else 99)
        for name, r in ordered:
            rows.append({"machine": s.label, "pipeline": name, "epoch_s": r["epoch_s"],
                         "baseline": base,
                         "speedup": epochs[base] / r["epoch_s"] if base else None,
                         "paper_speedup": (paper.END_TO_END_SPEEDUP
                                           if name == "fused+pinned" and base == "dgl"
                                           else None),
                         "test_acc": r.get("test_acc")})
    return pd.DataFrame(rows, columns=END_TO_END_COLUMNS) if rows else \
        _not_measured(END_TO_END_COLUMNS)


def gpu_paper_mark(rows: pd.DataFrame, value: float, over: str) -> dict[str, Any]:
    """plots.gpu_bars' `paper` or `footnote`: the paper's `value` (a ratio over DGL's) drawn
    only where `rows` hold ratios over DGL's (their paper_speedup), else a footnote saying
    that their ratios are over our own `over` and why the paper's is not drawn."""
    if "paper_speedup" in rows and rows["paper_speedup"].notna().any():
        return {"paper": (value, f"paper: {value:.2f}x vs DGL")}
    return {"footnote": f"each ratio is over our own {over}; the paper's {value:.2f}x is over "
                        "DGL's: not drawn"}


COPY_COLUMNS = ["machine", "mode", "copy_gbps", "ceiling_gbps", "hidden_share"]


def gpu_copy(sessions: list[GpuSession]) -> pd.DataFrame:
    """Per session and copy mode (pinned on side streams, pageable and synchronous): GB/s of
    the batches' feature rows, the host-to-device ceiling of the same kind of memory, and the
    share of the copy hidden behind a stand-in step."""
    rows = []
    for s in sessions:
        result, ceiling = s.result("copy-overlap"), s.result("h2d") or {}
        if result is None:
            continue
        for mode, r in result["modes"].items():
            kind = "pinned" if mode.startswith("pinned") else "pageable"
            rows.append({"machine": s.label, "mode": mode, "copy_gbps": r["copy_gbps"],
                         "ceiling_gbps": ceiling.get(kind, {}).get("gbps_median"),
                         "hidden_share": r["hidden_share"]})
    return pd.DataFrame(rows, columns=COPY_COLUMNS) if rows else _not_measured(COPY_COLUMNS)


def _link(s: GpuSession, name: str, file: str | None = None) -> str:
    """A link named `name` to the session's `file` (default: `name`.json), or to the archive
    that holds it."""
    path = s.folder / (file or f"{name}.json")
    if not path.exists() and (s.folder / RESULTS_ARCHIVE).exists():
        path = s.folder / RESULTS_ARCHIVE
    try:
        shown = path.relative_to(RESULTS.parents[1])
    except ValueError:
        shown = path
    return f"[{name}]({shown})"


def _checks(s: GpuSession) -> str:
    """What the session's correctness steps found, in one sentence."""
    steps, fig = s.session.get("steps", {}), s.session.get("figures", {})
    counts = fig.get("tests_gpu") or {}
    tests = ", ".join(f"{n} {k}" for k, n in counts.items()) or steps.get(
        "tests-gpu", {}).get("status", "not run")
    sanitizer = []
    for tool, unit in (("memcheck", "errors"), ("racecheck", "hazards")):
        found = fig.get(tool)
        sanitizer.append(f"{tool} {found} {unit}" if found is not None else
                         f"{tool} {steps.get(tool, {}).get('status', 'not run')}")
    return f"tests/gpu {tests}; compute-sanitizer {', '.join(sanitizer)}"


PYG_STEP = "own-model-pyg"
PYG_WHAT = ("| training epoch, PyG's own model (SAGEConv): what a PyG user gains by changing "
            "the loader; PyG's NeighborLoader without pyg-lib (torch-sparse's CPU sampler: no "
            "registry serves pyg-lib for this torch)")


def _pyg_not_run(s: GpuSession) -> str | None:
    """The PyG user's row where its step wrote no result: what the step's status said in the
    session and in each later call that ran it again, with their logs; None where no call
    ran the step (sessions from before it)."""
    calls = [c for c in (s, *s.later_calls()) if PYG_STEP in c.session.get("steps", {})]
    if not calls:
        return None
    said = []
    for c in calls:
        status = c.session["steps"][PYG_STEP]["status"]
        if c is s:
            said.append(f"in the session {status} ({_link(c, 'log', 'session.log')})")
        else:
            asked = ",".join(c.session.get("steps_asked", []))
            said.append(f"run again alone (`--steps {asked}`, `{c.folder.name}/`) {status} "
                        f"({_link(c, 'log', 'session.log')})")
    return (f"{PYG_WHAT} | our loader not measured | PyG's NeighborLoader not measured | - | "
            f"**not run**: the step {'; '.join(said)} |")


def _pyg_row(s: GpuSession) -> str | None:
    """The PyG user's row: PyG's SAGEConv on PyG's NeighborLoader against the same model on
    our loader (own-model-pyg.json, written by the session's last step), where it ran; where
    it wrote none, what stopped it (_pyg_not_run)."""
    result = s.result(PYG_STEP)
    if not result:
        return _pyg_not_run(s)
    theirs = result.get("peers", {}).get("pyg")
    ours = next(iter(result["pipelines"].values()))
    tested = ours.get("eval_counts", {}).get("test")
    accuracy = (f"; test accuracy on the same {tested:,} ids: ours {ours['test_acc']:.3f}, "
                f"PyG's {theirs['test_acc']:.3f}"
                if theirs and "test_acc" in theirs and tested else "")
    row = f"{PYG_WHAT}{accuracy} | our loader {ours['epoch_s']:.3g} s | PyG's NeighborLoader "
    if theirs:
        row += f"{theirs['epoch_s']:.3g} s | **{theirs['epoch_s'] / ours['epoch_s']:.3g}x** | "
    else:
        failure = result.get("peers_not_run", {}).get("pyg", "").strip()
        row += f"not run: {failure.splitlines()[-1] if failure else '?'} | - | "
    return row + f"{_link(s, PYG_STEP)} |"


def readme_block(sessions: list[GpuSession]) -> str:
    """The README's GPU results: per stored session (one per machine) a line naming its
    machine and checks, then a table of its 1-GPU figures, every ratio within that session;
    or NOT_MEASURED (tools/generated_blocks.py writes it between its markers)."""
    if not sessions:
        return (f"**{NOT_MEASURED}.** No GPU session is stored; every result on this page is "
                "from a CPU.")
    lines = []
    for s in sessions:
        sampling = gpu_sampling([s]).set_index("sampler")
        ladder = gpu_end_to_end([s]).set_index("pipeline")
        copies = gpu_copy([s]).set_index("mode")
        scale = s.session.get("scale")
        lines += [f"On **{s.label}**, `make gpu-session` at products-sim {scale}: "
                  f"{_checks(s)} (what failed and why: benchmarks/NOTES.md).", "",
                  "| what (one GPU) | ours | the other | ours faster | result |",
                  "| --- | --- | --- | --- | --- |"]
        if "fused-cuda" in sampling.index and UNFUSED in sampling.index:
            ours, theirs = sampling.loc["fused-cuda"], sampling.loc[UNFUSED]
            equal = ", ".join(f"{n}: {sampling.loc[n, 'blocks_equal_cpu']}"
                              for n in sampling.index
                              if pd.notna(sampling.loc[n, "blocks_equal_cpu"]))
            lines.append(
                f"| sampling a batch (paper: {paper.SAMPLING_SPEEDUP:.2f}x vs DGL's GPU "
                f"sampler, not measured here) | fused CUDA op {ours['ms_per_batch']:.3g} ms "
                f"| our unfused plain-torch GPU sampler {theirs['ms_per_batch']:.3g} ms | "
                f"**{theirs['fused_cuda_speedup']:.3g}x** | {_link(s, 'placements')} |")
            lines.append(f"| GPU blocks equal to the CPU op's, bit for bit | {equal} | | | "
                         f"{_link(s, 'placements')} |")
        if {"fused+pinned", "fused"} <= set(ladder.index) and ladder["baseline"].notna().all():
            full, serial = ladder.loc["fused+pinned"], ladder.loc["fused"]
            base = full["baseline"]
            lines.append(
                f"| training epoch, same model (paper: {paper.END_TO_END_SPEEDUP:.2f}x vs "
                f"DGL's pipeline, not measured here) | fused+pinned {full['epoch_s']:.3g} s | "
                f"{BASELINES.get(base, base)} {ladder.loc[base, 'epoch_s']:.3g} s; fused (serial) "
                f"{serial['epoch_s']:.3g} s | **{full['speedup']:.3g}x**; "
                f"{serial['epoch_s'] / full['epoch_s']:.3g}x | {_link(s, 'end-to-end')} |")
        if {"fused@gpu", "fused+pinned"} <= set(ladder.index):
            gpu, full = ladder.loc["fused@gpu"], ladder.loc["fused+pinned"]
            lines.append(
                f"| training epoch, same model: the fused sampler and the features on the GPU "
                f"| fused@gpu {gpu['epoch_s']:.3g} s | fused+pinned {full['epoch_s']:.3g} s | "
                f"**{full['epoch_s'] / gpu['epoch_s']:.3g}x** | {_link(s, 'end-to-end')} |")
        pyg = _pyg_row(s)
        if pyg:
            lines.append(pyg)
        if {"pinned-streams", "pageable-sync"} <= set(copies.index):
            pinned, pageable = copies.loc["pinned-streams"], copies.loc["pageable-sync"]
            lines.append(
                f"| host-to-device copy of the batches' feature rows | pinned, 2 streams "
                f"{pinned['copy_gbps']:.3g} GB/s (ceiling {pinned['ceiling_gbps']:.3g}), "
                f"{pinned['hidden_share']:.0%} hidden behind a stand-in step | pageable "
                f"{pageable['copy_gbps']:.3g} GB/s | "
                f"**{pinned['copy_gbps'] / pageable['copy_gbps']:.3g}x** | "
                f"{_link(s, 'copy-overlap')}, {_link(s, 'h2d')} |")
        lines.append("")
    return "\n".join(lines).rstrip("\n")
