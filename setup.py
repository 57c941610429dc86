"""Builds gnnrepro._C: the C++ ops always, the CUDA kernels when torch has CUDA and nvcc exists.

FORCE_CUDA=1 / FORCE_CPU=1 override the detection; TORCH_CUDA_ARCH_LIST picks the GPU
architectures (default: csrc/cuda_archs.txt, the list every CUDA build targets); GNNREPRO_ASAN=1 builds with AddressSanitizer
(see `make asan`); GNNREPRO_NO_EXT=1 installs the Python package alone (`make setup` then builds
the extension in place, incrementally, with `setup.py build_ext --inplace`).
"""
import glob
import os

import torch
from setuptools import setup
from torch.utils.cpp_extension import CUDA_HOME, BuildExtension, CppExtension, CUDAExtension


def build_cuda() -> bool:
    """CUDA kernels only with a CUDA torch and an nvcc to compile them (or FORCE_CUDA=1)."""
    if os.environ.get("FORCE_CPU") == "1":
        return False
    if os.environ.get("FORCE_CUDA") == "1":
        return True
    return (torch.version.cuda is not None and CUDA_HOME is not None
            and os.path.exists(os.path.join(CUDA_HOME, "bin", "nvcc")))


def extension():
    cpp = sorted(glob.glob("csrc/**/*.cpp", recursive=True))
    # -fopenmp when compiling only: at::parallel_for is an inline template that runs in
    # parallel only where _OPENMP is defined (without it, every op here would run on one
    # thread); not when linking, so the extension names no OpenMP library of its own and its
    # OpenMP calls resolve to the runtime torch loaded (one runtime per process).
    # -ffp-contract=off: no fused multiply-add, so the weighted picks' floating point (csrc/common/
    # weighted_picks.h) rounds as the CUDA kernels' __dadd_rn/__dmul_rn do, on any host CPU.
    # -g1: Python's CFLAGS carry -g, whose full debug info of torch's templates doubles the
    # compile time; line tables (perf, backtraces) are kept.
    cxx = ["-O3", "-g1", "-std=c++20", "-fopenmp", "-ffp-contract=off"]
    link = []
    if os.environ.get("GNNREPRO_ASAN") == "1":
        cxx = ["-O1", "-g", "-std=c++20", "-fopenmp", "-ffp-contract=off",
               "-fsanitize=address,undefined",
               "-fno-omit-frame-pointer"]
        link += ["-fsanitize=address,undefined"]
    if build_cuda():
        # Without a list torch would target every GPU it can see (or all, with none visible).
        with open("csrc/cuda_archs.txt") as archs:
            os.environ.setdefault("TORCH_CUDA_ARCH_LIST", ";".join(archs.read().split()))
        cu = sorted(glob.glob("csrc/**/*.cu", recursive=True))
        # -lineinfo: source lines in compute-sanitizer and profiler reports, at no run-time cost.
        nvcc = ["-O3", "-std=c++20", "--expt-relaxed-constexpr", "-lineinfo"]
        return CUDAExtension(
            "gnnrepro._C", cpp + cu,
            define_macros=[("GNNREPRO_WITH_CUDA", None)],
            extra_compile_args={"cxx": cxx, "nvcc": nvcc},
            extra_link_args=link)
    return CppExtension("gnnrepro._C", cpp, extra_compile_args={"cxx": cxx}, extra_link_args=link)


setup(ext_modules=[] if os.environ.get("GNNREPRO_NO_EXT") == "1" else [extension()],
      cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)})
