#pragma once
// Host launcher of the CUDA affine_transform kernel (image.cu), C++17-clean for both nvcc and g++.
#include <cstdint>

#include "framework/ops/cuda/cuda_dt.h"

namespace ember::cuda {

// y (n, h, w, c) = x (n, h, w, c) sampled through transforms (n or 1 rows of 8 float32), as image_math's
// affine_sample computes each element (floating dtypes); fill is the fill value already rounded to the dtype.
void launch_affine_transform(DT dt, const void* x, const float* transforms, bool shared_transform, void* y, int64_t n,
                             int64_t h, int64_t w, int64_t c, int fill_mode, int interpolation, float fill,
                             int device, const char* op);

}  // namespace ember::cuda
