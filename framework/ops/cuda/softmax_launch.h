#pragma once
// Host launcher of the CUDA softmax / log_softmax (kernels in softmax.cu, registration in softmax_cuda.cpp).
#include <cstdint>

#include "framework/ops/cuda/cuda_dt.h"
#include "framework/ops/cuda/cuda_runtime.h"

namespace ember::cuda {

// y = softmax (or log_softmax) of x along the middle axis of x seen as (outer, n, inner); dt is floating.
void softmax_launch(bool log, DT dt, const void* x, void* y, int64_t outer, int64_t n, int64_t inner, int device,
                    cudaStream_t stream, const char* op);

}  // namespace ember::cuda
