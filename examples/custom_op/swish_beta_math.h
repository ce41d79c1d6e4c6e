#pragma once
// The math of swish_beta, shared by the CPU kernels (custom_op.cpp) and the CUDA kernels (swish_beta.cu), so
// the CPU run checks the arithmetic the GPU does. Plain C++17: nvcc compiles it too.
#include <cmath>

#if defined(__CUDACC__)
#define SWISH_BETA_HOST_DEVICE __host__ __device__
#else
#define SWISH_BETA_HOST_DEVICE
#endif

// swish_beta(x) = x * sigmoid(beta * x)
template <class T>
SWISH_BETA_HOST_DEVICE inline T swish_beta_forward(T x, T beta) {
  return x / (T(1) + std::exp(-beta * x));
}

// d swish_beta / dx = s + beta * x * s * (1 - s), s = sigmoid(beta * x); times the incoming gradient dy.
template <class T>
SWISH_BETA_HOST_DEVICE inline T swish_beta_backward(T x, T dy, T beta) {
  const T s = T(1) / (T(1) + std::exp(-beta * x));
  return dy * s * (T(1) + beta * x * (T(1) - s));
}
