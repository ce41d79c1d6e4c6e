#include "layers/conv_utils.h"

#include "framework/core/config_reader.h"
#include "framework/core/strings.h"

namespace ember::layers {

std::ostream& operator<<(std::ostream& os, const Size2& s) { return os << "(" << s.h << ", " << s.w << ")"; }
std::ostream& operator<<(std::ostream& os, const Size3& s) {
  return os << "(" << s.d << ", " << s.h << ", " << s.w << ")";
}

namespace conv_utils {

std::string who(const Layer& layer) { return layer.class_name() + " '" + layer.name() + "'"; }

Size2 size2_from_json(const nlohmann::json& j, const std::string& who, const char* arg) {
  if (j.is_number_integer()) return Size2(j.get<int64_t>());
  EMBER_CHECK(j.is_array() && j.size() == 2 && j[0].is_number_integer() && j[1].is_number_integer(), InvalidArgument)
      << who << ": config key \"" << arg << "\" must be an int or a list of 2 ints, got " << j.dump();
  return Size2(j[0].get<int64_t>(), j[1].get<int64_t>());
}

void check_size2(const Size2& s, int64_t min, const std::string& who, const char* arg) {
  EMBER_CHECK(s.h >= min && s.w >= min, InvalidArgument)
      << who << ": " << arg << " must be a pair of integers >= " << min << ", got " << s;
}

std::string standardize_padding(const std::string& padding, const std::string& who, bool allow_causal) {
  const std::string low = ascii_lower(padding);
  EMBER_CHECK(low == "valid" || low == "same" || (allow_causal && low == "causal"), InvalidArgument)
      << who << ": padding must be \"valid\"" << (allow_causal ? ", \"same\" or \"causal\"" : " or \"same\"")
      << ", got \"" << padding << "\"";
  return low;
}

int64_t size1_from_json(const nlohmann::json& j, const std::string& who, const char* arg) {
  if (j.is_number_integer()) return j.get<int64_t>();
  EMBER_CHECK(j.is_array() && j.size() == 1 && j[0].is_number_integer(), InvalidArgument)
      << who << ": config key \"" << arg << "\" must be an int or a list of 1 int, got " << j.dump();
  return j[0].get<int64_t>();
}

Size3 size3_from_json(const nlohmann::json& j, const std::string& who, const char* arg) {
  if (j.is_number_integer()) return Size3(j.get<int64_t>());
  EMBER_CHECK(j.is_array() && j.size() == 3 && j[0].is_number_integer() && j[1].is_number_integer() &&
                  j[2].is_number_integer(),
              InvalidArgument)
      << who << ": config key \"" << arg << "\" must be an int or a list of 3 ints, got " << j.dump();
  return Size3(j[0].get<int64_t>(), j[1].get<int64_t>(), j[2].get<int64_t>());
}

void check_size3(const Size3& s, int64_t min, const std::string& who, const char* arg) {
  EMBER_CHECK(s.d >= min && s.h >= min && s.w >= min, InvalidArgument)
      << who << ": " << arg << " must be three integers >= " << min << ", got " << s;
}

void check_size1(int64_t v, int64_t min, const std::string& who, const char* arg) {
  EMBER_CHECK(v >= min, InvalidArgument) << who << ": " << arg << " must be an integer >= " << min << ", got " << v;
}

std::string standardize_data_format(const std::string& data_format, const std::string& who) {
  if (data_format.empty() || data_format == "channels_last") return "channels_last";
  EMBER_CHECK(data_format != "channels_first", InvalidArgument)
      << who << ": data_format \"channels_first\" is not supported; Ember's image layout is channels_last (NHWC)";
  throw make_error<InvalidArgument>(who, ": data_format must be \"channels_last\", got \"", data_format, "\"");
}

std::string data_format_from_config(const nlohmann::json& c) {
  const std::string who = "Layer '" + ::ember::detail::config_string(c, "name", "", "Layer") + "'";
  return ::ember::detail::config_string(c, "data_format", "", who);
}

void reject_unsupported(const nlohmann::json& c, const char* key, const std::string& who) {
  EMBER_CHECK(!c.contains(key) || c[key].is_null(), InvalidArgument)
      << who << ": config key \"" << key << "\" is not supported by Ember (expected null), got " << c[key].dump();
}

void check_rank4(const Shape& s, const std::string& who) {
  EMBER_CHECK(s.rank() == 4, InvalidArgument)
      << who << ": expected a rank-4 input (batch, height, width, channels), got shape " << s;
}

void check_rank3(const Shape& s, const std::string& who) {
  EMBER_CHECK(s.rank() == 3, InvalidArgument)
      << who << ": expected a rank-3 input (batch, steps, channels), got shape " << s;
}

int64_t output_length(int64_t in, int64_t kernel, int64_t stride, int64_t dilation, const std::string& padding) {
  if (in < 0) return -1;
  if (padding == "same") return (in + stride - 1) / stride;
  // TF's VALID rule with C++'s truncating division, as ops::conv2d computes it.
  const int64_t effective = (kernel - 1) * dilation + 1;
  return (in - effective + stride) / stride;
}

Shape windowed_output_shape(const Shape& in, int64_t channels, const Size2& kernel, const Size2& strides,
                            const Size2& dilation, const std::string& padding, int64_t min_length,
                            const std::string& who) {
  check_rank4(in, who);
  const int64_t oh = output_length(in[1], kernel.h, strides.h, dilation.h, padding);
  const int64_t ow = output_length(in[2], kernel.w, strides.w, dilation.w, padding);
  EMBER_CHECK((in[1] < 0 || oh >= min_length) && (in[2] < 0 || ow >= min_length), InvalidArgument)
      << who << ": the computed output size would be (" << oh << ", " << ow << ") for input shape " << in
      << ", window " << kernel << ", strides " << strides << ", dilation_rate " << dilation << ", padding \""
      << padding << "\"; the input is too small";
  return Shape{in[0], oh, ow, channels};
}

Shape windowed_output_shape_1d(const Shape& in, int64_t channels, int64_t kernel, int64_t stride, int64_t dilation,
                               const std::string& padding, int64_t min_length, const std::string& who) {
  check_rank3(in, who);
  const int64_t out = output_length(in[1], kernel, stride, dilation, padding == "causal" ? "same" : padding);
  EMBER_CHECK(in[1] < 0 || out >= min_length, InvalidArgument)
      << who << ": the computed output length would be " << out << " for input shape " << in << ", window "
      << kernel << ", strides " << stride << ", dilation_rate " << dilation << ", padding \"" << padding
      << "\"; the input is too short";
  return Shape{in[0], out, channels};
}

}  // namespace conv_utils

}  // namespace ember::layers
