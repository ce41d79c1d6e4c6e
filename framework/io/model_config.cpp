// Keras 3 serialized forms of layers and models, their legacy (.h5) form, and the model readers behind
// models::model_from_json / model_from_config (Keras: saving/serialization_lib.py,
// legacy/saving/legacy_h5_format.py).
#include "framework/io/model_config.h"

#include <set>

#include "framework/core/error.h"
#include "framework/model/model.h"

namespace ember {

using json = nlohmann::json;

namespace {

json mcfg_shape_json(const Shape& s) {
  json out = json::array();
  for (int64_t d : s) out.push_back(d < 0 ? json(nullptr) : json(d));
  return out;
}

// Keras classes that record no build shapes (Keras 3.15: get_build_config() is None after a call), so
// Keras leaves their build_config out.
bool mcfg_keras_has_build(const std::string& cls) {
  static const std::set<std::string> no_build = {"Activation", "AveragePooling2D",   "Dropout",    "GlobalAveragePooling2D",
                                                 "GlobalMaxPooling2D", "InputLayer", "MaxPooling2D", "ReLU",
                                                 "Reshape",    "Softmax"};
  return !no_build.count(cls);
}

bool mcfg_ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Keras 3 serializes the objects inside a layer config (initializers, regularizers, constraints) with
// their module and registered_name; layers give them as {"class_name", "config"}.
void mcfg_wrap_nested(json& config) {
  if (!config.is_object()) return;
  for (auto& [key, v] : config.items()) {
    if (!v.is_object() || !v.contains("class_name") || !v.contains("config") || v.contains("module")) continue;
    const char* module = mcfg_ends_with(key, "_initializer")   ? "keras.initializers"
                         : mcfg_ends_with(key, "_regularizer") ? "keras.regularizers"
                         : mcfg_ends_with(key, "_constraint")  ? "keras.constraints"
                                                               : nullptr;
    if (!module) continue;
    v = {{"module", module}, {"class_name", v["class_name"]}, {"config", v["config"]}, {"registered_name", nullptr}};
  }
}

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

json serialize_keras_object(const Layer& layer) {
  const std::string cls = layer.class_name();
  json config = layer.get_config();
  mcfg_wrap_nested(config);
  json out = {{"module", "keras.layers"}, {"class_name", cls}, {"config", config}, {"registered_name", nullptr}};
  if (auto model = dynamic_cast<const Model*>(&layer)) {
    // Keras 3: Sequential lives in "keras"; Functional is registered under its own name.
    if (cls == "Sequential") {
      out["module"] = "keras";
      if (model->is_graph_model()) out["build_config"] = {{"input_shape", mcfg_shape_json(model->inputs()[0].shape())}};
    } else {
      out["module"] = "keras.src.models.functional";
      out["registered_name"] = "Functional";
      out["build_config"] = {{"input_shape", nullptr}};  // what a functional model built from its inputs reports
    }
    out["compile_config"] = model->get_compile_config();
    return out;
  }
  if (layer.built() && mcfg_keras_has_build(cls)) {
    const std::vector<Shape>& shapes = layer.build_input_shapes();
    json shape;
    if (shapes.size() == 1) {
      shape = mcfg_shape_json(shapes[0]);
    } else {
      shape = json::array();
      for (const Shape& s : shapes) shape.push_back(mcfg_shape_json(s));
    }
    out["build_config"] = {{"input_shape", shape}};
  }
  return out;
}

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
