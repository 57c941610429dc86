#!/usr/bin/env bash
# The GPU half, checked on a CUDA machine, offline. From the repository root:
#
#   bash benchmarks/device_run.sh                     # every step
#   bash benchmarks/device_run.sh setup tests-gpu     # only these steps
#
# Steps: setup (install the wheels in wheels/ with --no-index, then build the extension with its
# CUDA kernels as an editable install for sm_90; skipped when the built extension already has
# CUDA kernels and no source is newer), tests-cpu, tests-gpu, memcheck (compute-sanitizer over
# the GPU tests), bench (the GPU benchmarks). Expects python3 with a CUDA torch (2.11 + CUDA 13
# on the H200 image), nvcc, pytest and compute-sanitizer.
# Logs go to $OUT (default build/device-run), one file per step: keep it at 8 files or fewer,
# which is all the device tool brings back. The tool also stops a call after 10 minutes: if
# everything does not fit, split the steps over calls on the warm machine. Exits non-zero if
# any step failed; every requested step runs regardless, so one run shows everything.
set -uo pipefail
cd "$(dirname "$0")/.."

OUT=${OUT:-build/device-run}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
STEPS=("$@")
[ "${#STEPS[@]}" -eq 0 ] && STEPS=(setup tests-cpu tests-gpu memcheck bench)
wanted() { [[ " ${STEPS[*]} " == *" $1 "* ]]; }
for name in "${STEPS[@]}"; do
  case $name in
    setup | tests-cpu | tests-gpu | memcheck | bench) ;;
    *) echo "unknown step '$name' (steps: setup tests-cpu tests-gpu memcheck bench)" >&2; exit 2 ;;
  esac
done
for name in "${STEPS[@]}"; do rm -f "$OUT/$name.log"; done
export PYTHONUNBUFFERED=1
export GNNREPRO_REQUIRE_CUDA=1  # tests/gpu fail instead of skipping without CUDA kernels
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}
export MAX_JOBS=${MAX_JOBS:-$(nproc)}

failed=()
# step NAME TIMEOUT_S COMMAND...: runs COMMAND with a time limit, output to $OUT/NAME.log (and,
# shortened, to the console).
step() {
  local name=$1 limit=$2
  shift 2
  echo "== $name: $*"
  local start=$SECONDS
  timeout "$limit" "$@" >>"$OUT/$name.log" 2>&1
  local rc=$?
  tail -n 15 "$OUT/$name.log" | sed 's/^/   | /'
  if [ "$rc" -eq 0 ]; then
    echo "   ok ($((SECONDS - start)) s)"
  else
    local why="exit $rc"
    [ "$rc" -eq 124 ] && why="timed out after $limit s"
    echo "   FAILED: $why ($((SECONDS - start)) s); see $OUT/$name.log"
    failed+=("$name")
  fi
  return "$rc"
}

# ---- 1. environment, wheels, build (setup.log) ------------------------------------------------
# Whether gnnrepro._C exists, has CUDA kernels and is newer than every source.
built() {
  local so
  so=$(ls gnnrepro/_C*.so 2>/dev/null | head -n 1)
  [ -n "$so" ] && [ -z "$(find csrc setup.py -newer "$so" 2>/dev/null)" ] &&
    "$PY" -c 'from gnnrepro import _ops; raise SystemExit(not _ops.cuda_compiled())' 2>/dev/null
}
if wanted setup; then
  {
    date -u
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || true
    nvcc --version | tail -n 2 || true
    "$PY" -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__,
      "cuda", torch.version.cuda, "available", torch.cuda.is_available())'
  } >>"$OUT/setup.log" 2>&1
  if compgen -G "wheels/*.whl" >/dev/null; then
    step setup 300 "$PY" -m pip install --no-index --no-deps --no-compile --find-links wheels \
      wheels/*.whl
  fi
  if built; then
    echo "   the extension is built with CUDA kernels and up to date: no rebuild"
  else
    step setup 400 "$PY" -m pip install --no-build-isolation --no-deps -v -e . &&
      step setup 60 "$PY" -c 'from gnnrepro import _ops
assert _ops.cuda_compiled(), "the build has no CUDA kernels"; print("CUDA kernels built")'
  fi
fi

# ---- 2. tests ---------------------------------------------------------------------------------
wanted tests-cpu && step tests-cpu 500 "$PY" -m pytest -q -p no:cacheprovider tests \
  --ignore=tests/gpu
wanted tests-gpu && step tests-gpu 300 "$PY" -m pytest -q -p no:cacheprovider tests/gpu

# ---- 3. compute-sanitizer memcheck over the GPU tests -----------------------------------------
# Without torch's caching allocator every tensor is its own allocation, so a read or write past
# the end of one is caught instead of landing in a cached block's slack.
if wanted memcheck; then
  SANITIZER=$(command -v compute-sanitizer ||
    echo "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer")
  step memcheck 500 env PYTORCH_NO_CUDA_MEMORY_CACHING=1 \
    "$SANITIZER" --tool memcheck --error-exitcode 97 --print-limit 50 \
    "$PY" -m pytest -q -p no:cacheprovider -x tests/gpu/test_sampler_cuda.py \
    tests/gpu/test_gather_cuda.py
  grep -q "Device not supported" "$OUT/memcheck.log" 2>/dev/null &&
    echo "   (compute-sanitizer does not support this machine's runtime: memcheck did not run)"
fi

# ---- 4. GPU benchmarks (bench) ----------------------------------------------------------------
if wanted bench; then
  : # >>> GPU BENCHMARKS GO HERE (`--device cuda` runs, added with the benchmark code). <<<
  # Use the step helper so their logs land in $OUT, e.g.
  #   step bench 600 "$PY" -m gnnrepro bench sampling --device cuda ... \
  #     --out "$OUT/sampling-cuda.json"
  # <<< END OF GPU BENCHMARKS >>>
fi

echo
if [ "${#failed[@]}" -eq 0 ]; then
  echo "device_run: all steps passed; logs in $OUT"
else
  echo "device_run: FAILED steps: ${failed[*]}; logs in $OUT"
  exit 1
fi
