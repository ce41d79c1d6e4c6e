// CUDA kernel of affine_transform: one thread per output element, image_math's sampler (the CPU kernel's math).
#include <cstdint>

#include "framework/ops/cuda/cuda_runtime.h"
#include "framework/ops/cuda/cuda_types.cuh"
#include "framework/ops/cuda/image_launch.h"
#include "framework/ops/image_math.h"

namespace ember::cuda {
namespace {

template <class T>
__global__ void affine_transform_kernel(const T* __restrict__ x, const float* __restrict__ transforms,
                                        bool shared_transform, T* __restrict__ y, int64_t h, int64_t w, int64_t c,
                                        int fill_mode, int interpolation, float fill, int64_t total) {
  EMBER_CUDA_GRID_STRIDE_LOOP(i, total) {
    const int64_t ch = i % c, ox = (i / c) % w, oy = (i / (c * w)) % h, b = i / (c * w * h);
    const float* t = transforms + (shared_transform ? 0 : b * 8);
    const T* image = x + b * h * w * c;
    auto read = [&](int64_t yy, int64_t xx) { return static_cast<float>(load(image, (yy * w + xx) * c + ch)); };
    y[i] = to_storage<T>(image_math::affine_sample(t, oy, ox, h, w, fill_mode, interpolation, fill, read));
  }
}

}  // namespace

void launch_affine_transform(DT dt, const void* x, const float* transforms, bool shared_transform, void* y, int64_t n,
                             int64_t h, int64_t w, int64_t c, int fill_mode, int interpolation, float fill,
                             int device, const char* op) {
  const int64_t total = n * h * w * c;
  if (total == 0) return;
  cudaStream_t s = stream(device);
  EMBER_CUDA_DISPATCH_FLOATING(dt, {
    affine_transform_kernel<scalar_t><<<blocks_for(total), kThreads, 0, s>>>(
        static_cast<const scalar_t*>(x), transforms, shared_transform, static_cast<scalar_t*>(y), h, w, c, fill_mode,
        interpolation, fill, total);
    after_launch(op, device);
  });
}

}  // namespace ember::cuda
