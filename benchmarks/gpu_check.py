"""`make gpu-check`: the GPU half checked on a machine with a GPU, in one command.

Steps (each runs even if an earlier one failed, so one run shows everything): tests/gpu with
GNNREPRO_REQUIRE_CUDA=1, compute-sanitizer memcheck and racecheck over the CUDA tests, the
sampling benchmark with the sampler on the GPU (`--sampler-device cuda`) and over UVA
(`--sampler-device uva`), and the host-to-device ceiling (benchmarks/h2d_ceiling.py). Logs go to
build/gpu-check/<step>.log; one JSON (steps with status and seconds, and every figure the steps
wrote) to --out. Exits non-zero if CUDA is missing (at once) or any step failed.
"""
from __future__ import annotations

import argparse
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
PY = sys.executable
# The CUDA cases of the op tests (the CPU cases need no sanitizer).
CUDA_TESTS = [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", "tests/gpu", "-k", "cuda"]


def steps() -> list[tuple[str, list[str], Path | None]]:
    """(name, command, JSON the command writes or None)."""
    sanitizer = shutil.which("compute-sanitizer") or str(
        Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "bin" / "compute-sanitizer")
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/gpu-check.json")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("gpu-check: no usable GPU here (torch.cuda.is_available() is False); run it on a "
              "machine with an NVIDIA GPU and a CUDA build of torch", file=sys.stderr)
        return 2
    from gnnrepro import _ops
    if not _ops.cuda_compiled():
        print("gpu-check: gnnrepro was built without its CUDA kernels (needs a CUDA torch and "
              "nvcc at build time: make clean && make setup)", file=sys.stderr)
        return 2
    LOGS.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "GNNREPRO_REQUIRE_CUDA": "1", "PYTHONUNBUFFERED": "1"}
    report = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
              "cuda": torch.version.cuda, "steps": {}, "results": {}}
    for name, cmd, produced in steps():
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
