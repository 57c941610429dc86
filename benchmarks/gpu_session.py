"""`make gpu-session OUT=<dir>`: what a lent GPU machine's minutes are spent on, in one command.

In order, each step bounded in time, its result written under OUT the moment it finishes (a run
cut off still leaves what finished): build the extension for this GPU's architecture with every
core; tests/gpu with CUDA required; compute-sanitizer memcheck over the CUDA op tests and
racecheck over a few; the paper's 1-GPU measurements at products-sim `--scale` (per-batch
sampling per placement, the copy overlap, the end-to-end ladder); the host-to-device ceiling.
The dataset is generated in the background from the start (it needs one core; the build and
tests use the others), and the measurements wait for it.

OUT holds at most 8 files (what a lent machine returns): session.json (every step's status,
seconds, findings and the headline figures, rewritten after each step), session.log (every
step's output, appended as it runs), one JSON per measurement (placements.json,
copy-overlap.json, end-to-end.json, h2d.json, own-model-pyg.json: PyG's model on PyG's
loader and on ours, last, benchmarks/gpu_pyg_peer.py) and the built extension (_C*.so: carried back,
`--reuse-build` spares a second session on the same GPU kind the build).

`--steps` names the steps to run (default all): a second call within one loan runs only what
the first left failed, the dataset and the build coming with them.

`--dry-run` runs the same steps and writes the same files on the CPU at a tiny scale (tests run
it): steps that need a GPU or compute-sanitizer say why they were skipped.

Offline: nothing is downloaded. The Python that runs this is used as it is (a GPU node's own
torch); modules it lacks are installed from `--wheels` (pip --no-index) into build/gpu-site, and
the PyG step's torch-sparse from `--pyg-wheels` (benchmarks/gpu_pyg_peer.py).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from gnnrepro.atomic import (write_json_atomic,  # noqa: E402  (stdlib only: runs before
                             write_text_atomic)   # the modules are installed)
sys.path.insert(0, str(ROOT / "benchmarks"))
import gpu_pyg_peer  # noqa: E402  (stdlib only)

WORK = ROOT / "build" / "gpu-session"
SITE = ROOT / "build" / "gpu-site"
PY = sys.executable
#: Modules beyond torch that building, testing and measuring need.
MODULES = ["setuptools", "ninja", "numpy", "pandas", "yaml", "psutil", "tqdm", "pytest"]
#: Wall-clock seconds the whole session may take, the PyG step included: with a machine's
#: start (35 s to 4.5 minutes seen) it fits a 15-minute loan once, not twice.
DEADLINE_S = 540
#: The CUDA op tests run under memcheck (their cuda cases), and the few under racecheck.
SANITIZED_TESTS = ["tests/gpu/test_sample_fused.py", "tests/gpu/test_gather_rows.py",
                   "tests/gpu/test_sample_errors.py"]
RACECHECK_SELECTION = "test_blocks_are_right_and_equal_the_cpu_op and cuda and fanouts1 and device"
MEASUREMENTS = ("placements", "copy-overlap", "end-to-end")
#: What `--steps` can name (the dataset and the build come with whatever needs them).
STEPS = ("tests", "sanitizers", "measurements", "h2d", "pyg")
REFUSED = "skipped: compute-sanitizer refused this device"


def has_module(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


#: The distribution that provides a module, where their names differ.
DISTRIBUTIONS = {"yaml": "pyyaml"}


def install_missing(modules: list[str], wheels: Path, site: Path = SITE) -> dict[str, str]:
    """Each module: 'present', 'installed' (from the wheels in `wheels`, into `site`, no
    network) or 'missing'. One pip call for all (one at a time if that fails, so one missing
    wheel costs only its own module). `site` goes first on sys.path, for this process and its
    steps."""
    missing = [m for m in modules if not has_module(m)]
    if missing and wheels.is_dir() and any(wheels.glob("*.whl")):
        def pip(names: list[str]) -> int:
            return subprocess.run([PY, "-m", "pip", "install", "-q", "--no-index",
                                   "--find-links", str(wheels), "--target", str(site),
                                   "--upgrade", *[DISTRIBUTIONS.get(n, n) for n in names]]
                                  ).returncode
        if pip(missing) != 0:
            for module in missing:
                pip([module])
        if str(site) not in sys.path:
            sys.path.insert(0, str(site))
        importlib.invalidate_caches()
    return {m: "present" if m not in missing else "installed" if has_module(m) else "missing"
            for m in modules}


def nvcc() -> str | None:
    """nvcc from $CUDA_HOME, the PATH or /usr/local/cuda, as torch's build finds it."""
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    for candidate in ([os.path.join(home, "bin", "nvcc")] if home else []) + [
            shutil.which("nvcc") or "", "/usr/local/cuda/bin/nvcc"]:
        if candidate and os.path.exists(candidate):
            return candidate
    return None


