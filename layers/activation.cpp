#include "layers/activation.h"

namespace ember::layers {

Activation::Activation(const std::string& activation, LayerOptions options)
    : Layer("activation", options), activation_(activation.empty() ? "linear" : activation) {
  supports_masking_ = true;  // passes its input's mask on (Keras)
  try {
    fn_ = activations::get(activation_);  // an unknown name fails here, not at the first call
  } catch (const InvalidArgument& e) {
    throw InvalidArgument("Activation '" + name() + "': " + e.what());
  }
}

nlohmann::json Activation::get_config() const {
  nlohmann::json c = base_config();
  c["activation"] = activation_;
  return c;
}

LayerPtr Activation::from_config(const nlohmann::json& c) {
  EMBER_CHECK(c.is_object() && c.contains("activation"), InvalidArgument)
      << "Activation: config \"activation\" is required, got " << c.dump();
  const nlohmann::json& a = c["activation"];
  // Keras 3 serialises built-in activations as their name; a registered-function dict carries it in "config".
  EMBER_CHECK(a.is_string() || (a.is_object() && a.contains("config") && a["config"].is_string()), InvalidArgument)
      << "Activation: config \"activation\" must be a name or {\"config\": name}, got " << a.dump();
  std::string name = a.is_string() ? a.get<std::string>() : a["config"].get<std::string>();
  return std::make_shared<Activation>(name, options_from_config(c));
}

EMBER_REGISTER_LAYER(Activation);

}  // namespace ember::layers
