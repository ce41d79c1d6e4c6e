#include "applications/imagenet_utils.h"

#include <filesystem>
#include <vector>

#include "framework/core/error.h"
#include "framework/ops/array.h"
#include "framework/ops/elementwise.h"

namespace ember::applications::imagenet_utils {

namespace {

// A (1, ..., 1, 3) tensor of per-channel constants rounded to x's dtype (as Keras converts them), to broadcast over channels-last images.
Tensor channel_constants(const std::vector<double>& values, const Tensor& x) {
  std::vector<int64_t> dims(static_cast<size_t>(x.shape().rank()), 1);
  dims.back() = 3;
  return ops::cast(Tensor::from_vector<double>(values, Shape(dims), x.device()), x.dtype());
}

}  // namespace

Tensor preprocess_input(const Tensor& input, const std::string& mode) {
  EMBER_CHECK(mode == "caffe" || mode == "tf" || mode == "torch", InvalidArgument)
      << "preprocess_input: expected mode to be one of 'caffe', 'tf' or 'torch', got '" << mode << "'";
  const Shape& shape = input.shape();
  EMBER_CHECK(shape.rank() >= 1, InvalidArgument) << "preprocess_input: expected images, got a scalar";
  Tensor x = is_floating(input.dtype()) ? input : ops::cast(input, DType::Float32);
  if (mode == "tf") return x / 127.5 - 1.0;
  EMBER_CHECK(shape[shape.rank() - 1] == 3, InvalidArgument)
      << "preprocess_input: mode '" << mode << "' expects 3 channels last, got shape " << shape;
  if (mode == "torch") {
    x = x / 255.0;
    return (x + channel_constants({-0.485, -0.456, -0.406}, x)) / channel_constants({0.229, 0.224, 0.225}, x);
  }
  // caffe: RGB to BGR, then minus the BGR means (added negated, as Keras does, which is the same in IEEE).
  x = ops::gather(x, Tensor::from_vector<int64_t>({2, 1, 0}, {3}, x.device()), {.axis = shape.rank() - 1});
  return x + channel_constants({-103.939, -116.779, -123.68}, x);
}

Shape obtain_input_shape(const std::string& who, const Shape& input_shape, int64_t default_size, int64_t min_size,
                         bool require_flatten) {
  Shape shape = input_shape;
  if (shape.rank() == 0) {
    shape = require_flatten ? Shape{default_size, default_size, 3} : Shape{-1, -1, 3};
  } else {
    EMBER_CHECK(shape.rank() == 3, InvalidArgument)
        << who << ": input_shape must be (height, width, channels), got " << shape;
    for (int64_t i = 0; i < 3; ++i)
      EMBER_CHECK(shape[i] > 0 || (shape[i] == -1 && i < 2), InvalidArgument)
          << who << ": input_shape " << shape
          << " has a size that is neither positive nor -1 (unknown; only height and width may be)";
    EMBER_CHECK((shape[0] == -1 || shape[0] >= min_size) && (shape[1] == -1 || shape[1] >= min_size), InvalidArgument)
        << who << ": input size must be at least " << min_size << "x" << min_size << ", got input_shape " << shape;
  }
  EMBER_CHECK(!require_flatten || (shape[0] > 0 && shape[1] > 0), InvalidArgument)
      << who << ": with include_top, input_shape must be static (no -1), got " << shape;
  return shape;
}

std::pair<std::pair<int64_t, int64_t>, std::pair<int64_t, int64_t>> correct_pad(const Shape& input_shape,
                                                                                int64_t kernel_size) {
  EMBER_CHECK(input_shape.rank() == 4, InvalidArgument)
      << "correct_pad: expected a (batch, height, width, channels) shape, got " << input_shape;
  // An unknown size pads as an even one would (Keras decides both from the height; here each by its own).
  const int64_t adjust_h = input_shape[1] < 0 ? 1 : 1 - input_shape[1] % 2;
  const int64_t adjust_w = input_shape[2] < 0 ? 1 : 1 - input_shape[2] % 2;
  const int64_t correct = kernel_size / 2;
  return {{correct - adjust_h, correct}, {correct - adjust_w, correct}};
}

void validate_arguments(const std::string& who, bool include_top, const std::string& weights, const std::string& pooling,
                        int64_t classes, const std::string& classifier_activation) {
  EMBER_CHECK(weights != "imagenet", Unimplemented)
      << who << ": weights='imagenet' needs a download, which Ember does not do; pass weights='' (fresh weights) "
      << "or the path of a weights file (.weights.h5, or the legacy .h5 Keras downloads)";
  std::error_code ec;
  EMBER_CHECK(weights.empty() || std::filesystem::is_regular_file(weights, ec), InvalidArgument)
      << who << ": the weights argument should be '' (fresh weights) or the path of a weights file to load, got '"
      << weights << "' (no such file)";
  EMBER_CHECK(pooling.empty() || pooling == "avg" || pooling == "max", InvalidArgument)
      << who << ": pooling must be '' (none), 'avg' or 'max', got '" << pooling << "'";
  EMBER_CHECK(!include_top || classes > 0, InvalidArgument)
      << who << ": classes must be positive, got " << classes;
  EMBER_CHECK(!include_top || weights.empty() || classifier_activation == "softmax" || classifier_activation.empty() ||
                  classifier_activation == "linear",
              InvalidArgument)
      << who << ": only classifier_activation 'softmax' or '' (logits) may be used with loaded weights, got '"
      << classifier_activation << "'";
}

void load_weights_argument(Model& model, const std::string& weights) {
  if (!weights.empty()) model.load_weights(weights);
}

}  // namespace ember::applications::imagenet_utils
