"""Builds gnnrepro._C: the C++ ops always, the CUDA kernels when torch has CUDA and nvcc exists.

FORCE_CUDA=1 / FORCE_CPU=1 override the detection; GNNREPRO_ASAN=1 builds with AddressSanitizer
(see `make asan`); GNNREPRO_NO_EXT=1 installs the Python package alone (`make setup` then builds
the extension in place, incrementally, with `setup.py build_ext --inplace`).
"""
import glob
import os

import torch
from setuptools import setup
from torch.utils.cpp_extension import CUDA_HOME, BuildExtension, CppExtension, CUDAExtension


def build_cuda() -> bool:
    if os.environ.get("FORCE_CPU") == "1":
        return False
    if os.environ.get("FORCE_CUDA") == "1":
        return True
    return torch.version.cuda is not None and CUDA_HOME is not None


def extension():
    cpp = sorted(glob.glob("csrc/**/*.cpp", recursive=True))
    cxx = ["-O3", "-fopenmp", "-std=c++20"]
    link = ["-fopenmp"]
    if os.environ.get("GNNREPRO_ASAN") == "1":
        cxx = ["-O1", "-g", "-fopenmp", "-std=c++20", "-fsanitize=address,undefined",
               "-fno-omit-frame-pointer"]
        link += ["-fsanitize=address,undefined"]
    if build_cuda():
        cu = sorted(glob.glob("csrc/**/*.cu", recursive=True))
        return CUDAExtension(
            "gnnrepro._C", cpp + cu,
            define_macros=[("GNNREPRO_WITH_CUDA", None)],
            extra_compile_args={"cxx": cxx, "nvcc": ["-O3", "-std=c++20", "--expt-relaxed-constexpr"]},
            extra_link_args=link)
    return CppExtension("gnnrepro._C", cpp, extra_compile_args={"cxx": cxx}, extra_link_args=link)


setup(ext_modules=[] if os.environ.get("GNNREPRO_NO_EXT") == "1" else [extension()], cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)})