def sanitizer() -> str | None:
    home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    found = shutil.which("compute-sanitizer") or str(Path(home) / "bin" / "compute-sanitizer")
    return found if os.path.exists(found) else None


def machine() -> dict[str, Any]:
    """The device and its runtime, as a result must name them."""
    import torch
    info: dict[str, Any] = {"python": platform.python_version(), "torch": torch.__version__,
                            "cuda": torch.version.cuda, "kernel": platform.release(),
                            "cpu_count": os.cpu_count(), "gpu": None}
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        info.update(gpu=props.name, capability=f"{props.major}.{props.minor}",
                    gpu_memory_gib=round(props.total_memory / 2**30, 1),
                    multiprocessors=props.multi_processor_count)
        smi = shutil.which("nvidia-smi")
        if smi:
            out = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=30).stdout.strip()
            info["driver"] = out or None
    # Firecracker and gVisor, the two runtimes lent GPU machines run under, differ for the
    # sanitizer; the kernel release names them (gVisor reports 4.4.0).
    info["runtime"] = ("gVisor" if platform.release().startswith("4.4.0") else
                       "firecracker" if "-fc-" in platform.release() else "unknown")
    return info


class Session:
    """Runs steps against one deadline and keeps OUT up to date after each."""

    def __init__(self, out: Path, dry_run: bool, deadline_s: float, env: dict[str, str]):
        self.out, self.dry_run, self.env = out, dry_run, env
        self.start = time.monotonic()
        self.deadline = self.start + deadline_s
        out.mkdir(parents=True, exist_ok=True)
        WORK.mkdir(parents=True, exist_ok=True)
        self.log = out / "session.log"
        self.log.write_text("")
        self.report: dict[str, Any] = {"dry_run": dry_run, "deadline_s": deadline_s,
                                       "steps": {}, "figures": {}}

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def note(self, text: str) -> None:
        line = f"[{time.monotonic() - self.start:6.1f} s] {text}"
        print(line, flush=True)
        with open(self.log, "a") as log:
            log.write(line + "\n")

    def save(self) -> None:
        self.report["elapsed_s"] = round(time.monotonic() - self.start, 1)
        # Not sorted: the steps stay in the order they ran.
        write_text_atomic(self.out / "session.json", json.dumps(self.report, indent=2) + "\n")

    def skip(self, name: str, why: str) -> None:
        self.report["steps"][name] = {"status": why, "ok": True, "seconds": 0.0}
        self.note(f"== {name}: {why}")
        self.save()

    def run(self, name: str, cmd: list[str], timeout_s: float, reserve_s: float = 0.0,
            env: dict[str, str] | None = None) -> dict[str, Any]:
        """Run `cmd` (its own process group), at most `timeout_s` and never past the deadline
        less `reserve_s`; append its output to session.log; record and return its step."""
        limit = min(timeout_s, self.left() - reserve_s)
        if limit < min(5.0, timeout_s):  # too little time left to be worth starting
            step = {"status": f"skipped: {max(0, round(self.left()))} s left of the session's "
                              f"deadline", "ok": False, "seconds": 0.0}
            self.report["steps"][name] = step
            self.note(f"== {name}: {step['status']}")
            self.save()
            return step
        self.note(f"== {name} (at most {limit:.0f} s): {' '.join(cmd)}")
        began = time.monotonic()
        with open(self.log, "a") as log:
            proc = subprocess.Popen(cmd, cwd=ROOT, env=env or self.env, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)
            try:
                rc: int | None = proc.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                _stop(proc)
                rc = None
        seconds = round(time.monotonic() - began, 1)
        status = ("ok" if rc == 0 else f"failed (exit {rc})" if rc is not None
                  else f"timed out after {seconds:.0f} s")
        step = {"status": status, "ok": rc == 0, "seconds": seconds, "returncode": rc}
        self.report["steps"][name] = step
        self.note(f"   {name}: {status} in {seconds} s")
        self.save()
        return step

    def keep(self, name: str, produced: Path) -> dict[str, Any] | None:
        """Copy a step's JSON into OUT and return it (None if the step wrote none)."""
        if not produced.exists():
            return None
        result = json.loads(produced.read_text())
        shutil.copyfile(produced, self.out / produced.name)
        self.report["steps"][name]["result"] = produced.name
        return result


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM the step's process group, SIGKILL what is left after 5 s."""
    for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def log_since(session: Session, mark: int) -> str:
    """What session.log gained after byte `mark`."""
    return session.log.read_bytes()[mark:].decode(errors="replace")


