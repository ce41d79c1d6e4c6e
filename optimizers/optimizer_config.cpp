// Optimizer configs: reading Keras's JSON into the shared options, and the base's get_config.
#include "optimizers/config_util.h"
#include "optimizers/optimizer.h"

namespace ember::optimizers {

using nlohmann::json;

OptimizerOptions base_options_from_config(const json& c, const std::string& cls,
                                          std::initializer_list<const char*> own_keys,
                                          const OptimizerOptions& defaults) {
  detail::check_optimizer_config_keys(c, cls,
                            {"name", "learning_rate", "weight_decay", "clipnorm", "clipvalue", "global_clipnorm",
                             "use_ema", "ema_momentum", "ema_overwrite_frequency", "loss_scale_factor",
                             "gradient_accumulation_steps"},
                            own_keys);
  OptimizerOptions o = defaults;
  if (c.contains("learning_rate") && c["learning_rate"].is_object())
    o.learning_rate = schedules::deserialize(c["learning_rate"]);
  else if (c.contains("learning_rate") && !c["learning_rate"].is_null())
    o.learning_rate = detail::config_number(c, "learning_rate", 0, cls);
  // A present key wins, null included (null unsets an optional).
  auto optional = [&](const char* key, std::optional<double>& field) {
    if (c.contains(key)) field = detail::config_optional(c, key, cls);
  };
  optional("weight_decay", o.weight_decay);
  optional("clipnorm", o.clipnorm);
  optional("clipvalue", o.clipvalue);
  optional("global_clipnorm", o.global_clipnorm);
  optional("loss_scale_factor", o.loss_scale_factor);
  if (c.contains("gradient_accumulation_steps"))
    o.gradient_accumulation_steps = detail::config_optional_int(c, "gradient_accumulation_steps", cls);
  if (c.contains("ema_overwrite_frequency"))
    o.ema_overwrite_frequency = detail::config_optional_int(c, "ema_overwrite_frequency", cls);
  o.use_ema = detail::config_bool(c, "use_ema", o.use_ema, cls);
  o.ema_momentum = detail::config_number(c, "ema_momentum", o.ema_momentum, cls);
  o.name = detail::config_string(c, "name", o.name, cls);
  return o;
}

json Optimizer::get_config() const {
  json lr = schedule_ ? schedules::serialize(*schedule_)
                      : json(static_cast<double>(learning_rate_.value().item<float>()));
  return {{"name", name_},
          {"learning_rate", lr},
          {"weight_decay", detail::optional_json(options_.weight_decay)},
          {"clipnorm", detail::optional_json(options_.clipnorm)},
          {"global_clipnorm", detail::optional_json(options_.global_clipnorm)},
          {"clipvalue", detail::optional_json(options_.clipvalue)},
          {"use_ema", options_.use_ema},
          {"ema_momentum", options_.ema_momentum},
          {"ema_overwrite_frequency", detail::optional_json(options_.ema_overwrite_frequency)},
          {"loss_scale_factor", detail::optional_json(options_.loss_scale_factor)},
          {"gradient_accumulation_steps", detail::optional_json(options_.gradient_accumulation_steps)}};
}

}  // namespace ember::optimizers
