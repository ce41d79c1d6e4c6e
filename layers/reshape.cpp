#include "layers/reshape.h"

#include <algorithm>

#include "framework/ops/array.h"
#include "layers/conv_utils.h"

namespace ember::layers {

using conv_utils::who;

Reshape::Reshape(Shape target_shape, ReshapeOptions options)
    : Layer("reshape", {options.name, options.dtype, options.trainable}), target_shape_(std::move(target_shape)) {
  const auto unknown = std::count(target_shape_.begin(), target_shape_.end(), int64_t{-1});
  const bool valid = std::all_of(target_shape_.begin(), target_shape_.end(), [](int64_t d) { return d > 0 || d == -1; });
  EMBER_CHECK(valid && unknown <= 1, InvalidArgument)
      << who(*this) << ": target_shape entries must be positive, with at most one -1 (inferred), got "
      << target_shape_;
}

Shape Reshape::compute_output_shape(const Shape& s) {
  EMBER_CHECK(s.rank() >= 1, InvalidArgument) << who(*this) << ": expected an input of rank >= 1, got a scalar";
  Shape out{s[0]};
  for (int64_t d : target_shape_) out.push_back(d);
  const bool input_known = std::all_of(s.begin() + 1, s.end(), [](int64_t d) { return d >= 0; });
  if (!input_known) return out;  // Keras leaves the -1 entry unknown too
  int64_t size = 1, known = 1;
  for (int64_t d = 1; d < s.rank(); ++d) size *= s[d];
  for (int64_t d : target_shape_)
    if (d > 0) known *= d;
  const auto it = std::find(target_shape_.begin(), target_shape_.end(), int64_t{-1});
  const bool ok = it == target_shape_.end() ? known == size : size % known == 0;
  EMBER_CHECK(ok, InvalidArgument) << who(*this) << ": the total size of the tensor must be unchanged: input shape "
                                   << s << " (" << size << " elements per sample) cannot be reshaped to target_shape "
                                   << target_shape_;
  if (it != target_shape_.end()) out[1 + (it - target_shape_.begin())] = size / known;
  return out;
}

Tensor Reshape::call(const Tensor& x, bool training) {
  return ops::reshape(x, compute_output_shape(x.shape()));
}

void Reshape::check_input_shape(const std::vector<Shape>& shapes) const {
  EMBER_CHECK(shapes.size() == 1 && shapes[0].rank() >= 1, InvalidArgument)
      << who(*this) << ": expected one input of rank >= 1, got "
      << (shapes.size() == 1 ? shapes[0].to_string() : std::to_string(shapes.size()) + " inputs");
}

nlohmann::json Reshape::get_config() const {
  nlohmann::json c = base_config();
  c["target_shape"] = target_shape_.dims();
  return c;
}

LayerPtr Reshape::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  EMBER_CHECK(c.contains("target_shape"), InvalidArgument)
      << "Reshape '" << base.name << "': config \"target_shape\" is required";
  const nlohmann::json& t = c["target_shape"];
  EMBER_CHECK(t.is_array(), InvalidArgument)
      << "Reshape '" << base.name << "': config key \"target_shape\" must be a list of ints, got " << t.dump();
  std::vector<int64_t> dims;
  for (const auto& d : t) {
    EMBER_CHECK(d.is_number_integer() || d.is_null(), InvalidArgument)
        << "Reshape '" << base.name << "': target_shape entries must be ints, got " << t.dump();
    dims.push_back(d.is_null() ? -1 : d.get<int64_t>());  // tf.keras may write None for the inferred entry
  }
  return std::make_shared<Reshape>(Shape(dims), ReshapeOptions{.name = base.name, .dtype = base.dtype,
                                                               .trainable = base.trainable});
}

EMBER_REGISTER_LAYER(Reshape);

}  // namespace ember::layers
