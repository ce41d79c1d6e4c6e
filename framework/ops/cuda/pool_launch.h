#pragma once
// Host launchers of the 2-D pooling kernels (NHWC), C++17-clean for both nvcc and g++.
#include <cstdint>

#include "framework/ops/cuda/cuda_dt.h"

namespace ember::cuda {

// Geometry of one pooling op: input (n, h, w, c), output (n, oh, ow, c), window, strides, top/left pads.
struct PoolShape {
  int64_t n, h, w, c, oh, ow, kh, kw, sh, sw, pt, pl;
};

// y = max or average pooling of x (floating dtypes); the average divides by the in-image part of each window.
void launch_pool2d_forward(DT dt, bool is_max, const void* x, void* y, const PoolShape& g, int device, const char* op);
// dx of max pooling: argmax (n * oh * ow * c int32 scratch, unused when the output is empty) holds each window's
// first maximum; every input element then gathers dy from the windows that picked it.
void launch_max_pool2d_grad(DT dt, const void* x, const void* dy, void* dx, int32_t* argmax, const PoolShape& g,
                            int device, const char* op);
// dx of average pooling, gathered per input element.
void launch_avg_pool2d_grad(DT dt, const void* dy, void* dx, const PoolShape& g, int device, const char* op);

}  // namespace ember::cuda
