// CPU kernel of affine_transform: image_math's sampler per output pixel, in float as TF computes it.
#include <cstdint>

#include "framework/core/parallel.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/image_math.h"

namespace ember {
namespace {

void affine_transform_cpu(const KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const Tensor& transforms = ctx.inputs[1];
  Tensor& y = ctx.outputs[0];
  const auto& a = std::get<AffineTransformAttrs>(ctx.attrs);
  if (y.num_elements() == 0) return;
  const int64_t n = x.shape()[0], h = x.shape()[1], w = x.shape()[2], c = x.shape()[3];
  const bool shared = transforms.shape()[0] == 1;
  const float* t_all = static_cast<const float*>(transforms.raw_data());
  EMBER_DISPATCH_FLOAT(x.dtype(), "affine_transform", {
    const scalar_t* in = static_cast<const scalar_t*>(x.raw_data());
    scalar_t* out = static_cast<scalar_t*>(y.raw_data());
    const float fill = static_cast<float>(static_cast<scalar_t>(a.fill_value));
    parallel_for(n * h, grain_for(w * c * 8), [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const int64_t b = row / h, oy = row % h;
        const float* t = t_all + (shared ? 0 : b * 8);
        const scalar_t* image = in + b * h * w * c;
        for (int64_t ox = 0; ox < w; ++ox) {
          scalar_t* o = out + ((b * h + oy) * w + ox) * c;
          for (int64_t ch = 0; ch < c; ++ch) {
            auto read = [&](int64_t yy, int64_t xx) { return static_cast<float>(image[(yy * w + xx) * c + ch]); };
            o[ch] = static_cast<scalar_t>(
                image_math::affine_sample(t, oy, ox, h, w, a.fill_mode, a.interpolation, fill, read));
          }
        }
      }
    });
  });
}

}  // namespace

EMBER_REGISTER_KERNEL(affine_transform, CPU, affine_transform_cpu, DType::Float32, DType::Float64, DType::Float16,
                      DType::BFloat16);

}  // namespace ember
