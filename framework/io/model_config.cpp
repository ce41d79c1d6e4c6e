// Keras 3 serialized forms of layers and models, their legacy (.h5) form, and the model readers behind
// models::model_from_json / model_from_config (Keras: saving/serialization_lib.py,
// legacy/saving/legacy_h5_format.py).
#include "framework/io/model_config.h"

#include <set>

#include "framework/core/error.h"
#include "framework/model/keras_object.h"
#include "framework/model/model.h"

namespace ember {

using json = nlohmann::json;

namespace {

// Keras 3's legacy serialization of a model config: layer wrappers lose module, registered_name,
// build_config and compile_config (nested models' layers too); everything inside a layer's own config
// (dtype policies, initializers) stays as Keras 3 writes it.
void mcfg_to_legacy(json& config) {
  if (!config.is_object() || !config.contains("layers") || !config["layers"].is_array()) return;
  for (json& entry : config["layers"]) {
    if (!entry.is_object()) continue;
    for (const char* k : {"module", "registered_name", "build_config", "compile_config"}) entry.erase(k);
    if (entry.contains("config")) mcfg_to_legacy(entry["config"]);
  }
}

}  // namespace

namespace io {


json serialize_model(const Model& model) {
  EMBER_CHECK(model.is_graph_model() || model.class_name() == "Sequential", Unimplemented)
      << "serialize_model: model '" << model.name() << "' (" << model.class_name()
      << ") is a subclassed model, which has no config (its architecture is C++ code); build it as a functional or "
         "Sequential model, or save only its weights";
  return serialize_keras_object(model);
}

std::shared_ptr<Model> deserialize_model(const json& j, bool compile) {
  EMBER_CHECK(j.is_object() && j.contains("class_name") && j["class_name"].is_string() && j.contains("config"),
              InvalidArgument)
      << "deserialize_model: expected a serialized model {\"class_name\": \"Sequential\"|\"Functional\", \"config\": {...}}, "
         "got "
      << j.dump().substr(0, 200);
  const std::string cls = j["class_name"].get<std::string>();
  LayerPtr layer = deserialize_layer(j);  // unknown classes: InvalidArgument naming the supported ones
  auto model = std::dynamic_pointer_cast<Model>(layer);
  EMBER_CHECK(model != nullptr, InvalidArgument)
      << "deserialize_model: class \"" << cls << "\" is a layer, not a model (expected Sequential, Functional or Model)";
  if (compile && j.contains("compile_config") && j["compile_config"].is_object() && !j["compile_config"].empty()) {
    try {
      model->compile_from_config(j["compile_config"]);
    } catch (const json::exception& e) {
      throw InvalidArgument(std::string("deserialize_model: malformed compile_config (") + e.what() +
                            "): " + j["compile_config"].dump().substr(0, 300));
    }
  }
  return model;
}

json legacy_model_config(const Model& model) {
  json config = serialize_model(model)["config"];
  mcfg_to_legacy(config);
  return {{"class_name", model.class_name()}, {"config", config}};
}

}  // namespace io

namespace models {

std::shared_ptr<Model> model_from_config(const json& config) { return io::deserialize_model(config); }

std::shared_ptr<Model> model_from_json(const std::string& text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw InvalidArgument(std::string("model_from_json: the text is not valid JSON: ") + e.what());
  }
  return io::deserialize_model(j);
}

}  // namespace models

}  // namespace ember
