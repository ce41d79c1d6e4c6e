#include "layers/activation.h"

namespace ember::layers {

Activation::Activation(const std::string& activation, LayerOptions options)
    : Layer("activation", options), activation_(activation.empty() ? "linear" : activation) {
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
  const nlohmann::json& a = c.at("activation");
  // Keras 3 serialises built-in activations as their name; a registered-function dict carries it in "config".
  std::string name = a.is_string() ? a.get<std::string>() : a.at("config").get<std::string>();
  return std::make_shared<Activation>(name, options_from_config(c));
}

EMBER_REGISTER_LAYER(Activation);

}  // namespace ember::layers
