"""`make gpu-session OUT=<dir>`: what a lent GPU machine's minutes are spent on, in one command.

In order, each step bounded in time, its result written under OUT the moment it finishes (a run
cut off still leaves what finished): build the extension for this GPU's architecture with every
core; tests/gpu with CUDA required; compute-sanitizer memcheck over the CUDA op tests and
racecheck over a few; the paper's 1-GPU measurements at products-sim `--scale` (per-batch
sampling per placement, the copy overlap, the end-to-end ladder); the host-to-device ceiling;
MLPerf's R-GAT preset for a fixed number of steps on igbh-sim (its result in session.json); the
PyG figure; temporal sampling on the GPU against uniform, its blocks checked against the CPU
op's (bench temporal-sampling --sampler-device cuda); then, in the time left, the CPU sampler
at 1-16 threads with each relabel (benchmarks/sampler_threads.py).
The dataset is generated in the background from the start (it needs one core; the build and
tests use the others), and the measurements wait for it.

OUT holds 4 files (a lent machine returns at most 8): session.json (every step's status,
seconds, findings and the headline figures, rewritten after each step), session.log (every
step's output, appended as it runs), results.tar.gz (one JSON per measurement, the archive
rewritten as each is kept: placements.json, copy-overlap.json, end-to-end.json, h2d.json,
temporal-sampling.json, sampler-threads.json, own-model-pyg.json: PyG's model on PyG's loader
and on ours, benchmarks/gpu_pyg_peer.py) and the built extension (_C*.so: carried back, `--reuse-build`
spares a second session on the same GPU kind the build). The folder is stored as it comes
back (gnnrepro.experiments.gpu_results reads the archive).

`--steps` names the steps to run (default all but `ranks`: the multi-GPU code path with 1, 2, 4
and 8 ranks on the one GPU, benchmarks/rank_equivalence.py, which needs a loan of its own); a
second call within one loan runs only what the first left failed, the dataset and the build
coming with them.

`--dry-run` runs the same steps and writes the same files on the CPU at a tiny scale (tests run
it): steps that need a GPU or compute-sanitizer say why they were skipped.

Its parts, beside it: gpu_runner.py (the steps' processes against the deadline, the readers
of pytest's and the sanitizer's output), gpu_machine.py (modules, tools and the device found
here), gpu_build.py (the build step), gpu_pyg_peer.py (the PyG step); this file holds the other
steps and their order.

Offline: nothing is downloaded. The Python that runs this is used as it is (a GPU node's own
torch); modules it lacks are installed from `--wheels` (pip --no-index) into build/gpu-site, and
the PyG step's torch-sparse from `--pyg-wheels` (benchmarks/gpu_pyg_peer.py).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]  # the package, and the session's modules beside it
from gnnrepro.atomic import write_json_atomic  # noqa: E402  (stdlib only: runs before the
#                                                 modules are installed)
from gpu_build import step_build  # noqa: E402
from gpu_machine import PY, SITE, has_module, install_missing, machine, sanitizer  # noqa: E402
from gpu_runner import (ROOT, WORK, Session, log_since, pytest_counts,  # noqa: E402
                        sanitizer_findings, sanitizer_refused, stop_group)
import gpu_pyg_peer  # noqa: E402  (stdlib only)
from gpu_ranks_window import step_projection, step_ranks  # noqa: E402

#: Modules beyond torch that building, testing and measuring need.
MODULES = ["setuptools", "ninja", "numpy", "pandas", "yaml", "psutil", "tqdm", "pytest"]
#: Wall-clock seconds the whole session may take, the PyG step included: with a machine's
#: start (35 s to 4.5 minutes seen) it fits a 15-minute loan once, not twice.
DEADLINE_S = 540
#: The CUDA op tests run under memcheck (their cuda cases), and the few under racecheck.
SANITIZED_TESTS = ["tests/gpu/test_sample_fused.py", "tests/gpu/test_gather_rows.py",
                   "tests/gpu/test_sample_errors.py", "tests/gpu/test_temporal_cuda.py"]
RACECHECK_SELECTION = "test_blocks_are_right_and_equal_the_cpu_op and cuda and fanouts1 and device"
MEASUREMENTS = ("placements", "copy-overlap", "end-to-end")
#: What `--steps` can name (the dataset and the build come with whatever needs them).
STEPS = ("tests", "sanitizers", "measurements", "h2d", "mlperf", "pyg", "temporal", "threads",
         "ranks", "projection")
#: The steps of the multi-GPU window (issue 49 items 3 and 4): `--steps ranks,projection`.
RANKS_WINDOW = ("ranks", "projection")
#: What runs without --steps: all but the multi-GPU window's, which has a loan of its own:
#: the two do not fit one loan together.
DEFAULT_STEPS = tuple(name for name in STEPS if name not in RANKS_WINDOW)
REFUSED = "skipped: compute-sanitizer refused this device"


# ---- the steps ----

def step_tests(s: Session, cuda: bool) -> None:
    env = dict(s.env, GNNREPRO_REQUIRE_CUDA="1" if cuda else "0")
    # tests/gpu, then the library in a user's own loop on cuda: docs/own-loop.md's examples
    # (they pick the GPU where there is one) and the interop tests.
    cmd = [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfE", "tests/gpu",
           "tests/test_interop.py", "tests/test_readme.py", "-k", "not test_readme or own-loop"]
    if not cuda:  # the rehearsal: the CPU cases of one test file (make test runs them all)
        cmd = [*cmd[:7], "tests/gpu/test_sample_fused.py", "-k", "blocks_are_right"]
    mark = s.log.stat().st_size
    step = s.run("tests-gpu", cmd, timeout_s=150, env=env)
    text = log_since(s, mark)
    step["counts"] = pytest_counts(text)
    step["failures"] = [line for line in text.splitlines()
                        if line.startswith(("FAILED", "ERROR"))][:40]
    s.report["figures"]["tests_gpu"] = step["counts"]
    s.save()


def step_sanitizers(s: Session, cuda: bool) -> None:
    tool = sanitizer()
    if not cuda or tool is None:
        why = ("skipped: no CUDA device" if not cuda else
               "skipped: compute-sanitizer not found (set CUDA_HOME)")
        for name in ("memcheck", "racecheck"):
            s.skip(name, why)
        return
    # Without torch's caching allocator every tensor is its own allocation, so the sanitizer
    # catches an access past one instead of landing in a cached block's slack.
    env = dict(s.env, PYTORCH_NO_CUDA_MEMORY_CACHING="1", GNNREPRO_REQUIRE_CUDA="1")
    probe_cmd = [tool, "--tool", "memcheck", "--error-exitcode", "97", PY, "-c",
                 "import torch; torch.zeros(1, device='cuda'); torch.cuda.synchronize()"]
    probe = subprocess.run(probe_cmd, cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=120)
    if probe.returncode != 0 and sanitizer_refused(probe.stdout + probe.stderr):
        for name in ("memcheck", "racecheck"):
            s.skip(name, REFUSED)
        s.report["steps"]["memcheck"]["probe"] = (probe.stdout + probe.stderr)[-1500:]
        s.save()
        return
    pytest_cmd = [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", *SANITIZED_TESTS]
    for name, timeout_s, selection in (("memcheck", 70, "cuda and not timed"),
                                       ("racecheck", 30, RACECHECK_SELECTION)):
        mark = s.log.stat().st_size
        step = s.run(name, [tool, "--tool", name, "--error-exitcode", "97", "--print-limit",
                            "50", *pytest_cmd, "-k", selection], timeout_s=timeout_s,
                     reserve_s=150, env=env)
        text = log_since(s, mark)
        step["findings"] = sanitizer_findings(text, name)
        step["tests"] = pytest_counts(text)
        s.report["figures"][name] = step["findings"]
        s.save()


def step_dataset(s: Session, scale: float) -> subprocess.Popen:
    """Generate (or find cached) products-sim at `scale` in the background."""
    code = (f"import time; t = time.perf_counter(); from gnnrepro.datasets import load_scaled; "
            f"d = load_scaled('products-sim', None, {scale!r}); "
            f"print('dataset: products-sim', {scale!r}, d.graph.num_nodes, 'nodes', "
            f"d.graph.num_edges, 'edges in', round(time.perf_counter() - t, 1), 's', flush=True)")
    s.note(f"== dataset (background): products-sim {scale}")
    s.report["steps"]["dataset"] = {"status": "running", "ok": False, "seconds": 0.0}
    return subprocess.Popen([PY, "-c", code], cwd=ROOT, env=s.env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def settle_dataset(s: Session, proc: subprocess.Popen | None) -> None:
    """At the session's end: stop a background dataset build still running, and report one
    that no step waited for (those that needed it were skipped, e.g. after a failed build) as
    not used, not as failed."""
    if proc is None:
        return
    if proc.poll() is None:
        stop_group(proc)
    if s.report["steps"]["dataset"]["status"] == "running":
        s.skip("dataset", "not used: no step waited for it")


def wait_dataset(s: Session, proc: subprocess.Popen, began: float) -> bool:
    """Wait for the background dataset build (at most until a minute before the deadline)."""
    try:
        output, _ = proc.communicate(timeout=max(1.0, s.left() - 60))
        ok = proc.returncode == 0
        status = "ok" if ok else f"failed (exit {proc.returncode})"
    except subprocess.TimeoutExpired:
        stop_group(proc)
        output, ok, status = proc.stdout.read() if proc.stdout else "", False, "timed out"
    with open(s.log, "a") as log:
        log.write(output or "")
    s.report["steps"]["dataset"] = {"status": status, "ok": ok,
                                    "seconds": round(time.monotonic() - began, 1)}
    s.note(f"   dataset: {status} ({s.report['steps']['dataset']['seconds']} s since start)")
    s.save()
    return ok


def step_measure(s: Session, name: str, args: list[str], timeout_s: float,
                 reserve_s: float, keep: bool = True,
                 env: dict[str, str] | None = None) -> dict[str, Any] | None:
    """Run `python -m gnnrepro bench <args> --out WORK/<name>.json`; return its JSON, packed
    into OUT's archive if `keep`."""
    produced = WORK / f"{name}.json"
    produced.unlink(missing_ok=True)
    step = s.run(name, [PY, "-m", "gnnrepro", "bench", *args, "--out", str(produced)],
                 timeout_s=timeout_s, reserve_s=reserve_s, env=env)
    if not step["ok"] or not produced.exists():
        return None
    return s.keep(name, produced) if keep else json.loads(produced.read_text())


