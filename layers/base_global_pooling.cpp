#include "layers/base_global_pooling.h"

#include "framework/core/config_reader.h"
#include "layers/conv_utils.h"

namespace ember::layers {

using ::ember::detail::config_bool;

using conv_utils::who;

namespace {

// check_rank3 or check_rank4, by the number of spatial axes.
template <int SpatialDims>
void check_global_pooling_rank(const Shape& s, const std::string& who) {
  if constexpr (SpatialDims == 1) conv_utils::check_rank3(s, who);
  else conv_utils::check_rank4(s, who);
}

}  // namespace

template <int SpatialDims>
GlobalPooling<SpatialDims>::GlobalPooling(const std::string& base_name, GlobalPoolingOptions options)
    : Layer(base_name, {options.name, options.dtype, options.trainable}), options_(std::move(options)) {}

template <int SpatialDims>
void GlobalPooling<SpatialDims>::validate() {
  options_.data_format = conv_utils::standardize_data_format(options_.data_format, who(*this));
}

template <int SpatialDims>
Tensor GlobalPooling<SpatialDims>::call(const Tensor& x, bool training) {
  check_global_pooling_rank<SpatialDims>(x.shape(), who(*this));
  return reduce(x);
}

template <int SpatialDims>
Shape GlobalPooling<SpatialDims>::compute_output_shape(const Shape& input_shape) {
  check_global_pooling_rank<SpatialDims>(input_shape, who(*this));
  const int64_t channels = input_shape[SpatialDims + 1];
  if (!options_.keepdims) return Shape{input_shape[0], channels};
  if constexpr (SpatialDims == 1) return Shape{input_shape[0], 1, channels};
  else return Shape{input_shape[0], 1, 1, channels};
}

template <int SpatialDims>
void GlobalPooling<SpatialDims>::check_input_shape(const std::vector<Shape>& shapes) const {
  constexpr const char* layout =
      SpatialDims == 1 ? "rank-3 input (batch, steps, channels)" : "rank-4 input (batch, height, width, channels)";
  EMBER_CHECK(shapes.size() == 1 && shapes[0].rank() == SpatialDims + 2, InvalidArgument)
      << who(*this) << ": expected one " << layout << ", got "
      << (shapes.size() == 1 ? shapes[0].to_string() : std::to_string(shapes.size()) + " inputs");
}

template <int SpatialDims>
nlohmann::json GlobalPooling<SpatialDims>::get_config() const {
  nlohmann::json c = base_config();
  c["data_format"] = options_.data_format;
  c["keepdims"] = options_.keepdims;
  return c;
}

template <int SpatialDims>
GlobalPoolingOptions GlobalPooling<SpatialDims>::parse_config(const nlohmann::json& c, const std::string& class_name) {
  LayerOptions base = options_from_config(c);
  const std::string who = class_name + " '" + base.name + "'";
  GlobalPoolingOptions o;
  o.data_format = conv_utils::data_format_from_config(c);
  o.keepdims = config_bool(c, "keepdims", false, who);
  o.name = base.name;
  o.dtype = base.dtype;
  o.trainable = base.trainable;
  return o;
}

template class GlobalPooling<1>;
template class GlobalPooling<2>;

}  // namespace ember::layers