def pytest_counts(text: str) -> dict[str, int]:
    """{'passed': n, 'failed': n, ...} from pytest's last summary line in `text` (the one
    that ends in its time, so a sanitizer's "ERROR SUMMARY: 0 errors" is not taken for it)."""
    summaries = [line for line in text.splitlines()
                 if re.search(r"\d+ (passed|failed|errors?|skipped|deselected)", line)
                 and re.search(r" in [\d.]+s( \([\d:]+\))?\W*$", line)]
    if not summaries:
        return {}
    return {kind: int(n) for n, kind in
            re.findall(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected)",
                       summaries[-1])}


def sanitizer_findings(text: str, tool: str) -> int | None:
    """Errors (memcheck) or hazards (racecheck) in the sanitizer's last summary, or None."""
    pattern = (r"ERROR SUMMARY: (\d+) error" if tool == "memcheck"
               else r"RACECHECK SUMMARY: (\d+) hazard")
    found = re.findall(pattern, text)
    return int(found[-1]) if found else None


def sanitizer_refused(text: str) -> bool:
    """What compute-sanitizer prints where the runtime does not let it attach (gVisor)."""
    return "Device not supported" in text or "error 999" in text.lower() or \
        "unknown error" in text.lower()


# ---- the steps ----

def built_extension() -> Path | None:
    """The extension built in place for this Python, if there is one."""
    import sysconfig
    found = ROOT / "gnnrepro" / f"_C{sysconfig.get_config_var('EXT_SUFFIX')}"
    return found if found.exists() else None


def cuda_kernels_load(s: Session) -> tuple[bool, str]:
    """(whether the built extension imports here with its CUDA kernels, what it printed)."""
    probe = subprocess.run([PY, "-c", "from gnnrepro import _ops; print(_ops.cuda_compiled())"],
                           cwd=ROOT, env=s.env, capture_output=True, text=True, timeout=120)
    return probe.stdout.strip() == "True", (probe.stdout + probe.stderr)[-800:]


#: A C++ error from the extension must reach Python as an exception: the probe makes the CPU
#: gather raise (an index past the table's end).
RAISE_PROBE = ("import torch\nfrom gnnrepro._ops import ops\ntry:\n"
               "    ops.gather_rows(torch.zeros(4, 2), torch.tensor([9]), torch.zeros(1, 2))\n"
               "except RuntimeError as exc:\n    print('raised:', str(exc).splitlines()[0])\n")


def errors_reach_python(s: Session) -> tuple[bool, str]:
    """(whether a C++ error raised in the extension arrives as a Python exception, output).
    Where it crashes instead (a toolchain whose unwinding breaks), cuda-gdb's backtrace of the
    crash goes to the log."""
    probe = subprocess.run([PY, "-X", "faulthandler", "-c", RAISE_PROBE], cwd=ROOT, env=s.env,
                           capture_output=True, text=True, timeout=120)
    output = (probe.stdout + probe.stderr)[-3000:]
    if probe.returncode == 0 and "raised:" in probe.stdout:
        return True, output
    debugger = shutil.which("cuda-gdb")
    if debugger:
        trace = subprocess.run([debugger, "-batch", "-ex", "run", "-ex", "bt 25", "--args", PY,
                                "-c", RAISE_PROBE], cwd=ROOT, env=s.env, capture_output=True,
                               text=True, timeout=120)
        output += "\n-- cuda-gdb --\n" + (trace.stdout + trace.stderr)[-6000:]
    return False, output


def compilers() -> dict[str, str | None]:
    """The C++ compiler a build uses (CXX, else c++ on the PATH) and the system's, by version."""
    def version(cmd: str | None) -> str | None:
        if not cmd or not shutil.which(cmd):
            return None
        out = subprocess.run([cmd, "--version"], capture_output=True, text=True, timeout=30)
        return f"{shutil.which(cmd)}: {out.stdout.splitlines()[0] if out.stdout else '?'}"
    return {"default": version(os.environ.get("CXX") or "c++"),
            "system": version("/usr/bin/g++")}