def merge_rungs(ladder: dict | None, result: dict, label: str | None = None) -> dict:
    """One end-to-end result holding every rung run so far, each under `label` (default its
    pipeline's name; each rung's own params stay in its `rungs` entry)."""
    pipeline = result["params"]["pipelines"][0]
    label = label or pipeline
    if ladder is None:
        ladder = {**result, "pipelines": {}, "rungs": {}}
        ladder["params"] = {**result["params"], "pipelines": []}
    ladder["pipelines"][label] = result["pipelines"][pipeline]
    ladder["params"]["pipelines"].append(label)
    ladder["rungs"][label] = {"params": result["params"], "env": result["env"]}
    return ladder


def step_h2d(s: Session, cuda: bool) -> None:
    produced = WORK / "h2d.json"
    produced.unlink(missing_ok=True)
    if not cuda:
        write_json_atomic(produced, {"benchmark": "h2d", "skipped": "no CUDA device"})
        s.skip("h2d", "skipped: no CUDA device")
        s.keep("h2d", produced)
        return
    step = s.run("h2d", [PY, "benchmarks/h2d_ceiling.py", "--gib", "1", "--out",
                         str(produced)], timeout_s=60)
    result = s.keep("h2d", produced) if step["ok"] else None
    if result:
        s.report["figures"]["h2d_gbps"] = {k: result[k]["gbps_median"]
                                           for k in ("pinned", "pageable") if k in result}


