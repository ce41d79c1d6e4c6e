#pragma once
// The math of the image ops, shared by the CPU kernel and the CUDA kernel (C++17, no Ember headers but
// host_device.h, so nvcc can include it): TF's ImageProjectiveTransformV3 (what keras.ops.image.affine_transform
// runs), one output element at a time, in float as TF computes it.
#include <cmath>
#include <cstdint>

#include "framework/core/host_device.h"

namespace ember::image_math {

enum AffineFillMode : int { kFillReflect = 0, kFillWrap = 1, kFillConstant = 2, kFillNearest = 3 };
enum AffineInterpolation : int { kInterpolationNearest = 0, kInterpolationBilinear = 1 };

EMBER_HOST_DEVICE float clamp_coordinate(float v, int64_t len) {
  const float hi = static_cast<float>(len - 1);
  return v < 0.0f ? 0.0f : (v > hi ? hi : v);
}

// An input coordinate outside [0, len - 1] mapped back inside by the fill mode (TF's MapCoordinate); constant
// leaves it outside, to read the fill value.
EMBER_HOST_DEVICE float map_coordinate(float in, int64_t len, int mode) {
  if (mode == kFillConstant) return in;
  if (mode == kFillNearest) return clamp_coordinate(in, len);
  if (in < 0 || in > static_cast<float>(len - 1)) {
    if (len <= 1) return 0.0f;
    if (mode == kFillReflect) {
      const int64_t sz2 = 2 * len;
      if (in < 0) {
        if (in < static_cast<float>(sz2)) in = static_cast<float>(sz2) * static_cast<float>(static_cast<int64_t>(-in / sz2)) + in;
        in = in < static_cast<float>(-len) ? in + static_cast<float>(sz2) : -in - 1;
      } else {
        in -= static_cast<float>(sz2) * static_cast<float>(static_cast<int64_t>(in / sz2));
        if (in >= static_cast<float>(len)) in = static_cast<float>(sz2) - in - 1;
      }
    } else {  // wrap
      const int64_t sz = len - 1;
      if (in < 0) in += static_cast<float>(len) * static_cast<float>(static_cast<int64_t>(-in / sz) + 1);
      else in -= static_cast<float>(len) * static_cast<float>(static_cast<int64_t>(in / sz));
    }
  }
  return clamp_coordinate(in, len);
}

// Output pixel (oy, ox) of an h x w image under transform t = [a0 a1 a2 b0 b1 b2 c0 c1], which maps the output
// point (x, y) to the input point ((a0 x + a1 y + a2) / k, (b0 x + b1 y + b2) / k), k = c0 x + c1 y + 1.
// read(y, x) returns the input pixel as float; points outside the image read `fill`.
template <class Read>
EMBER_HOST_DEVICE float affine_sample(const float* t, int64_t oy, int64_t ox, int64_t h, int64_t w, int mode,
                                      int interpolation, float fill, const Read& read) {
  const float fx = static_cast<float>(ox), fy = static_cast<float>(oy);
  const float projection = t[6] * fx + t[7] * fy + 1.0f;
  if (projection == 0) return fill;
  const float x = map_coordinate((t[0] * fx + t[1] * fy + t[2]) / projection, w, mode);
  const float y = map_coordinate((t[3] * fx + t[4] * fy + t[5]) / projection, h, mode);
  auto at = [&](int64_t yy, int64_t xx) { return yy >= 0 && yy < h && xx >= 0 && xx < w ? read(yy, xx) : fill; };
  if (interpolation == kInterpolationNearest)
    return at(static_cast<int64_t>(roundf(y)), static_cast<int64_t>(roundf(x)));
  const float y0 = floorf(y), x0 = floorf(x), y1 = y0 + 1, x1 = x0 + 1;
  const auto iy0 = static_cast<int64_t>(y0), ix0 = static_cast<int64_t>(x0);
  const auto iy1 = static_cast<int64_t>(y1), ix1 = static_cast<int64_t>(x1);
  const float top = (x1 - x) * at(iy0, ix0) + (x - x0) * at(iy0, ix1);
  const float bottom = (x1 - x) * at(iy1, ix0) + (x - x0) * at(iy1, ix1);
  return (y1 - y) * top + (y - y0) * bottom;
}

}  // namespace ember::image_math
