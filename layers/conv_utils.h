#pragma once
// Argument handling shared by the convolution, pooling and padding layers (Keras: utils/argument_validation.py
// and ops/operation_utils.py): int-or-pair sizes, padding and data_format names, TF's output lengths.
#include <array>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "framework/core/config_reader.h"
#include "framework/model/layer.h"

namespace ember::layers {

// A 2-D size (kernel_size, strides, dilation_rate, pool_size): one int for both axes, or {h, w}.
struct Size2 {
  int64_t h, w;
  Size2(int64_t v) : h(v), w(v) {}  // NOLINT: implicit, so `Conv2D(32, 3)` reads as in Keras
  Size2(int64_t h, int64_t w) : h(h), w(w) {}
  bool operator==(const Size2&) const = default;
  std::array<int64_t, 2> array() const { return {h, w}; }
  nlohmann::json to_json() const { return nlohmann::json::array({h, w}); }
};
std::ostream& operator<<(std::ostream& os, const Size2& s);

// A 3-D size (Conv3D's kernel_size, strides, dilation_rate): one int for all three axes, or {d, h, w}.
struct Size3 {
  int64_t d, h, w;
  Size3(int64_t v) : d(v), h(v), w(v) {}  // NOLINT: implicit, so `Conv3D(8, 3)` reads as in Keras
  Size3(int64_t d, int64_t h, int64_t w) : d(d), h(h), w(w) {}
  bool operator==(const Size3&) const = default;
  nlohmann::json to_json() const { return nlohmann::json::array({d, h, w}); }
};
std::ostream& operator<<(std::ostream& os, const Size3& s);

namespace conv_utils {

// "Conv2D 'conv2d'": how errors name a layer.
std::string who(const Layer& layer);
// An int or a list of two ints from a config (Keras writes lists; hand-written configs may use an int).
Size2 size2_from_json(const nlohmann::json& j, const std::string& who, const char* arg);
// Throws InvalidArgument unless both entries are >= min.
void check_size2(const Size2& s, int64_t min, const std::string& who, const char* arg);
// Lower-cased "valid" or "same" (Keras's standardize_padding), or "causal" where allow_causal (Conv1D), else
// InvalidArgument.
std::string standardize_padding(const std::string& padding, const std::string& who, bool allow_causal = false);
// A 1-D size (Conv1D's kernel_size, strides, dilation_rate; the 1-D pools' pool_size): an int or a list of one
// int, as Keras writes it.
int64_t size1_from_json(const nlohmann::json& j, const std::string& who, const char* arg);
// Throws InvalidArgument unless v >= min.
void check_size1(int64_t v, int64_t min, const std::string& who, const char* arg);
// An int or a list of three ints from a config.
Size3 size3_from_json(const nlohmann::json& j, const std::string& who, const char* arg);
// Throws InvalidArgument unless all three entries are >= min.
void check_size3(const Size3& s, int64_t min, const std::string& who, const char* arg);
// Only "channels_last" (or "", Keras's None = the default image_data_format) is supported: NHWC is Ember's
// layout. Returns "channels_last".
std::string standardize_data_format(const std::string& data_format, const std::string& who);
// The data_format of a config: a string, null or absent.
std::string data_format_from_config(const nlohmann::json& c);
// Rejects a config key Ember does not implement (constraints, activity regularizers) unless null/absent, so
// a Keras model using one fails loudly instead of training differently.
void reject_unsupported(const nlohmann::json& c, const char* key, const std::string& who);
// Throws InvalidArgument unless s has rank 4 (NHWC).
void check_rank4(const Shape& s, const std::string& who);
// Throws InvalidArgument unless s has rank 3 (batch, steps, channels).
void check_rank3(const Shape& s, const std::string& who);
// Output length along one spatial axis under TF's VALID/SAME rules (-1 stays -1); may be <= 0 for inputs
// smaller than the window, which callers reject.
int64_t output_length(int64_t in, int64_t kernel, int64_t stride, int64_t dilation, const std::string& padding);
// (batch, out_h, out_w, channels) of a window of `kernel` sliding over the NHWC shape `in`. A known output
// length below min_length is InvalidArgument naming the layer (Keras: convolutions need >= 1; TF pools
// accept 0).
Shape windowed_output_shape(const Shape& in, int64_t channels, const Size2& kernel, const Size2& strides,
                            const Size2& dilation, const std::string& padding, int64_t min_length,
                            const std::string& who);
// (batch, out_steps, channels) of a window sliding over the (batch, steps, channels) shape `in`; "causal"
// gives the length "same" does (Conv1D pads (kernel - 1) * dilation steps on the left). Checks as above.
Shape windowed_output_shape_1d(const Shape& in, int64_t channels, int64_t kernel, int64_t stride, int64_t dilation,
                               const std::string& padding, int64_t min_length, const std::string& who);

// Config keys of Keras's BaseConv, shared by Conv1D/2D/3D, Conv2DTranspose, SeparableConv2D and
// DepthwiseConv2D. The layers' Options structs stay separate aggregates (designated initializers), so these work
// on any of them through the member names they share: strides, padding, data_format, dilation_rate,
// activation, use_bias, name, dtype, trainable, plus the weights listed in ConvWeightKeys.

// A size as Keras writes it: a list of 1, 2 or 3 ints.
inline nlohmann::json size_to_json(int64_t v) { return nlohmann::json::array({v}); }
inline nlohmann::json size_to_json(const Size2& s) { return s.to_json(); }
inline nlohmann::json size_to_json(const Size3& s) { return s.to_json(); }

// size1_from_json, size2_from_json or size3_from_json, by the type of the option being read.
template <class S>
S size_from_json(const nlohmann::json& j, const std::string& who, const char* arg) {
  if constexpr (std::is_same_v<S, int64_t>) return size1_from_json(j, who, arg);
  else if constexpr (std::is_same_v<S, Size2>) return size2_from_json(j, who, arg);
  else return size3_from_json(j, who, arg);
}

// One weight's config keys: "<prefix>_initializer" and "<prefix>_regularizer" (read into/written from the
// Options members named here) and "<prefix>_constraint" (always null: Ember has no constraints).
template <class Options>
struct ConvWeightKeys {
  const char* prefix;
  Initializer Options::*initializer;
  Regularizer Options::*regularizer;
};

// The kernel_* and bias_* keys of Conv1D/2D/3D and Conv2DTranspose.
template <class Options>
constexpr std::array<ConvWeightKeys<Options>, 2> kernel_and_bias_keys() {
  return {{{"kernel", &Options::kernel_initializer, &Options::kernel_regularizer},
           {"bias", &Options::bias_initializer, &Options::bias_regularizer}}};
}

// Writes the shared keys of `o` into c (a layer's base_config()): strides, padding, data_format,
// dilation_rate, activation (empty as "linear"), use_bias, each weight's initializer and regularizer, and the
// null activity_regularizer and constraints.
template <class Options, std::size_t N>
void write_conv_config(nlohmann::json& c, const Options& o, const std::array<ConvWeightKeys<Options>, N>& weights) {
  c["strides"] = size_to_json(o.strides);
  c["padding"] = o.padding;
  c["data_format"] = o.data_format;
  c["dilation_rate"] = size_to_json(o.dilation_rate);
  c["activation"] = o.activation.empty() ? "linear" : o.activation;
  c["use_bias"] = o.use_bias;
  c["activity_regularizer"] = nullptr;
  for (const auto& k : weights) {
    const std::string prefix = k.prefix;
    c[prefix + "_initializer"] = (o.*k.initializer).to_json();
    c[prefix + "_regularizer"] = (o.*k.regularizer).to_json();
    c[prefix + "_constraint"] = nullptr;
  }
}

// Reads the keys write_conv_config writes into Options defaults, with name/dtype/trainable from `base`
// (Layer::options_from_config); an activity regularizer or a constraint that is not null is InvalidArgument
// naming `who`, as is a malformed size.
template <class Options, std::size_t N>
Options read_conv_config(const nlohmann::json& c, const LayerOptions& base, const std::string& who,
                         const std::array<ConvWeightKeys<Options>, N>& weights) {
  using ::ember::detail::config_bool;
  using ::ember::detail::config_string;
  reject_unsupported(c, "activity_regularizer", who);
  for (const auto& k : weights) reject_unsupported(c, (std::string(k.prefix) + "_constraint").c_str(), who);
  Options o;
  using Strides = decltype(o.strides);
  using Dilation = decltype(o.dilation_rate);
  if (c.contains("strides")) o.strides = size_from_json<Strides>(c["strides"], who, "strides");
  o.padding = config_string(c, "padding", "valid", who);
  o.data_format = data_format_from_config(c);
  if (c.contains("dilation_rate")) o.dilation_rate = size_from_json<Dilation>(c["dilation_rate"], who, "dilation_rate");
  o.activation = config_string(c, "activation", o.activation, who);
  if (o.activation == "linear") o.activation.clear();
  o.use_bias = config_bool(c, "use_bias", true, who);
  for (const auto& k : weights) {
    const std::string key = std::string(k.prefix) + "_initializer";
    if (c.contains(key)) o.*k.initializer = Initializer::from_json(c[key]);
  }
  for (const auto& k : weights) {
    const std::string key = std::string(k.prefix) + "_regularizer";
    if (c.contains(key)) o.*k.regularizer = Regularizer::from_json(c[key]);
  }
  o.name = base.name;
  o.dtype = base.dtype;
  o.trainable = base.trainable;
  return o;
}

}  // namespace conv_utils

}  // namespace ember::layers