def step_temporal(s: Session, cuda: bool, built: bool, scale: float) -> None:
    """Temporal sampling on the GPU, each contender against uniform and its first batches
    against the CPU op's blocks (issue 51: the CUDA op's temporal path; the CPU on a dry run)."""
    if not built or not s.report["steps"].get("dataset", {}).get("ok"):
        s.skip("temporal-sampling", "skipped: no build or no dataset")
        return
    result = step_measure(s, "temporal-sampling",
                          ["temporal-sampling", *data_args(scale, cuda), "--batches", "10",
                           "--repeats", "2", "--sampler-device", "cuda" if cuda else "cpu"],
                          90, reserve_s=30)
    if result and "blocks_equal_cpu" in result:
        s.report["figures"]["temporal_blocks_equal_cpu"] = result["blocks_equal_cpu"]
        s.save()


def step_sampler_threads(s: Session, built: bool, scale: float) -> None:
    """The CPU sampler at 1-16 threads with each relabel, beside the machine's random-read rate
    at the same counts (issue 49 item 6, benchmarks/sampler_threads.py): the only 16-core
    machines we have are these."""
    dataset = s.report["steps"].get("dataset", {})
    if not built or not dataset.get("ok"):
        s.skip("sampler-threads", "skipped: no build or no dataset")
        return
    out = WORK / "threads"
    (out / "sampler-threads.json").unlink(missing_ok=True)
    threads = "1,2" if s.dry_run else "1,2,4,8,16"
    step = s.run("sampler-threads", [PY, "benchmarks/sampler_threads.py", "--out", str(out),
                                     "--scale", str(scale), "--typed-scale",
                                     str(min(max(scale, 0.01), 0.1)), "--threads", threads,
                                     "--batch-size", "64" if s.dry_run else "1024",
                                     "--batches", "10", "--passes", "2"],
                 timeout_s=60)
    if step["ok"]:
        s.keep("sampler-threads", out / "sampler-threads.json")


