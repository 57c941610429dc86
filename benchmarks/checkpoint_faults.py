"""Faults a checkpointed run survives: for each setting, `--points` runs cut at seeded random
points (SIGKILL after a step, SIGKILL half-way through writing a checkpoint, SIGTERM), each
resumed, each compared bit for bit with the uninterrupted run (final weights, every epoch's
loss, val and test accuracy), and after each: the run's processes all gone, no new /dev/shm
segment, no temporary file beside the checkpoints.

    .venv/bin/python benchmarks/checkpoint_faults.py \
        --out benchmarks/results/checkpoint-faults-cpu.json

Settings: one process (python -m gnnrepro.training, fused+pinned with 2 worker processes), 2
data-parallel ranks under torchrun killed and resumed by a second command, 2 ranks under
torchrun --max-restarts 1 (the group restarts itself), and partitioned training on 2 machines of
this host (run_local_machines), resumed by a second command. tests/test_checkpoint.py and
tests/test_partitioned_training.py run a few of these cases on every `make test`.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gnnrepro.atomic import write_json_atomic  # noqa: E402
from gnnrepro.env import environment  # noqa: E402

PYTHON = sys.executable
#: A small run: products-sim 0.003 (590 training ids), 10 steps an epoch (5 per rank with 2).
RUN = ["--dataset", "products-sim", "--scale", "0.003", "--epochs", "3", "--batch-size", "64",
       "--threads", "1", "--eval-method", "layerwise", "--checkpoint-every", "2"]
TORCHRUN = [PYTHON, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
#: Two machines of this host, each a torchrun agent (gnnrepro.distributed.partitioned.local).
LOCAL_MACHINES = [PYTHON, "-c", "import sys; from gnnrepro.distributed.partitioned.local import "
                  "run_local_machines; run_local_machines(2, sys.argv[1:], timeout_s=300)"]
PARTITION = "{data_dir}/partition-2"  # made once, by uninterrupted()
#: Setting -> (the command before its output options, optimizer steps in the whole run).
SETTINGS: dict[str, tuple[list[str], int]] = {
    "one process": ([PYTHON, "-m", "gnnrepro.training", *RUN, "--pipeline", "fused+pinned",
                     "--workers", "2", "--worker-kind", "process"], 30),
    "2 ranks, then --resume": ([*TORCHRUN, "--max-restarts", "0", "-m",
                                "gnnrepro.distributed", *RUN, "--pipeline", "fused"], 15),
    "2 ranks restarted by torchrun": ([*TORCHRUN, "--max-restarts", "1", "-m",
                                       "gnnrepro.distributed", *RUN, "--pipeline", "fused"],
                                      15),
    "2 partitioned machines, then --resume": ([*LOCAL_MACHINES, "--partition", PARTITION,
                                               *RUN, "--timeout-s", "60"], 15),
}
#: The settings a SIGTERM stops cleanly (the local machines' launcher does not pass it on).
SIGTERM_SETTINGS = ("one process", "2 ranks, then --resume")


def tagged_processes(tag: str) -> list[int]:
    """Processes whose environment carries GNNREPRO_RUN_TAG=`tag` (a run's children inherit
    it): what is left of a run."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if f"GNNREPRO_RUN_TAG={tag}".encode() in (proc / "environ").read_bytes():
                    found.append(int(proc.name))
            except OSError:
                continue
    return found


def shm_segments() -> set[str]:
    return set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()


def _env(data_dir: Path, tag: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GNNREPRO_FAULT")}
    return env | {"GNNREPRO_DATA": str(data_dir), "GNNREPRO_RUN_TAG": tag} | extra


def run_command(args: list[str], env: dict[str, str], timeout_s: float = 300,
                sigterm_after: Path | None = None) -> subprocess.CompletedProcess:
    """Run `args` to the end; with `sigterm_after`, send SIGTERM once that file exists."""
    if sigterm_after is None:
        return subprocess.run(args, env=env, capture_output=True, text=True,
                              timeout=timeout_s, cwd=ROOT)
    with subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, cwd=ROOT) as proc:
        deadline = time.monotonic() + timeout_s
        while not sigterm_after.exists() and proc.poll() is None:
            if time.monotonic() > deadline:
                proc.kill()
                break
            time.sleep(0.01)
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=timeout_s)
        return subprocess.CompletedProcess(args, proc.returncode, out, err)


def _outputs(directory: Path) -> list[str]:
    return ["--checkpoint-dir", str(directory / "ckpt"), "--weights", str(directory / "w.pt"),
            "--out", str(directory / "result.json")]


def _final(directory: Path) -> dict[str, Any]:
    """What must be bit-identical: the weights, each epoch's loss, val and test accuracy."""
    result = json.loads((directory / "result.json").read_text())
    return {"weights": torch.load(directory / "w.pt", weights_only=True),
            "losses": [e["loss"] for e in result["epochs"]],
            "accuracy": (result["val_acc"], result["test_acc"])}


def same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return (a["losses"] == b["losses"] and a["accuracy"] == b["accuracy"]
            and a["weights"].keys() == b["weights"].keys()
            and all(torch.equal(a["weights"][k], b["weights"][k]) for k in a["weights"]))


def _command(setting: str, data_dir: Path) -> list[str]:
    return [arg.format(data_dir=data_dir) for arg in SETTINGS[setting][0]]


