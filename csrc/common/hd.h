// GNNREPRO_HD marks the per-element functions that the CPU ops and the CUDA kernels both call
// (rng.h, picks.h, relabel.h, gather_index.h): compiled for host and device by nvcc, plain inline
// functions in the C++ build, so the CPU tests run the very code the kernels run.
#pragma once

#if defined(__CUDACC__)
#define GNNREPRO_HD __host__ __device__ __forceinline__
#else
#define GNNREPRO_HD inline
#endif
