#pragma once
// Host launchers of the CUDA softmax / log_softmax and sparse softmax crossentropy (kernels in softmax.cu,
// registration in softmax_cuda.cpp).
#include <cstdint>

#include "framework/ops/cuda/cuda_dt.h"
#include "framework/ops/cuda/cuda_runtime.h"

namespace ember::cuda {

// y = softmax (or log_softmax) of x along the middle axis of x seen as (outer, n, inner); dt is floating.
void softmax_launch(bool log, DT dt, const void* x, void* y, int64_t outer, int64_t n, int64_t inner, int device,
                    cudaStream_t stream, const char* op);

// loss[r] = log(sum(exp(x[r] - max))) - (x[r][labels[r]] - max) for the rows of x [rows, n] (dt float32 or
// float64); labels are int32 (labels64 false) or int64 and already checked to lie in [0, n).
void sparse_xent_launch(DT dt, bool labels64, const void* x, const void* labels, void* loss, int64_t rows, int64_t n,
                        int device, cudaStream_t stream, const char* op);

// y = softmax(x) - one_hot(labels) for the rows of x [rows, n]: softmax_launch's values, then 1 subtracted at
// each row's label (none for a label outside [0, n)).
void sparse_xent_backprop_launch(DT dt, bool labels64, const void* x, const void* labels, void* y, int64_t rows,
                                 int64_t n, int device, cudaStream_t stream, const char* op);

}  // namespace ember::cuda
