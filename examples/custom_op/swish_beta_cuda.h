#pragma once
// The launchers of swish_beta's CUDA kernels (swish_beta.cu, compiled when Ember's CUDA backend is built).
// `stream` is the cudaStream_t the op runs on (CustomKernelContext::stream).
#include <cstdint>

void launch_swish_beta(const float* x, float* y, int64_t n, float beta, void* stream);
void launch_swish_beta(const double* x, double* y, int64_t n, double beta, void* stream);
void launch_swish_beta_grad(const float* x, const float* dy, float* dx, int64_t n, float beta, void* stream);
void launch_swish_beta_grad(const double* x, const double* dy, double* dx, int64_t n, double beta, void* stream);
