#pragma once
// What Keras's image preprocessing layers share (keras/src/layers/preprocessing/image_preprocessing/
// base_image_preprocessing_layer.py): channels_last images given one (H, W, C) or a batch (N, H, W, C), cast
// to the compute dtype; the `factor` arguments; fill modes and interpolations; and, for the random layers,
// the training-only draws keyed by `seed` (identity at inference).
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/model/layer.h"
#include "layers/seeded_noise.h"

namespace ember::layers {

// A Keras factor argument: one number f (a range around zero) or a pair {lower, upper}.
struct Factor {
  Factor(double f) : values{f} {}  // NOLINT(google-explicit-constructor): Keras takes a bare number
  Factor(std::initializer_list<double> v) : values(v) {}
  std::vector<double> values;

  // The number, or the list, as Keras writes what it was given.
  nlohmann::json to_json() const;
  static Factor from_json(const nlohmann::json& j, const std::string& who, const char* key);
};

namespace image_preprocessing {

// BaseImagePreprocessingLayer._set_factor: a pair, sorted, must overlap [bound_lo, bound_hi]; one number f
// within the bounds gives [max(-|f|, bound_lo), |f|].
std::pair<double, double> base_factor_range(const Factor& f, double bound_lo, double bound_hi, const std::string& who,
                                            const char* key = "factor");
// RandomZoom/RandomTranslation._set_factor: each number in [-1, 1] (zoom: above -1), one number f gives [-|f|, |f|].
std::pair<double, double> symmetric_factor_range(const Factor& f, bool zoom, const std::string& who, const char* key);

// "reflect", "wrap", "constant" or "nearest"; else InvalidArgument naming who.
std::string check_fill_mode(const std::string& fill_mode, const std::string& who);
// "nearest" or "bilinear"; else InvalidArgument naming who.
std::string check_interpolation(const std::string& interpolation, const std::string& who);
// "channels_last" (the default, also for ""); "channels_first" is Unimplemented.
std::string check_data_format(const std::string& data_format, const std::string& who);
// A rank-3 (one image) or rank-4 (a batch) shape, else InvalidArgument naming who.
void check_image_shape(const Shape& s, const std::string& who);
// A pair of numbers (value_range), else InvalidArgument.
std::pair<double, double> value_range_from_config(const nlohmann::json& config, const std::string& who);

// x gathered along axis at indices [begin, begin + size) where begin is an int32 tensor of shape (1,) (a draw:
// a traced function replays it), so the gradient is gather's.
Tensor take_window(const Tensor& x, int64_t axis, const Tensor& begin, int64_t size);
// x reversed along axis.
Tensor reverse(const Tensor& x, int64_t axis);

}  // namespace image_preprocessing

// Base of the random augmentation layers: call() casts to the compute dtype, returns that at inference, and
// while training runs augment() on a batch (a single image as a batch of one).
class RandomImageLayer : public Layer {
 public:
  RandomImageLayer(const std::string& base_name, const LayerOptions& options, std::optional<uint64_t> seed,
                   std::string data_format);

  Tensor call(const Tensor& x, bool training) override;
  Shape compute_output_shape(const Shape& input_shape) override { return input_shape; }
  DType compute_output_dtype(const std::vector<DType>& /*input_dtypes*/) const override { return compute_dtype(); }
  // Keras gives these layers no input spec: an image or a batch, of any size.
  void check_input_shape(const std::vector<Shape>& /*input_shapes*/) const override {}

  const std::optional<uint64_t>& seed() const { return noise_.seed(); }
  const std::string& data_format() const { return data_format_; }

 protected:
  // The training transform of a batch (N, H, W, C) in the compute dtype.
  virtual Tensor augment(const Tensor& images) = 0;
  // Uniform draws in [lo, hi) of shape, float32.
  Tensor uniform(const Shape& shape, double lo, double hi);
  // The base config plus "data_format" and "seed".
  nlohmann::json random_base_config() const;
  std::string who() const;

 private:
  SeededNoise noise_;
  std::string data_format_;
};

// What RandomRotation, RandomZoom and RandomTranslation share: their fill options and the affine transform
// (keras.ops.image.affine_transform) of a batch by one (N, 8) transform per image.
struct AffineFillOptions {
  std::string fill_mode = "reflect";       // "reflect", "wrap", "constant" or "nearest"
  std::string interpolation = "bilinear";  // "bilinear" or "nearest"
  double fill_value = 0.0;                 // read outside the image with fill_mode "constant"
};

class RandomAffineLayer : public RandomImageLayer {
 public:
  RandomAffineLayer(const std::string& base_name, const LayerOptions& options, std::optional<uint64_t> seed,
                    std::string data_format, AffineFillOptions fill);
  const AffineFillOptions& fill_options() const { return fill_; }

 protected:
  // The subclass's constructor calls it (its class name is known only there): InvalidArgument for a fill mode or
  // interpolation Keras does not have.
  void check_fill_options() const;
  Tensor transform(const Tensor& images, const Tensor& transforms) const;
  // random_base_config plus "fill_mode", "interpolation" and "fill_value".
  nlohmann::json affine_base_config() const;
  static AffineFillOptions fill_from_config(const nlohmann::json& config, const std::string& who);

 private:
  AffineFillOptions fill_;
};

}  // namespace ember::layers
