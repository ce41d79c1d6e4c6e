#include "layers/random_crop.h"

#include "framework/core/config_reader.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/image.h"

namespace ember::layers {

RandomCrop::RandomCrop(int64_t height, int64_t width, RandomCropOptions o)
    : RandomImageLayer("random_crop", {o.name, o.dtype, o.trainable}, o.seed,
                       image_preprocessing::check_data_format(o.data_format, "RandomCrop")),
      height_(height),
      width_(width) {
  EMBER_CHECK(height > 0 && width > 0, InvalidArgument)
      << who() << ": height and width must be positive, got (" << height << ", " << width << ")";
}

Tensor RandomCrop::augment(const Tensor& images) {
  const int64_t h = images.shape()[1], w = images.shape()[2];
  if (h > height_ && w > width_) {
    // Keras: start = int(uniform((), 0, in - size + 1)), the height's draw first; the window is gathered at the
    // drawn start, so a traced function crops at a fresh position on every replay.
    const auto start = [&](int64_t room) {
      Tensor s = ops::cast(uniform(Shape{1}, 0, static_cast<double>(room + 1)), DType::Int32);
      return ops::minimum(s, Tensor::scalar_of(static_cast<double>(room), DType::Int32, s.device()));
    };
    const Tensor top = start(h - height_), left = start(w - width_);
    return image_preprocessing::take_window(image_preprocessing::take_window(images, 1, top, height_), 2, left,
                                            width_);
  }
  return ops::image::resize(images, height_, width_, {.crop_to_aspect_ratio = true});
}

Shape RandomCrop::compute_output_shape(const Shape& s) {
  image_preprocessing::check_image_shape(s, who());
  std::vector<int64_t> d(s.begin(), s.end());
  d[s.rank() - 3] = height_;
  d[s.rank() - 2] = width_;
  return Shape(d);
}

nlohmann::json RandomCrop::get_config() const {
  nlohmann::json c = random_base_config();
  c["height"] = height_;
  c["width"] = width_;
  return c;
}

LayerPtr RandomCrop::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string who = "RandomCrop '" + base.name + "'";
  RandomCropOptions o{.seed = seed_from_config(c, who),
                      .data_format = ::ember::detail::config_string(c, "data_format", "channels_last", who),
                      .name = base.name,
                      .dtype = base.dtype,
                      .trainable = base.trainable};
  return std::make_shared<RandomCrop>(::ember::detail::config_required_int(c, "height", who),
                                      ::ember::detail::config_required_int(c, "width", who), o);
}

EMBER_REGISTER_LAYER(RandomCrop);

}  // namespace ember::layers
