"""`make gpu-notebooks OUT=<dir>`: the notebooks themselves on a lent GPU machine, through
papermill, offline, on the machine's own torch (issue 49, item 2).

In order, each step bounded in time against one deadline: install what the machine lacks of
papermill, its kernel and their dependencies from the carried wheels (`--wheels`, filled by
`make gpu-notebook-wheels`; pip --no-index --no-deps, only the distributions missing here);
build the extension for this GPU (generating products-sim at the params file's scale in the
background meanwhile); then notebooks 01-05 with notebooks/params/gpu.yaml, each a papermill
run of its own, figures_name gpu-<machine> (e.g. gpu-h200), so that their figures, tables and
stored results (data/) land in figures/gpu-<machine>/ as the CPU figures do in figures/.

The machines have no DGL: the notebooks list DGL's rows as not run and give every ratio over
our reference pipeline, never beside the paper's ratios over DGL.

OUT holds session.json (each step's status and seconds), session.log (every notebook's cells as
they ran), figures.tar.gz (figures/gpu-<machine>/ and the executed notebooks under its
notebooks/, packed again after each notebook, so a session cut short keeps what finished) and
the built extension. Store it with `tar xzf OUT/figures.tar.gz -C figures/` and commit the
folder (docs/gpu.md).

`--dry-run` rehearses it here on the CPU: notebooks/params/smoke.yaml, DGL hidden from the
notebooks (GNNREPRO_HIDE_DGL=1) as on the GPU machines, figures under figures/gpu-dry-run/ of
build/gpu-notebooks-dry-run/ (`--root-out`); tests/test_gpu_notebooks.py runs it.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]
from gpu_build import step_build  # noqa: E402
from gpu_machine import PY, SITE, install_lacking, machine  # noqa: E402
from gpu_runner import ROOT, WORK, Session  # noqa: E402
from gpu_session import settle_dataset, step_dataset, wait_dataset  # noqa: E402

#: The notebooks a window holds, in the order they run (03 reuses 01's training run).
NOTEBOOKS = ("01_stage_breakdown", "02_sampling_speedup", "03_end_to_end", "04_scaling",
             "05_sensitivity")
#: Wall-clock seconds for the whole session: with a machine's start it fits a 15-minute loan.
DEADLINE_S = 540
#: What a notebook may take at most (one that runs over is stopped and the next one starts).
NOTEBOOK_S = 240
ARCHIVE = "figures.tar.gz"
#: The kernel the notebooks run in: this Python (the machine's own torch), named so that a
#: python3 kernelspec of another interpreter on the machine is never picked instead.
KERNEL = "gnnrepro-gpu"
#: What a notebook imports beyond torch; checked in a child with the session's environment
#: before any device time is spent on the build.
NEEDED = "import papermill, ipykernel, matplotlib, pandas, yaml, tqdm"


def write_kernel(site: Path) -> Path:
    """A kernelspec for this Python under site/share/jupyter (JUPYTER_PATH points there)."""
    folder = site / "share" / "jupyter" / "kernels" / KERNEL
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kernel.json").write_text(json.dumps({
        "argv": [PY, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": f"Python {sys.version.split()[0]} (gnnrepro GPU session)",
        "language": "python"}, indent=1))
    return site / "share" / "jupyter"


def machine_slug(gpu_name: str | None) -> str:
    """A folder name for a GPU: 'NVIDIA H100 80GB HBM3' -> 'h100', 'NVIDIA H200' -> 'h200'."""
    words = re.sub(r"^nvidia\s+", "", (gpu_name or "").strip(), flags=re.I).lower().split()
    slug = re.sub(r"[^a-z0-9._-]", "", words[0]) if words else ""
    return slug or "unknown"


def pack(s: Session, figures: Path, executed: Path) -> None:
    """OUT/ARCHIVE: the figures folder (its data/ included) and the executed notebooks under
    its notebooks/, whole or not at all."""
    partial = s.out / (ARCHIVE + ".part")
    with tarfile.open(partial, "w:gz") as tar:
        if figures.is_dir():
            tar.add(figures, arcname=figures.name)
        for notebook in sorted(executed.glob("*.ipynb")):
            tar.add(notebook, arcname=f"{figures.name}/notebooks/{notebook.name}")
    os.replace(partial, s.out / ARCHIVE)


def step_notebook(s: Session, name: str, params: Path, out_dir: Path, figures_name: str,
                  executed: Path) -> bool:
    """One notebook through papermill with `params`; its cells go to session.log as they run."""
    cmd = [PY, "-m", "papermill", "--log-output", "--no-progress-bar", "-k", KERNEL,
           "-f", str(params),
           "-p", "out_dir", str(out_dir), "-p", "figures_name", figures_name,
           str(ROOT / "notebooks" / f"{name}.ipynb"), str(executed / f"{name}.ipynb")]
    return s.run(f"notebook-{name}", cmd, timeout_s=NOTEBOOK_S, reserve_s=5)["ok"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the results")
    parser.add_argument("--dry-run", action="store_true",
                        help="rehearse on the CPU with the smoke parameters and DGL hidden")
    parser.add_argument("--params", type=Path, default=None,
                        help="the notebooks' parameters (default notebooks/params/gpu.yaml; "
                             "--dry-run: smoke.yaml)")
    parser.add_argument("--notebooks", default=",".join(NOTEBOOKS),
                        help="the notebooks to run, comma-separated (default 01-05)")
    parser.add_argument("--root-out", type=Path, default=None,
                        help="where figures/ and results/ are written (default the checkout; "
                             "--dry-run: build/gpu-notebooks-dry-run, so that a rehearsal is "
                             "never committed as a GPU machine's figures)")
    parser.add_argument("--deadline-s", type=float, default=DEADLINE_S)
    parser.add_argument("--wheels", type=Path, default=ROOT / "build" / "gpu-notebook-wheels",
                        help="wheels of papermill, its kernel and their dependencies "
                             "(make gpu-notebook-wheels); only what this Python lacks is "
                             "installed")
    parser.add_argument("--commit", default=os.environ.get("GNNREPRO_COMMIT"),
                        help="the commit the tree is, where .git did not travel (figures "
                             "name it)")
    parser.add_argument("--reuse-build", action="store_true",
                        help="keep an extension in gnnrepro/ that loads with its CUDA kernels")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.notebooks.split(",") if n.strip()]
    unknown = [n for n in names if n not in NOTEBOOKS]
    if not names or unknown:
        parser.error(f"--notebooks: {unknown or 'none'} not among {list(NOTEBOOKS)}")
    params = args.params or ROOT / "notebooks" / "params" / (
        "smoke.yaml" if args.dry_run else "gpu.yaml")
    import torch
    cuda = torch.cuda.is_available() and not args.dry_run
    if not cuda and not args.dry_run:
        print("gpu-notebooks: no usable GPU here; run it on a machine with an NVIDIA GPU, or "
              "rehearse it with --dry-run", file=sys.stderr)
        return 2
    root_out = args.root_out or (ROOT / "build" / "gpu-notebooks-dry-run" if args.dry_run
                                 else ROOT)
    status = install_lacking(args.wheels)
    env = dict(os.environ, PYTHONUNBUFFERED="1", GNNREPRO_PROGRESS="lines",
               JUPYTER_PATH=str(write_kernel(SITE)),
               PYTHONPATH=os.pathsep.join([str(ROOT), str(SITE), os.environ.get(
                   "PYTHONPATH", "")]).rstrip(os.pathsep))
    if args.commit:
        env["GNNREPRO_COMMIT"] = args.commit
    if not cuda:
        env.update(CUDA_VISIBLE_DEVICES="", GNNREPRO_HIDE_DGL="1")
    figures_name = "gpu-dry-run" if args.dry_run else f"gpu-{machine_slug(machine()['gpu'])}"
    s = Session(args.out, args.dry_run, args.deadline_s, env)
    s.report.update(machine=machine(), commit=args.commit, wheels=status,
                    params=str(params.relative_to(ROOT)) if params.is_relative_to(ROOT)
                    else str(params), notebooks=names, figures_folder=f"figures/{figures_name}")
    s.save()
    preflight = subprocess.run([PY, "-c", NEEDED], env=env, capture_output=True, text=True)
    if preflight.returncode != 0:
        s.note(f"gpu-notebooks: cannot run the notebooks ({preflight.stderr.strip()[-300:]}); "
               f"put the wheels of what is missing in {args.wheels} (make gpu-notebook-wheels)")
        s.report["error"] = preflight.stderr.strip()[-1000:]
        s.save()
        return 2
    began = time.monotonic()
    import yaml
    scale = yaml.safe_load(params.read_text())["scale"]
    dataset = step_dataset(s, scale)
    executed = WORK / "notebooks"
    shutil.rmtree(executed, ignore_errors=True)
    executed.mkdir(parents=True)
    figures = root_out / "figures" / figures_name
    try:
        built = step_build(s, cuda, args.reuse_build)
        if built and wait_dataset(s, dataset, began):
            for name in names:
                step_notebook(s, name, params, root_out, figures_name, executed)
                pack(s, figures, executed)
        else:
            for name in names:
                s.skip(f"notebook-{name}", "skipped: no build or no dataset")
    finally:
        settle_dataset(s, dataset)
    failed = [n for n, st in s.report["steps"].items() if not st["ok"]]
    s.note(f"gpu-notebooks: {args.out}/{ARCHIVE} holds {figures.relative_to(root_out)}; "
           + (f"FAILED or cut short: {', '.join(failed)}" if failed else "every step passed"))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
