"""`make gpu-check`: the GPU half checked on a machine with a GPU, in one command.

Steps (each runs even if an earlier one failed, so one run shows everything): tests/gpu with
GNNREPRO_REQUIRE_CUDA=1, compute-sanitizer memcheck and racecheck over the CUDA tests, the
sampling benchmark with the sampler on the GPU (`--sampler-device cuda`) and over UVA
(`--sampler-device uva`), and the host-to-device ceiling (benchmarks/h2d_ceiling.py). Logs go to
build/gpu-check/<step>.log; one JSON (steps with status and seconds, and every figure the steps
wrote) to --out. Exits non-zero if CUDA is missing (at once) or any step failed.

`--offline` is the same check on a GPU node as it comes (a cluster node, a lent GPU machine): a
CUDA torch and nvcc installed, no network, no venv of ours. It uses the Python that runs it
(its torch), installs only what that Python lacks from a folder of wheels carried along
(`--wheels`, filled here by `make gpu-wheels`; `pip --no-index`, into build/gpu-site), builds
the extension in place, and runs every step it can: a step whose packages are missing is
listed as skipped with the reason, as are the parts that need DGL or papermill.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "build" / "gpu-check"
SITE = ROOT / "build" / "gpu-site"
SANITIZER = shutil.which("compute-sanitizer") or str(
    Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "bin" / "compute-sanitizer")
#: Modules beyond torch: what building and importing gnnrepro needs, then what a step needs.
BASE_MODULES = ["setuptools", "numpy", "tqdm"]
STEP_MODULES = {"tests-gpu": ["pytest"], "memcheck": ["pytest"], "racecheck": ["pytest"],
                "sampling-cuda": ["psutil"], "sampling-uva": ["psutil"]}
#: Parts of the full check that need packages a GPU node may lack: module -> what is skipped.
OPTIONAL_PARTS = {"dgl": "DGL's rows beside ours (the samplers dgl-fused, dgl-unfused)",
                  "papermill": "the notebooks (make figures)"}
PY = sys.executable
# The CUDA cases of the op tests (the CPU cases need no sanitizer).
CUDA_TESTS = [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", "tests/gpu", "-k", "cuda"]


def steps() -> list[tuple[str, list[str], Path | None]]:
    """(name, command, JSON the command writes or None)."""
    sanitizer = SANITIZER
    sampling = [PY, "-m", "gnnrepro", "bench", "sampling", "--dataset", "products-sim",
                "--scale", "0.25", "--fanouts", "15,10,5", "--batch-size", "1024",
                "--batches", "50", "--samplers", "fused"]
    return [
        ("tests-gpu", [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-s", "tests/gpu"],
         None),
        ("memcheck", [sanitizer, "--tool", "memcheck", "--error-exitcode", "97",
                      "--print-limit", "50", *CUDA_TESTS], None),
        ("racecheck", [sanitizer, "--tool", "racecheck", "--error-exitcode", "97",
                       "--print-limit", "50", *CUDA_TESTS], None),
        ("sampling-cuda", [*sampling, "--sampler-device", "cuda", "--out",
                           str(LOGS / "sampling-cuda.json")], LOGS / "sampling-cuda.json"),
        ("sampling-uva", [*sampling, "--sampler-device", "uva", "--out",
                          str(LOGS / "sampling-uva.json")], LOGS / "sampling-uva.json"),
        ("h2d-ceiling", [PY, "benchmarks/h2d_ceiling.py", "--gib", "1", "--out",
                         str(LOGS / "h2d.json")], LOGS / "h2d.json"),
    ]


def has_module(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def install_missing(modules: list[str], wheels: Path, site: Path = SITE) -> dict[str, str]:
    """Each module: 'present', 'installed' (from the wheels in `wheels`, into `site`, no
    network) or 'missing'. `site` goes first on sys.path, for this process and its steps."""
    status: dict[str, str] = {}
    for module in modules:
        if has_module(module):
            status[module] = "present"
            continue
        status[module] = "missing"
        if wheels.is_dir() and any(wheels.glob("*.whl")):
            rc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index",
                                 "--find-links", str(wheels), "--target", str(site),
                                 module]).returncode
            if str(site) not in sys.path:
                sys.path.insert(0, str(site))
            importlib.invalidate_caches()
            if rc == 0 and has_module(module):
                status[module] = "installed"
    return status


def skipped_steps(names: list[str], status: dict[str, str]) -> dict[str, str]:
    """Step -> why it cannot run, for the steps whose modules are missing."""
    return {name: "needs " + ", ".join(m for m in STEP_MODULES[name] if status.get(m) == "missing")
            for name in names
            if any(status.get(m) == "missing" for m in STEP_MODULES.get(name, []))}


def refusal() -> str | None:
    """Why the GPU check cannot start here, or None."""
    if not torch.cuda.is_available():
        return ("no usable GPU here (torch.cuda.is_available() is False); run it on a machine "
                "with an NVIDIA GPU and a CUDA build of torch")
    return None


def nvcc() -> str | None:
    """nvcc from $CUDA_HOME, the PATH or /usr/local/cuda, as torch's build finds it."""
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    for candidate in ([os.path.join(home, "bin", "nvcc")] if home else []) + [
            shutil.which("nvcc") or "", "/usr/local/cuda/bin/nvcc"]:
        if candidate and os.path.exists(candidate):
            return candidate
    return None


