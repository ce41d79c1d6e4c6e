// Keras 3's serialize_keras_object of a layer or model (keras/src/saving/serialization_lib.py): what
// get_config of a Sequential or functional model lists for each layer, and what framework/io writes.
#include "framework/model/keras_object.h"

#include <set>

#include "framework/model/model.h"

namespace ember {

using json = nlohmann::json;

namespace {

json kobj_shape_json(const Shape& s) {
  json out = json::array();
  for (int64_t d : s) out.push_back(d < 0 ? json(nullptr) : json(d));
  return out;
}

// Keras classes that record no build shapes (Keras 3.15: get_build_config() is None after a call), so
// Keras leaves their build_config out.
bool kobj_keras_has_build(const std::string& cls) {
  static const std::set<std::string> no_build = {"Activation", "AveragePooling2D",   "Dropout",    "GlobalAveragePooling2D",
                                                 "GlobalMaxPooling2D", "InputLayer", "MaxPooling2D", "ReLU",
                                                 "Reshape",    "Softmax"};
  return !no_build.count(cls);
}

bool kobj_ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Keras 3 serializes the objects inside a layer config (initializers, regularizers, constraints) with
// their module and registered_name; layers give them as {"class_name", "config"}.
void kobj_wrap_nested(json& config) {
  if (!config.is_object()) return;
  for (auto& [key, v] : config.items()) {
    if (!v.is_object() || !v.contains("class_name") || !v.contains("config") || v.contains("module")) continue;
    const char* module = kobj_ends_with(key, "_initializer")   ? "keras.initializers"
                         : kobj_ends_with(key, "_regularizer") ? "keras.regularizers"
                         : kobj_ends_with(key, "_constraint")  ? "keras.constraints"
                                                               : nullptr;
    if (!module) continue;
    v = {{"module", module}, {"class_name", v["class_name"]}, {"config", v["config"]}, {"registered_name", nullptr}};
  }
}

}  // namespace

namespace detail {
bool keras_takes_initial_state(const std::string& cls) {
  return cls == "RNN" || cls == "SimpleRNN" || cls == "LSTM" || cls == "GRU" || cls == "Bidirectional";
}
bool keras_takes_positional_inputs(const std::string& cls) { return cls == "MultiHeadAttention"; }
}  // namespace detail

json serialize_keras_object(const Layer& layer) {
  const std::string cls = layer.class_name();
  json config = layer.get_config();
  kobj_wrap_nested(config);
  json out = {{"module", "keras.layers"}, {"class_name", cls}, {"config", config}, {"registered_name", nullptr}};
  if (auto model = dynamic_cast<const Model*>(&layer)) {
    // Keras 3: Sequential lives in "keras"; Functional is registered under its own name.
    if (cls == "Sequential") {
      out["module"] = "keras";
      if (model->is_graph_model()) out["build_config"] = {{"input_shape", kobj_shape_json(model->inputs()[0].shape())}};
    } else {
      out["module"] = "keras.src.models.functional";
      out["registered_name"] = "Functional";
      out["build_config"] = {{"input_shape", nullptr}};  // what a functional model built from its inputs reports
    }
    out["compile_config"] = model->get_compile_config();
    return out;
  }
  if (layer.built() && kobj_keras_has_build(cls)) {
    const std::vector<Shape>& shapes = layer.build_input_shapes();
    json shape;
    if (shapes.size() > 1 && detail::keras_takes_initial_state(cls)) {
      // An RNN built with initial states: Keras records build(sequences_shape, initial_state_shape) by name.
      json states = json::array();
      for (size_t i = 1; i < shapes.size(); ++i) states.push_back(kobj_shape_json(shapes[i]));
      out["build_config"] = {{"shapes_dict", {{"sequences_shape", kobj_shape_json(shapes[0])}, {"initial_state_shape", states}}}};
      return out;
    }
    if (detail::keras_takes_positional_inputs(cls)) {
      // Keras records build(query_shape, value_shape, key_shape) by name.
      json named = {{"query_shape", kobj_shape_json(shapes.at(0))}, {"value_shape", kobj_shape_json(shapes.at(1))}};
      if (shapes.size() > 2) named["key_shape"] = kobj_shape_json(shapes[2]);
      out["build_config"] = {{"shapes_dict", named}};
      return out;
    }
    if (shapes.size() == 1) {
      shape = kobj_shape_json(shapes[0]);
    } else {
      shape = json::array();
      for (const Shape& s : shapes) shape.push_back(kobj_shape_json(s));
    }
    out["build_config"] = {{"input_shape", shape}};
  }
  return out;
}

}  // namespace ember
