#pragma once
// Keras 3's serialized form of a layer or model (keras/src/saving/serialization_lib.py).
#include <nlohmann/json.hpp>

#include "framework/model/layer.h"

namespace ember {

// Keras 3 serialize_keras_object of a layer or model: {"module", "class_name", "config",
// "registered_name", "build_config" (built layers whose Keras class has a build step),
// "compile_config" (models; {} when not compiled)}.
nlohmann::json serialize_keras_object(const Layer& layer);

namespace detail {
// The Keras layer classes that take their initial states as the keyword argument initial_state (Ember's take
// them as further inputs after the sequences): RNN, SimpleRNN, LSTM, GRU, Bidirectional.
bool keras_takes_initial_state(const std::string& class_name);
// The Keras layer classes called with their inputs as separate positional arguments (Ember's take them as one
// list): MultiHeadAttention(query, value[, key]).
bool keras_takes_positional_inputs(const std::string& class_name);
}  // namespace detail

}  // namespace ember