def build_in_place(env: dict[str, str]) -> bool:
    """setup.py build_ext --inplace --force with this Python (its torch), for this GPU's
    architecture unless TORCH_CUDA_ARCH_LIST says otherwise; log in LOGS/build.log."""
    compiler = nvcc()
    if compiler is None:
        print("gpu-check: nvcc not found (set CUDA_HOME): the CUDA kernels cannot be built",
              file=sys.stderr)
        return False
    major, minor = torch.cuda.get_device_capability()
    env = {"MAX_JOBS": "8", "TORCH_CUDA_ARCH_LIST": f"{major}.{minor}",
           "CUDA_HOME": str(Path(compiler).parent.parent), "FORCE_CUDA": "1", **env}
    print(f"== build: {sys.executable} setup.py build_ext --inplace --force (sm "
          f"{env['TORCH_CUDA_ARCH_LIST']}; log {LOGS / 'build.log'})", flush=True)
    with open(LOGS / "build.log", "w") as log:
        rc = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace", "--force"],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT).returncode
    if rc != 0:
        print(f"gpu-check: the build failed; see {LOGS / 'build.log'}", file=sys.stderr)
    return rc == 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/gpu-check.json")
    parser.add_argument("--offline", action="store_true",
                        help="use this Python's torch, install nothing from a registry, build "
                             "in place (see the module doc)")
    parser.add_argument("--wheels", type=Path, default=ROOT / "build" / "gpu-wheels",
                        help="wheels for the packages this Python lacks (--offline)")
    args = parser.parse_args(argv)
    why = refusal()
    if why is not None:
        print(f"gpu-check: {why}", file=sys.stderr)
        return 2
    LOGS.mkdir(parents=True, exist_ok=True)
    status: dict[str, str] = {}
    env = {**os.environ}
    if args.offline:
        needed = BASE_MODULES + sorted({m for ms in STEP_MODULES.values() for m in ms})
        status = install_missing(needed, args.wheels)
        installed = any(v == "installed" for v in status.values())
        path = [str(ROOT)] + ([str(SITE)] if installed else [])
        env["PYTHONPATH"] = os.pathsep.join(path + [env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        if any(status[m] == "missing" for m in BASE_MODULES):
            print(f"gpu-check: cannot build gnnrepro without {status}; put their wheels in "
                  f"{args.wheels} (make gpu-wheels)", file=sys.stderr)
            return 2
        if not build_in_place(env):
            return 1
        sys.path.insert(0, str(ROOT))
    from gnnrepro import _ops
    if not _ops.cuda_compiled():
        print("gpu-check: gnnrepro was built without its CUDA kernels (needs a CUDA torch and "
              "nvcc at build time: make clean && make setup)", file=sys.stderr)
        return 2
    env.update(GNNREPRO_REQUIRE_CUDA="1", PYTHONUNBUFFERED="1")
    all_steps = steps()
    skipped = skipped_steps([name for name, _, _ in all_steps], status)
    if not Path(SANITIZER).exists():
        skipped.update({name: "compute-sanitizer not found (set CUDA_HOME)"
                        for name in ("memcheck", "racecheck")})
    skipped.update({part: f"{module} is not installed" for module, part in OPTIONAL_PARTS.items()
                    if not has_module(module)})
    report = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
              "cuda": torch.version.cuda, "python": sys.version.split()[0],
              "offline": args.offline, "modules": status, "skipped": skipped, "steps": {},
              "results": {}}
    for part, reason in skipped.items():
        print(f"== {part}: SKIPPED ({reason})", flush=True)
    for name, cmd, produced in all_steps:
        if name in skipped:
            continue
        print(f"== {name}: {' '.join(cmd)}", flush=True)
        start = time.perf_counter()
        with open(LOGS / f"{name}.log", "w") as log:
            # Without torch's caching allocator every tensor is its own allocation, so the
            # sanitizer catches an access past one instead of landing in a cached block's slack.
            sanitized = name in ("memcheck", "racecheck")
            step_env = {**env, "PYTORCH_NO_CUDA_MEMORY_CACHING": "1"} if sanitized else env
            rc = subprocess.run(cmd, cwd=ROOT, env=step_env, stdout=log, stderr=subprocess.STDOUT
                                ).returncode
        seconds = round(time.perf_counter() - start, 1)
        report["steps"][name] = {"ok": rc == 0, "returncode": rc, "seconds": seconds,
                                 "log": str((LOGS / f"{name}.log").relative_to(ROOT))}
        if produced is not None and produced.exists():
            report["results"][name] = json.loads(produced.read_text())
        print(f"   {'ok' if rc == 0 else f'FAILED (exit {rc})'} in {seconds} s; "
              f"log {LOGS / f'{name}.log'}", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    failed = [n for n, s in report["steps"].items() if not s["ok"]]
    print(f"gpu-check: figures in {args.out}, logs in {LOGS}"
          + (f"; FAILED steps: {', '.join(failed)}" if failed else "; every step passed"))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
