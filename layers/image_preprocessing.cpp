#include "layers/image_preprocessing.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "framework/core/strings.h"
#include "framework/ops/array.h"
#include "framework/ops/creation.h"
#include "framework/core/config_reader.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/image.h"

namespace ember::layers {

namespace {

std::string preprocessing_factor_text(const Factor& f) { return f.to_json().dump(); }

}  // namespace

nlohmann::json Factor::to_json() const {
  if (values.size() == 1) return values[0];
  return nlohmann::json(values);
}

Factor Factor::from_json(const nlohmann::json& j, const std::string& who, const char* key) {
  if (j.is_number()) return Factor(j.get<double>());
  if (j.is_array() && j.size() == 2 && j[0].is_number() && j[1].is_number())
    return Factor{j[0].get<double>(), j[1].get<double>()};
  throw make_error<InvalidArgument>(who, ": config \"", key, "\" must be a number or a list of two numbers, got ",
                                    j.dump());
}

namespace image_preprocessing {

std::pair<double, double> base_factor_range(const Factor& f, double lo, double hi, const std::string& who,
                                            const char* key) {
  const auto bad = [&] {
    return make_error<InvalidArgument>(who, ": `", key, "` must be a number (or a list of two numbers) in the range [",
                                       lo, ", ", hi, "], got ", preprocessing_factor_text(f));
  };
  if (f.values.size() == 2) {
    if (f.values[0] > hi || f.values[1] < lo) throw bad();
    return {std::min(f.values[0], f.values[1]), std::max(f.values[0], f.values[1])};
  }
  if (f.values.size() != 1 || !(f.values[0] >= lo && f.values[0] <= hi)) throw bad();
  const double a = std::abs(f.values[0]);
  return {std::max(-a, lo), a};
}

std::pair<double, double> symmetric_factor_range(const Factor& f, bool zoom, const std::string& who, const char* key) {
  const auto check = [&](double v) {
    EMBER_CHECK(v <= 1.0 && (zoom ? v > -1.0 : v >= -1.0), InvalidArgument)
        << who << ": `" << key << "` must be a number (or a list of two numbers) in the range "
        << (zoom ? "(-1, 1]" : "[-1, 1]") << ", got " << preprocessing_factor_text(f);
  };
  EMBER_CHECK(f.values.size() == 1 || f.values.size() == 2, InvalidArgument)
      << who << ": `" << key << "` must be a number or a list of two numbers, got " << preprocessing_factor_text(f);
  for (double v : f.values) check(v);
  if (f.values.size() == 2) return {std::min(f.values[0], f.values[1]), std::max(f.values[0], f.values[1])};
  const double a = std::abs(f.values[0]);
  return {-a, a};
}

std::string check_fill_mode(const std::string& fill_mode, const std::string& who) {
  EMBER_CHECK(fill_mode == "reflect" || fill_mode == "wrap" || fill_mode == "constant" || fill_mode == "nearest",
              InvalidArgument)
      << who << ": fill_mode must be one of \"reflect\", \"wrap\", \"constant\", \"nearest\", got \"" << fill_mode
      << "\"";
  return fill_mode;
}

std::string check_interpolation(const std::string& interpolation, const std::string& who) {
  EMBER_CHECK(interpolation == "nearest" || interpolation == "bilinear", InvalidArgument)
      << who << ": interpolation must be \"nearest\" or \"bilinear\", got \"" << interpolation << "\"";
  return interpolation;
}

std::string check_data_format(const std::string& data_format, const std::string& who) {
  const std::string f = data_format.empty() ? "channels_last" : ascii_lower(data_format);
  if (f == "channels_first")
    throw make_error<Unimplemented>(who, ": data_format \"channels_first\" is not implemented (Ember's images are "
                                         "channels_last, NHWC)");
  EMBER_CHECK(f == "channels_last", InvalidArgument)
      << who << ": data_format must be \"channels_last\" or \"channels_first\", got \"" << data_format << "\"";
  return f;
}

void check_image_shape(const Shape& s, const std::string& who) {
  EMBER_CHECK(s.rank() == 3 || s.rank() == 4, InvalidArgument)
      << who << ": expected an image (height, width, channels) or a batch of them (batch, height, width, channels), "
                "got shape "
      << s;
}

std::pair<double, double> value_range_from_config(const nlohmann::json& c, const std::string& who) {
  if (!c.contains("value_range")) return {0, 255};
  const nlohmann::json& v = c["value_range"];
  EMBER_CHECK(v.is_array() && v.size() == 2 && v[0].is_number() && v[1].is_number(), InvalidArgument)
      << who << ": config \"value_range\" must be a list of two numbers, got " << v.dump();
  return {v[0].get<double>(), v[1].get<double>()};
}

Tensor take_window(const Tensor& x, int64_t axis, const Tensor& begin, int64_t size) {
  Tensor idx = ops::range(0, static_cast<double>(size), 1, DType::Int32) + begin;
  return ops::gather(x, idx, {.axis = axis});
}

Tensor reverse(const Tensor& x, int64_t axis) {
  const int64_t n = x.shape()[axis];
  return ops::gather(x, ops::range(static_cast<double>(n - 1), -1, -1, DType::Int32), {.axis = axis});
}

}  // namespace image_preprocessing

RandomImageLayer::RandomImageLayer(const std::string& base_name, const LayerOptions& options,
                                   std::optional<uint64_t> seed, std::string data_format)
    : Layer(base_name, options), noise_(seed), data_format_(std::move(data_format)) {}

std::string RandomImageLayer::who() const { return class_name() + " '" + name() + "'"; }

Tensor RandomImageLayer::call(const Tensor& x, bool training) {
  image_preprocessing::check_image_shape(x.shape(), who());
  const Tensor images = x.dtype() == compute_dtype() ? x : ops::cast(x, compute_dtype());
  if (!training) return images;
  if (images.rank() == 4) return augment(images);
  return ops::squeeze(augment(ops::expand_dims(images, 0)), {0});
}

Tensor RandomImageLayer::uniform(const Shape& shape, double lo, double hi) {
  Tensor u = noise_.uniform(shape, DType::Float32);
  return lo == 0 && hi == 1 ? u : u * (hi - lo) + lo;
}

nlohmann::json RandomImageLayer::random_base_config() const {
  nlohmann::json c = base_config();
  c["data_format"] = data_format_;
  c["seed"] = seed_to_config(noise_.seed());
  return c;
}

RandomAffineLayer::RandomAffineLayer(const std::string& base_name, const LayerOptions& options,
                                     std::optional<uint64_t> seed, std::string data_format, AffineFillOptions fill)
    : RandomImageLayer(base_name, options, seed, std::move(data_format)), fill_(std::move(fill)) {}

void RandomAffineLayer::check_fill_options() const {
  image_preprocessing::check_fill_mode(fill_.fill_mode, who());
  image_preprocessing::check_interpolation(fill_.interpolation, who());
}

Tensor RandomAffineLayer::transform(const Tensor& images, const Tensor& transforms) const {
  return ops::image::affine_transform(
      images, transforms,
      {.interpolation = fill_.interpolation, .fill_mode = fill_.fill_mode, .fill_value = fill_.fill_value});
}

nlohmann::json RandomAffineLayer::affine_base_config() const {
  nlohmann::json c = random_base_config();
  c["fill_mode"] = fill_.fill_mode;
  c["interpolation"] = fill_.interpolation;
  c["fill_value"] = fill_.fill_value;
  return c;
}

AffineFillOptions RandomAffineLayer::fill_from_config(const nlohmann::json& c, const std::string& who) {
  return {.fill_mode = ::ember::detail::config_string(c, "fill_mode", "reflect", who),
          .interpolation = ::ember::detail::config_string(c, "interpolation", "bilinear", who),
          .fill_value = ::ember::detail::config_double(c, "fill_value", 0.0, who)};
}

}  // namespace ember::layers
