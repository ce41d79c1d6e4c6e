#pragma once
// Internal helpers of the loss classes: input preparation with Keras's rank rule, shape checks, and
// reading Keras configs.
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "framework/core/config_reader.h"
#include "framework/core/tensor.h"
#include "framework/ops/reduce.h"
#include "losses/loss.h"

namespace ember::losses::detail {

using ::ember::detail::config_bool;
using ::ember::detail::config_double;
using ::ember::detail::config_int;
using ::ember::detail::config_optional_int;
using ::ember::detail::config_string;

// Throws InvalidArgument naming who when t is undefined or symbolic.
void check_input(const std::string& who, const Tensor& t, const char* what);

// Keras's LossFunctionWrapper.call preamble for the elementwise losses: y_pred and y_true as float32,
// squeezed/expanded to the same rank; their shapes must then be equal (Keras would broadcast; a
// mismatch here is almost always a label-format mistake, so it is an InvalidArgument naming who and
// both original shapes).
std::pair<Tensor, Tensor> prepare_same_shape(const std::string& who, const Tensor& y_true, const Tensor& y_pred);

// Throws InvalidArgument naming who and both shapes unless a and b have the same shape.
void check_same_shape(const std::string& who, const Shape& y_true, const Shape& y_pred, const char* why = nullptr);

// Keras's convert_binary_labels_to_hinge (Hinge, SquaredHinge): float32 labels all in {0, 1} become
// {-1, 1}; any other labels are kept. Decided on the device (a scalar condition broadcast by where),
// so there is no host round trip.
Tensor convert_binary_labels_to_hinge(const Tensor& y_true);

// TF's sigmoid_cross_entropy_with_logits, elementwise on float32 labels z and logits x (the where-based
// form, so the gradient at x == 0 is sigmoid(0) - z as in TF).
Tensor sigmoid_cross_entropy_with_logits(const Tensor& z, const Tensor& x);

// Keras's TF-backend binary_crossentropy on probabilities, elementwise: p clipped to [1e-7, 1 - 1e-7].
Tensor binary_crossentropy_from_probabilities(const Tensor& z, const Tensor& p);

// The elementwise binary crossentropy of labels z against logits (the stable form above) or probabilities x.
Tensor binary_crossentropy(const Tensor& z, const Tensor& x, bool from_logits);

// InvalidArgument naming who unless label_smoothing is in [0, 1].
void check_label_smoothing(const char* who, double label_smoothing);

// Label smoothing as Keras applies it (the constants rounded to float32 as TF does); s = 0 returns the labels.
// Binary: z * (1 - s) + 0.5 * s. Categorical: t * (1 - s) + s / num_classes, that division in float32 and
// num_classes from the last axis.
Tensor smooth_binary_labels(const Tensor& z, double s);
Tensor smooth_categorical_labels(const Tensor& t, double s);

// Keras's categorical probabilities: p renormalised along axis, then clipped to [1e-7, 1 - 1e-7].
Tensor clipped_class_probabilities(const Tensor& p, int64_t axis);

// axis as the reduction ops take it, after checking that every axis (all of them when unset) is in
// [-rank, rank) and that none is listed twice (TF's reduce_sum refuses both): InvalidArgument naming who.
ops::Axes checked_axes(const std::string& who, const AxisOption& axis, int64_t rank);
// Keras's axis=None | int | tuple in a config: null, an integer, or a list.
nlohmann::json axis_option_to_json(const AxisOption& axis);
AxisOption config_axis_option(const nlohmann::json& config, const char* key, const std::string& who);

// Keras's reduction key: a string, or null meaning "none".
std::string config_reduction(const nlohmann::json& config, const std::string& fallback, const std::string& who);

// The keys every loss config has, read after checking that config holds only those and `extra`:
// "name" (default_name when absent), "reduction", and "dtype" (only null or "float32": losses compute
// in float32).
struct BaseConfig {
  std::string name = {};
  std::string reduction;
};
BaseConfig read_base_config(const nlohmann::json& config, const std::string& class_name, const char* default_name,
                            std::initializer_list<const char*> extra = {});

// options.name, or the Keras default name when empty.
inline std::string name_or(const std::string& name, const char* default_name) {
  return name.empty() ? std::string(default_name) : name;
}

}  // namespace ember::losses::detail