def step_mlperf(s: Session, cuda: bool, built: bool) -> None:
    """MLPerf's R-GAT preset (3 layers, hidden 512 in 4 heads, fanouts 5,10,15, 1024 seeds)
    for a fixed number of steps on igbh-sim, features in memory, then its sampled validation
    (`bench typed-disk`). Its result goes into session.json (OUT's 8 files are spoken for)."""
    if not built:
        s.skip("mlperf-rgat", "skipped: the build failed")
        return
    scale, steps, eval_ids = ("0.02", "60", "4096") if cuda else ("0.001", "1", "32")
    result = step_measure(s, "mlperf-rgat",
                          ["typed-disk", "--dataset", "igbh-sim", "--scale", scale, "--model",
                           "rgat-mlperf", "--stores", "memory", "--steps", steps, "--eval-ids",
                           eval_ids, "--device", "cuda" if cuda else "cpu"],
                          150, reserve_s=60, keep=False)
    if result is not None:
        run = result["stores"]["memory"]
        s.report["mlperf_rgat"] = result
        s.report["figures"]["mlperf_rgat"] = {
            k: run.get(k) for k in ("steps", "step_s_after_first", "loss", "test_acc",
                                    "test_majority_acc", "eval_ids", "params_count")}
        s.save()


def headline(s: Session) -> None:
    """The figures the issue asks for, read from the measurements in OUT the way the notebooks
    and the README read a stored session (gnnrepro.experiments.gpu_results)."""
    from gnnrepro.experiments import gpu_results
    session = gpu_results.GpuSession(s.out, s.report)
    for name, rows in (("sampling", gpu_results.gpu_sampling([session])),
                       ("end_to_end", gpu_results.gpu_end_to_end([session])),
                       ("copy", gpu_results.gpu_copy([session]))):
        s.report["figures"][name] = rows.to_dict("records")
    s.save()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the results")
    parser.add_argument("--dry-run", action="store_true",
                        help="the same steps and files on the CPU at a tiny scale")
    parser.add_argument("--scale", type=float, default=None,
                        help="products-sim scale (default 1.0; --dry-run 0.002)")
    parser.add_argument("--deadline-s", type=float, default=DEADLINE_S)
    parser.add_argument("--wheels", type=Path, default=ROOT / "build" / "gpu-wheels",
                        help="wheels for the modules this Python lacks (no network)")
    parser.add_argument("--pyg-wheels", type=Path, default=gpu_pyg_peer.PYG_WHEELS,
                        help="torch-sparse's wheel for this torch, and scipy's, for the PyG "
                             "step (make gpu-pyg-wheels)")
    parser.add_argument("--reuse-build", action="store_true",
                        help="skip the build where gnnrepro/ holds an extension that loads "
                             "with its CUDA kernels (one returned by an earlier session)")
    parser.add_argument("--commit", default=os.environ.get("GNNREPRO_COMMIT"),
                        help="the commit the tree is (where .git did not travel)")
    parser.add_argument("--steps", default=",".join(DEFAULT_STEPS),
                        help="the steps to run, comma-separated, of " + ", ".join(STEPS) +
                             " (default all but ranks; a second call in one loan runs only "
                             "what failed)")
    args = parser.parse_args(argv)
    steps = {name.strip() for name in args.steps.split(",") if name.strip()}
    if not steps or steps - set(STEPS):
        parser.error(f"--steps: {sorted(steps - set(STEPS)) or 'none'} not among {list(STEPS)}")
    scale = args.scale if args.scale is not None else (0.002 if args.dry_run else 1.0)
    import torch
    cuda = torch.cuda.is_available() and not args.dry_run
    if not cuda and not args.dry_run:
        print("gpu-session: no usable GPU here (torch.cuda.is_available() is False); run it on "
              "a machine with an NVIDIA GPU, or rehearse it with --dry-run", file=sys.stderr)
        return 2
    status = install_missing(MODULES, args.wheels)
    path = [str(ROOT)] + ([str(SITE)] if "installed" in status.values() else [])
    env = dict(os.environ, PYTHONUNBUFFERED="1", GNNREPRO_PROGRESS="lines",
               PYTHONPATH=os.pathsep.join(path + [os.environ.get("PYTHONPATH", "")]).rstrip(
                   os.pathsep))
    if not cuda:
        env["CUDA_VISIBLE_DEVICES"] = ""  # the rehearsal never touches a GPU
    s = Session(args.out, args.dry_run, args.deadline_s, env)
    s.report.update(machine=machine(), commit=args.commit, scale=scale, modules=status,
                    steps_asked=[name for name in STEPS if name in steps])
    missing = [m for m, v in status.items() if v == "missing"]
    if missing:
        s.note(f"gpu-session: cannot run without {missing}; put their wheels in {args.wheels}")
        s.report["error"] = f"missing modules: {missing}"
        s.save()
        return 2
    s.save()
    began = time.monotonic()
    dataset = (step_dataset(s, scale)
               if steps & {"measurements", "threads", "pyg", "temporal", "projection"} else None)
    try:
        built = step_build(s, cuda, args.reuse_build)
        if built and "tests" in steps:
            step_tests(s, cuda)
        if built and "sanitizers" in steps:
            step_sanitizers(s, cuda)
        if "measurements" in steps:
            measurements(s, cuda, built, scale, dataset, began)
        elif built and dataset is not None:
            wait_dataset(s, dataset, began)
        if "h2d" in steps:
            step_h2d(s, cuda)
        if "mlperf" in steps:
            step_mlperf(s, cuda, built)
        if "pyg" in steps:
            step_pyg_peer(s, cuda, built, scale, args.pyg_wheels)
        if "temporal" in steps:
            step_temporal(s, cuda, built, scale)
        if "threads" in steps:  # after the PyG figure: it takes only the time left
            step_sampler_threads(s, built, scale)
        if "ranks" in steps:
            step_ranks(s, cuda, built)
        if "projection" in steps:
            step_projection(s, cuda, built, scale)
        headline(s)
    finally:
        settle_dataset(s, dataset)
    failed = [n for n, st in s.report["steps"].items() if not st["ok"]]
    s.note(f"gpu-session: {args.out}/session.json; " +
           (f"FAILED or cut short: {', '.join(failed)}" if failed else "every step passed"))
    return 1 if failed else 0


