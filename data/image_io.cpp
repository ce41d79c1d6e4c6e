// resize_image's interpolation loops.
#include "data/image_io.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace ember::data {

Tensor resize_image(const Tensor& image, std::array<int64_t, 2> size, const std::string& interpolation,
                    bool crop_to_aspect_ratio) {
  EMBER_CHECK(image.rank() == 3, InvalidArgument)
      << "resize_image: expected an image [height, width, channels], got shape " << image.shape();
  EMBER_CHECK(size[0] >= 1 && size[1] >= 1, InvalidArgument)
      << "resize_image: size must be two positive integers, got {" << size[0] << ", " << size[1] << "}";
  EMBER_CHECK(interpolation == "bilinear" || interpolation == "nearest", InvalidArgument)
      << "resize_image: interpolation must be \"bilinear\" or \"nearest\", got \"" << interpolation << "\"";
  EMBER_CHECK(image.dtype() == DType::UInt8 || image.dtype() == DType::Float32, InvalidArgument)
      << "resize_image: expected a uint8 or float32 image, got " << image.dtype();
  const Tensor host = image.to(Device::cpu());
  const int64_t in_h = host.shape()[0], in_w = host.shape()[1], c = host.shape()[2];
  std::vector<float> pixels;
  if (host.dtype() == DType::UInt8) {
    const uint8_t* p = host.data<uint8_t>();
    pixels.assign(p, p + host.num_elements());
  }
  const float* in = host.dtype() == DType::UInt8 ? pixels.data() : host.data<float>();
  // smart_resize's window, computed in float32 as Keras does on a tf.data graph's dynamic shape.
  int64_t h = in_h, w = in_w, top = 0, left = 0;
  if (crop_to_aspect_ratio) {
    h = std::max<int64_t>(std::min<int64_t>(in_h, static_cast<int64_t>(static_cast<float>(in_w * size[0]) / size[1])), 1);
    w = std::max<int64_t>(std::min<int64_t>(in_w, static_cast<int64_t>(static_cast<float>(in_h * size[1]) / size[0])), 1);
    top = static_cast<int64_t>(static_cast<float>(in_h - h) / 2);
    left = static_cast<int64_t>(static_cast<float>(in_w - w) / 2);
  }
  auto at = [&](int64_t y, int64_t x, int64_t k) { return in[((top + y) * in_w + left + x) * c + k]; };
  Tensor out = Tensor::empty({size[0], size[1], c}, DType::Float32, Device::cpu());
  float* o = out.data<float>();
  const float sy = static_cast<float>(h) / static_cast<float>(size[0]);
  const float sx = static_cast<float>(w) / static_cast<float>(size[1]);
  if (interpolation == "nearest") {
    // TF's resize_nearest_neighbor with half_pixel_centers: floor((i + 0.5) * scale), clamped.
    for (int64_t i = 0; i < size[0]; ++i) {
      const int64_t y = std::min<int64_t>(static_cast<int64_t>(std::floor((i + 0.5f) * sy)), h - 1);
      for (int64_t j = 0; j < size[1]; ++j) {
        const int64_t x = std::min<int64_t>(static_cast<int64_t>(std::floor((j + 0.5f) * sx)), w - 1);
        for (int64_t k = 0; k < c; ++k) *o++ = at(y, x, k);
      }
    }
    return out;
  }
  // TF's resize_bilinear with half_pixel_centers: source (i + 0.5) * scale - 0.5, the two neighbours
  // clamped to the image, interpolated along x and then y.
  struct Weight {
    int64_t lo, hi;
    float frac;
  };
  auto weights = [](int64_t out_n, int64_t in_n, float scale) {
    std::vector<Weight> ws(static_cast<size_t>(out_n));
    for (int64_t i = 0; i < out_n; ++i) {
      const float s = (static_cast<float>(i) + 0.5f) * scale - 0.5f;
      const float f = std::floor(s);
      ws[i] = {std::max<int64_t>(static_cast<int64_t>(f), 0), std::min<int64_t>(static_cast<int64_t>(std::ceil(s)), in_n - 1),
               s - f};
    }
    return ws;
  };
  const std::vector<Weight> wy = weights(size[0], h, sy), wx = weights(size[1], w, sx);
  for (const Weight& y : wy)
    for (const Weight& x : wx)
      for (int64_t k = 0; k < c; ++k) {
        const float tl = at(y.lo, x.lo, k), tr = at(y.lo, x.hi, k), bl = at(y.hi, x.lo, k), br = at(y.hi, x.hi, k);
        const float t = tl + (tr - tl) * x.frac, b = bl + (br - bl) * x.frac;
        *o++ = t + (b - t) * y.frac;
      }
  return out;
}

}  // namespace ember::data