def uninterrupted(setting: str, data_dir: Path, work: Path) -> dict[str, Any]:
    """The setting's run, uncut: what every resumed run must equal (made after the partition
    its setting needs)."""
    command = _command(setting, data_dir)
    partition = Path(PARTITION.format(data_dir=data_dir))
    if "--partition" in command and not partition.exists():
        made = run_command([PYTHON, "-m", "gnnrepro", "partition", "--dataset", "products-sim",
                            "--scale", "0.003", "--parts", "2", "--out", str(partition)],
                           _env(data_dir, uuid.uuid4().hex))
        if made.returncode != 0:
            raise RuntimeError(f"partitioning failed:\n{made.stderr[-3000:]}")
    work.mkdir(parents=True, exist_ok=True)
    done = run_command([*command, *_outputs(work)], _env(data_dir, uuid.uuid4().hex))
    if done.returncode != 0:
        raise RuntimeError(f"{setting}: the uninterrupted run failed:\n{done.stderr[-3000:]}")
    return _final(work)


def fault_case(setting: str, fault: str, data_dir: Path, work: Path,
               reference: dict[str, Any]) -> dict[str, Any]:
    """Cut the setting's run at `fault` ("step:N", "write:N" or "sigterm:N": SIGTERM once
    checkpoint N exists), resume it, and report what came of it."""
    command = _command(setting, data_dir)
    work.mkdir(parents=True, exist_ok=True)
    tag, shm_before = uuid.uuid4().hex, shm_segments()
    cut = [*command, *_outputs(work)]
    restarts = "restarted by torchrun" in setting
    kind, _, count = fault.partition(":")
    rank = "@1" if setting != "one process" and kind == "step" else ""
    fault_env = ({} if kind == "sigterm" else
                 {"GNNREPRO_FAULT": fault + rank, "GNNREPRO_FAULT_MARK": str(work / "fired")})
    began = time.perf_counter()
    first = run_command([*cut, "--resume"] if restarts else cut,
                        _env(data_dir, tag, **fault_env),
                        sigterm_after=(work / "ckpt" / f"step-{int(count):010d}.ckpt"
                                       if kind == "sigterm" else None))
    cut_status = first.returncode
    resumed_by = "torchrun's restart" if restarts else "a second command with --resume"
    final = first
    if not restarts:
        final = run_command([*cut, "--resume"], _env(data_dir, tag))
    seconds = time.perf_counter() - began
    time.sleep(0.5)  # a process reaped just now
    leftovers = {"processes": tagged_processes(tag),
                 "shm": sorted(shm_segments() - shm_before),
                 "temporary": sorted(p.name for p in (work / "ckpt").iterdir()
                                     if not p.name.endswith(".ckpt"))
                 if (work / "ckpt").is_dir() else []}
    identical = final.returncode == 0 and same(reference, _final(work))
    stop_line = next((line for line in (first.stderr or "").splitlines()
                      if line.startswith("stopped by")), None)
    return {"setting": setting, "fault": fault, "cut_status": cut_status,
            "fired": kind == "sigterm" or (work / "fired").exists(),
            "resumed_by": resumed_by, "resumed": "resuming from" in final.stderr,
            "identical": identical, "seconds": seconds, "stop_line": stop_line,
            "leftovers": leftovers,
            "error": None if final.returncode == 0 else final.stderr[-2000:]}


def fault_points(setting: str, points: int, seed: int) -> list[str]:
    """`points` seeded cut points over the run's steps: one in the middle of a write, one
    SIGTERM where the run has no torchrun restarts, the rest SIGKILL after a step."""
    _, steps = SETTINGS[setting]
    rng = random.Random(f"{seed}:{setting}")
    chosen = [f"write:{rng.randint(2, steps // 2 - 1)}"]
    if setting in SIGTERM_SETTINGS:
        chosen.append(f"sigterm:{2 * rng.randint(1, steps // 2 - 1)}")
    kills = rng.sample(range(1, steps), min(points - len(chosen), steps - 1))
    return chosen + [f"step:{k}" for k in sorted(kills)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", type=int, default=10, help="cut points per setting")
    parser.add_argument("--settings", default=";".join(SETTINGS),
                        help=f"semicolon-separated, of: {'; '.join(SETTINGS)}")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    settings = [s.strip() for s in args.settings.split(";")]
    unknown = [s for s in settings if s not in SETTINGS]
    if unknown:
        parser.error(f"--settings: unknown {unknown}; choose from {list(SETTINGS)}")
    cases = []
    with tempfile.TemporaryDirectory(prefix="gnnrepro-faults-") as tmp:
        data_dir = Path(tmp) / "data"
        for setting in settings:
            reference = uninterrupted(setting, data_dir, Path(tmp) / setting / "whole")
            for i, fault in enumerate(fault_points(setting, args.points, args.seed)):
                case = fault_case(setting, fault, data_dir, Path(tmp) / setting / str(i),
                                  reference)
                cases.append(case)
                print(f"{setting}: {fault}: {'identical' if case['identical'] else 'DIFFERS'}"
                      f", leftovers {case['leftovers']} ({case['seconds']:.1f} s)",
                      file=sys.stderr, flush=True)
    report = {"params": {"points": args.points, "settings": settings, "seed": args.seed,
                         "run": RUN},
              "cases": cases, "env": environment()}
    write_json_atomic(args.out, report)
    return 0 if all(c["identical"] for c in cases) else 1


if __name__ == "__main__":
    sys.exit(main())
