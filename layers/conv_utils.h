#pragma once
// Argument handling shared by the convolution, pooling and padding layers (Keras: utils/argument_validation.py
// and ops/operation_utils.py): int-or-pair sizes, padding and data_format names, TF's output lengths.
#include <array>
#include <cstdint>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

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

}  // namespace conv_utils

}  // namespace ember::layers
