// Stand-in for the header a CUDA build of torch generates and a CPU build leaves out; the only
// header `make check-cuda` needs beyond what the CPU torch wheel ships (its ATen/c10 CUDA
// headers). On the include path after torch's own (-idirafter), so a CUDA torch's copy wins.
// Content as in torch's CUDA wheels (c10/cuda/impl/cuda_cmake_macros.h.in, shared libraries).
#pragma once
#define C10_CUDA_BUILD_SHARED_LIBS
