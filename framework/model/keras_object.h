#pragma once
// Keras 3's serialized form of a layer or model (keras/src/saving/serialization_lib.py).
#include <nlohmann/json.hpp>

#include "framework/model/layer.h"

namespace ember {

// Keras 3 serialize_keras_object of a layer or model: {"module", "class_name", "config",
// "registered_name", "build_config" (built layers whose Keras class has a build step),
// "compile_config" (models; {} when not compiled)}.
nlohmann::json serialize_keras_object(const Layer& layer);

}  // namespace ember
