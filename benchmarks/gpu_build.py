"""The GPU session's build step: the extension for this GPU's architecture with every core (or
one carried from an earlier session, where it loads with its CUDA kernels), checked to load and
to pass a C++ error to Python as an exception; rebuilt with the system compiler where another
compiler's runtime breaks that. The built extension goes into OUT for the next session."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from gpu_machine import PY, compilers, nvcc
from gpu_runner import ROOT, Session

__all__ = ["built_extension", "errors_reach_python", "step_build"]


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


#: The system compiler, whose libgcc and libstdc++ are the ones the process loads.
SYSTEM_CXX = "/usr/bin/g++"


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
        if os.path.exists(SYSTEM_CXX):
            # The lent H100s' and H200's default (/opt/gcc) compiler built an extension whose
            # C++ errors crashed the process (its runtime breaks unwinding): build with the
            # system's from the start, not after a first build (about a minute of device time).
            env.update(CXX=SYSTEM_CXX, CC="/usr/bin/gcc")
        cmd.append("--force")
    step = s.run("build", cmd, timeout_s=300, env=env)
    s.report["figures"]["build_s"] = step["seconds"]
    if step["ok"] and cuda:
        step["compilers"] = compilers()
        loads, output = cuda_kernels_load(s)
        raises, probe = errors_reach_python(s) if loads else (False, "")
        system = SYSTEM_CXX
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
