#include "optimizers/adamw.h"

#include "optimizers/registry.h"

namespace ember::optimizers {

AdamOptions AdamW::to_adam(const AdamWOptions& o) {
  EMBER_CHECK(o.weight_decay.has_value(), InvalidArgument)
      << "AdamW: Argument `weight_decay` must be a float. Received: weight_decay=None";
  AdamOptions a;
  set_base_options(a, base_options(o));
  a.beta_1 = o.beta_1;
  a.beta_2 = o.beta_2;
  a.epsilon = o.epsilon;
  a.amsgrad = o.amsgrad;
  return a;
}

AdamW::AdamW(AdamWOptions o) : Adam("AdamW", to_adam(o)) {}

AdamW AdamW::from_config(const nlohmann::json& c) {
  AdamOptions a = options_from_config(c, "AdamW");
  AdamWOptions o;
  set_base_options(o, base_options(a));
  // A config without the key means AdamW's default; an explicit null is Keras's error.
  if (!c.contains("weight_decay")) o.weight_decay = 0.004;
  o.beta_1 = a.beta_1;
  o.beta_2 = a.beta_2;
  o.epsilon = a.epsilon;
  o.amsgrad = a.amsgrad;
  return AdamW(std::move(o));
}

EMBER_REGISTER_OPTIMIZER(AdamW);

}  // namespace ember::optimizers
