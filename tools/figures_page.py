"""docs/figures.md's generated block: every committed figure, where its numbers are (the table
the notebook wrote beside it, shown folded) and what measured it (the record beside it, where
the figure was drawn after figures carried one), so no number on that page is typed."""
from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ROOT / "figures"
#: The committed figure folders, in the page's order: (folder under figures/, heading).
FOLDERS = (("", "The default run (`make figures`)"),
           ("products", "At ogbn-products size (`PARAMS=notebooks/params/products.yaml`)"),
           ("larger-than-memory", "Larger than memory (`PARAMS=notebooks/params/"
                                  "larger-than-memory.yaml`)"),
           ("papers", "At papers100M's size (`PARAMS=notebooks/params/papers.yaml`)"))


def _measured(record_path: Path) -> str:
    """'commit, date, machine' from a figure's record; where it has none, say so."""
    if not record_path.exists():
        return "no record beside it (drawn before figures carried one): its corner label"
    record = json.loads(record_path.read_text())
    env = record.get("env", {})
    machine = f"{env.get('cpu') or '?'}, {env.get('cpu_count') or '?'} cores"
    if env.get("gpu"):
        machine += f", {env.get('gpu_count') or 1} x {env['gpu']}"
    commit = (record.get("code", {}).get("git_commit") or env.get("git_commit") or "?")[:7]
    shown = (f"data: {record['label'].split(' · ')[0]}" if record.get("label")
             else "its data: named in its corner label")
    redrawn = (record.get("redrawn_by") or {}).get("git_commit")
    drawn = f", drawn by {redrawn[:7]}" if redrawn else ""
    return f"{commit}, {str(record.get('created', '?'))[:10]}, {machine}{drawn}; {shown}"


def _figure(folder: Path, stem: str) -> str:
    """One figure's entry: its image, what measured it and its table folded under it."""
    rel = folder.relative_to(ROOT)
    table = folder / f"{stem}.md"
    links = [f"[{kind}](../{rel}/{stem}.{ext})" for kind, ext in (("png", "png"), ("table", "md"))
             if (folder / f"{stem}.{ext}").exists()]
    lines = [f"- **{stem}**: {', '.join(links)}; measured at "
             f"{_measured(folder / f'{stem}.json')}"]
    if table.exists():
        lines += ["", "  <details><summary>its table</summary>", ""]
        lines += [f"  {row}" if row else "" for row in table.read_text().strip().splitlines()]
        lines += ["", "  </details>"]
    return "\n".join(lines)


def figures_block() -> str:
    """Each committed figure folder's figures (png, or a table alone where a notebook drew
    none), with their records and tables."""
    parts = []
    # Then each GPU machine's notebooks (make gpu-notebooks: figures/gpu-<machine>/).
    gpu = [(p.name, f"On a GPU, `{p.name}` (`make gpu-notebooks`)")
           for p in sorted(FIGURES.glob("gpu-*")) if p.is_dir()]
    for name, heading in (*FOLDERS, *gpu):
        folder = FIGURES / name if name else FIGURES
        stems = sorted({p.stem for p in folder.glob("*.png")}
                       | {p.stem for p in folder.glob("*.md")})
        if not stems:
            continue
        parts += [f"### {heading}", ""]
        parts += [_figure(folder, stem) for stem in stems]
        parts.append("")
    return "\n".join(parts).rstrip("\n")


def measuring_time(folder: Path = FIGURES) -> str:
    """How long the measurements behind a folder's figures took, from their records
    (duration_s, each stored result once: figures drawn from one result share it), the
    longest named: what a newcomer's `make figures` costs on that machine."""
    took: dict[tuple[str, str], tuple[float, str]] = {}
    machines = set()
    for path in sorted(folder.glob("*.json")):
        record = json.loads(path.read_text())
        env = record.get("env", {})
        machines.add(f"{env.get('cpu') or '?'} ({env.get('cpu_count') or '?'} cores)")
        took[(record.get("experiment"), record.get("hash"))] = (
            float(record.get("duration_s") or 0.0), record.get("experiment") or path.stem)
    if not took:
        return "unknown: no figure in it carries a record yet"
    total = sum(seconds for seconds, _ in took.values())
    seconds, longest = max(took.values())
    return (f"at least {total / 60:.0f} minutes on "
            f"{', '.join(sorted(machines))}, {seconds / 60:.0f} of them in {longest} "
            f"(each figure's record, `duration_s`; a run that several notebooks share counts "
            f"once, where it was first measured)")