def data_args(scale: float, cuda: bool) -> list[str]:
    """The measurements' dataset options (the rehearsal's tiny graph has a few hundred
    training ids: smaller batches)."""
    return ["--dataset", "products-sim", "--scale", str(scale), "--batch-size",
            "1024" if cuda else "64"]


def step_pyg_peer(s: Session, cuda: bool, built: bool, scale: float, wheels: Path) -> None:
    """PyG's SAGEConv on PyG's NeighborLoader and on ours (benchmarks/gpu_pyg_peer.py): last,
    so that a session cut short loses only this."""
    if not built or "dataset" not in s.report["steps"] or not s.report["steps"]["dataset"]["ok"]:
        s.skip("own-model-pyg", "skipped: no build or no dataset")
        return
    env = gpu_pyg_peer.pyg_peer_env(s, PY, gpu_pyg_peer.install_torch_sparse(s, PY, wheels))
    if isinstance(env, str):
        s.skip("own-model-pyg", env)
        return
    step_measure(s, "own-model-pyg", gpu_pyg_peer.pyg_args(data_args(scale, cuda), cuda), 240,
                 reserve_s=5, env=env)


def measurements(s: Session, cuda: bool, built: bool, scale: float, dataset: subprocess.Popen,
                 began: float) -> None:
    """Per-batch sampling, the copy overlap and the end-to-end ladder, at `scale`."""
    if not built:
        for name in MEASUREMENTS:
            s.skip(name, "skipped: the build failed")
        return
    if not wait_dataset(s, dataset, began):
        for name in MEASUREMENTS:
            s.skip(name, "skipped: the dataset was not built")
        return
    data = data_args(scale, cuda)
    step_measure(s, "placements", ["placements", *data, "--batches", "40", "--repeats", "3"],
                 90, reserve_s=120)
    step_measure(s, "copy-overlap", ["copy-overlap", *data, "--batches", "16", "--rounds", "4"],
                 60, reserve_s=100)
    # The ladder, one pipeline per step (each a fresh process, as bench end-to-end runs them),
    # so that a step cut short loses only its own rung: baseline, the full method, then fused.
    # The last rung: the fused sampler on the GPU with the features in GPU memory (what the
    # H100's first runs pointed to: the host-side workers were the pipeline's bottleneck).
    rungs = [("reference", "reference", []), ("fused+pinned", "fused+pinned", []),
             ("fused", "fused", [])]
    if cuda:
        rungs.append(("fused@gpu", "fused", ["--sampler-device", "cuda",
                                              "--feature-source", "device"]))
    if has_module("dgl"):
        rungs.insert(0, ("dgl", "dgl", []))
    else:
        s.report["dgl"] = "not run: DGL is not installed on this machine"
    ladder: dict | None = None
    for label, rung, extra in rungs:
        result = step_measure(s, f"end-to-end-{label}",
                              ["end-to-end", *data, "--pipelines", rung, "--epochs", "2",
                               "--timeline-batches", "8", "--device", "cuda" if cuda else "cpu",
                               *extra],
                              150, reserve_s=15, keep=False)
        if result is not None:
            ladder = merge_rungs(ladder, result, label)
            write_json_atomic(WORK / "end-to-end.json", ladder)
            s.keep(f"end-to-end-{label}", WORK / "end-to-end.json")


if __name__ == "__main__":
    raise SystemExit(main())
