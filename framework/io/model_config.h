#pragma once
// Model config JSON in Keras's two dialects (Keras: saving/serialization_lib.py, models/functional.py,
// legacy/saving/saving_utils.py): the Keras 3 serialized form that model.to_json() and a .keras
// config.json hold, the legacy form of an .h5 file's model_config, and the compile configs (Keras 3
// "compile_config", legacy "training_config").
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "framework/model/keras_object.h"
#include "framework/model/layer.h"

namespace ember {
class Model;
}

namespace ember::io {

// Keras 3 serialize_keras_object of a layer or model (framework/model/keras_object.h, which model configs
// use too).
using ::ember::serialize_keras_object;
// The Keras 3 form of a Sequential or functional model (what a .keras config.json holds); a subclassed
// model is Unimplemented.
nlohmann::json serialize_model(const Model& model);
// A model from {"class_name", "config", ...} in either dialect and either wrapper (class_name
// "Sequential", "Functional" or "Model"); compiled when compile is set and a non-empty
// "compile_config" is present. Not a model: InvalidArgument naming the class.
std::shared_ptr<Model> deserialize_model(const nlohmann::json& j, bool compile = true);

// What a legacy .h5 file's root attr model_config holds (Keras 3.15's legacy_h5_format):
// {"class_name", "config"} with layers as {"class_name", "config"[, "name", "inbound_nodes"]}.
nlohmann::json legacy_model_config(const Model& model);
// What a legacy .h5 file's root attr training_config holds for a compiled model: loss, loss_weights,
// metrics, weighted_metrics, run_eagerly, steps_per_execution, jit_compile and
// "optimizer_config": {"class_name", "config"}. FailedPrecondition when the model is not compiled.
nlohmann::json legacy_training_config(const Model& model);
// Compiles model from a training_config written by Keras 3 or tf-keras 2.x (per-output metric lists,
// MeanMetricWrapper metrics, "Custom>Adam" optimizer class names and their tf-keras-only keys).
void compile_from_training_config(Model& model, const nlohmann::json& training_config);

}  // namespace ember::io
