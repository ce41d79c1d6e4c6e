#pragma once
// Host launchers of the convolution helpers (C++17-clean): the layout moves around cuDNN (filter transposes,
// explicit padding and cropping) and direct kernels for what cuDNN does not take (float64: cuDNN has no NHWC
// double convolution; shapes beyond its 32-bit descriptors or without an algorithm).
#include <cstdint>

#include "framework/ops/cuda/cuda_dt.h"

namespace ember::cuda {

// One convolution: input (n, h, w, c) NHWC, filters (kh, kw, c / groups, o) HWIO, output (n, oh, ow, o); pt/pl
// are the top/left pads (the bottom/right ones follow from the output size).
struct ConvShape {
  int64_t n, h, w, c, kh, kw, o, oh, ow, groups, sh, sw, dh, dw, pt, pl;
};

// out (cols, rows) = transpose of in (rows, cols), both row-major, elements of elem_bytes (2, 4 or 8) bytes.
void launch_conv_transpose2d(const void* in, void* out, int64_t rows, int64_t cols, int elem_bytes, int device,
                             const char* op);
// xp (n, hp, wp, c) = x (n, h, w, c) placed at row `top`, column `left`, zeros around it.
void launch_conv_pad_nhwc(const void* x, void* xp, int64_t n, int64_t h, int64_t w, int64_t c, int64_t hp, int64_t wp,
                          int64_t top, int64_t left, int elem_bytes, int device, const char* op);
// x (n, h, w, c) = the window of xp (n, hp, wp, c) starting at row `top`, column `left`.
void launch_conv_crop_nhwc(const void* xp, void* x, int64_t n, int64_t h, int64_t w, int64_t c, int64_t hp, int64_t wp,
                           int64_t top, int64_t left, int elem_bytes, int device, const char* op);

// y (total elements, `channels` innermost) += bias, in the compute type, rounded once, then relu'd if relu is set
// (the epilogue of conv2d_bias and matmul_bias).
void launch_bias_add(DT dt, void* y, const void* bias, int64_t total, int64_t channels, bool relu, int device,
                          const char* op);

// Direct convolutions (floating dtypes), the same gathers and summation order as cpu/conv.cpp's float64 loops
// (the filter gradient sums with a fixed-shape block reduction instead); deterministic.
void launch_conv2d_direct(DT dt, const void* x, const void* w, void* y, const ConvShape& g, int device, const char* op);
void launch_conv2d_backprop_input_direct(DT dt, const void* w, const void* dy, void* dx, const ConvShape& g, int device,
                                         const char* op);
void launch_conv2d_backprop_filter_direct(DT dt, const void* x, const void* dy, void* dw, const ConvShape& g,
                                          int device, const char* op);

}  // namespace ember::cuda