def step_build(s: Session, cuda: bool, reuse: bool) -> bool:
    """Build the extension in place (for this GPU's architecture, every core), or with
    `reuse` keep one already there that loads with its CUDA kernels (one a previous session
    returned, carried along). The built extension is copied into OUT for such a reuse."""
    import torch
    if reuse and cuda and built_extension() and cuda_kernels_load(s)[0]:
        s.skip("build", "reused: the extension in gnnrepro/ loads with its CUDA kernels")
        return True
    env = dict(s.env)
    cmd = [PY, "setup.py", "-q", "build_ext", "--inplace"]
    if cuda:
        compiler = nvcc()
        if compiler is None:
            s.skip("build", "failed: nvcc not found (set CUDA_HOME): the kernels cannot be built")
            s.report["steps"]["build"]["ok"] = False
            return False
        major, minor = torch.cuda.get_device_capability()
        env.update(MAX_JOBS=str(os.cpu_count() or 1), TORCH_CUDA_ARCH_LIST=f"{major}.{minor}",
                   CUDA_HOME=str(Path(compiler).parent.parent), FORCE_CUDA="1")
        cmd.append("--force")
    step = s.run("build", cmd, timeout_s=300, env=env)
    s.report["figures"]["build_s"] = step["seconds"]
    if step["ok"] and cuda:
        step["compilers"] = compilers()
        loads, output = cuda_kernels_load(s)
        raises, probe = errors_reach_python(s) if loads else (False, "")
        system = "/usr/bin/g++"
        if loads and not raises and os.path.exists(system) and (
                shutil.which(env.get("CXX") or "c++") != system):
            # Another compiler's runtime broke unwinding: the system's, whose libgcc and
            # libstdc++ are the ones the process loads.
            s.note("   build: a C++ error from the extension crashed the probe "
                   "(log below); rebuilding with the system compiler " + system)
            with open(s.log, "a") as log:
                log.write(probe + "\n")
            first = step
            env.update(CXX=system, CC="/usr/bin/gcc")
            step = s.run("build", cmd, timeout_s=300, env=env)
            step["first_build"] = first
            step["compilers"] = compilers()
            step["compilers"]["used"] = system
            loads, output = cuda_kernels_load(s)
            raises, probe = errors_reach_python(s) if loads else (False, "")
        step["errors_reach_python"] = raises
        if not loads:
            step.update(ok=False, status="failed: the extension does not load with its CUDA "
                                         "kernels: " + output)
        elif not raises:
            with open(s.log, "a") as log:
                log.write(probe + "\n")
            step.update(ok=False, status="failed: a C++ error raised in the extension crashes "
                                         "the process instead of reaching Python (probe in the "
                                         "log); the steps run anyway")
        so = built_extension()
        if loads and so:
            keep_extension(s, so)
            step["extension"] = so.name
        s.save()
        return loads
    if step["ok"]:  # the rehearsal: the same probe, on the CPU build
        step["errors_reach_python"] = errors_reach_python(s)[0]
        s.save()
    return step["ok"]


def keep_extension(s: Session, so: Path) -> None:
    """The built extension into OUT, without debug symbols where strip exists (a lent machine
    returns files of at most 16 MiB)."""
    strip = shutil.which("strip")
    if strip:
        subprocess.run([strip, "--strip-debug", "-o", str(s.out / so.name), str(so)],
                       timeout=60, check=False)
    if not (s.out / so.name).exists():
        shutil.copyfile(so, s.out / so.name)


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
        _stop(proc)
    if s.report["steps"]["dataset"]["status"] == "running":
        s.skip("dataset", "not used: no step waited for it")


def wait_dataset(s: Session, proc: subprocess.Popen, began: float) -> bool:
    """Wait for the background dataset build (at most until a minute before the deadline)."""
    try:
        output, _ = proc.communicate(timeout=max(1.0, s.left() - 60))
        ok = proc.returncode == 0
        status = "ok" if ok else f"failed (exit {proc.returncode})"
    except subprocess.TimeoutExpired:
        _stop(proc)
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
    """Run `python -m gnnrepro bench <args> --out WORK/<name>.json`; return its JSON, copied
    into OUT if `keep`."""
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
    parser.add_argument("--steps", default=",".join(STEPS),
                        help="the steps to run, comma-separated, of " + ", ".join(STEPS) +
                             " (default all; a second call in one loan runs only what failed)")
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
    dataset = step_dataset(s, scale) if steps & {"measurements", "pyg"} else None
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
        if "pyg" in steps:
            step_pyg_peer(s, cuda, built, scale, args.pyg_wheels)
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
