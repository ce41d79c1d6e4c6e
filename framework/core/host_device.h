#pragma once
// Marks functions that compile for both the CPU and CUDA backends, so kernel math lives in one place.
#if defined(__CUDACC__)
#define EMBER_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define EMBER_HOST_DEVICE inline
#endif
