// Input preparation and config reading shared by the loss classes.
#include "losses/loss_utils.h"

#include <sstream>

#include "framework/core/error.h"
#include "framework/model/metrics/metrics_utils.h"

namespace ember::losses::detail {

using nlohmann::json;

void check_input(const std::string& who, const Tensor& t, const char* what) {
  EMBER_CHECK(t.defined(), InvalidArgument) << who << ": " << what << " is an undefined tensor";
  t.check_concrete((who + " (" + what + ")").c_str());
}

void check_same_shape(const std::string& who, const Shape& y_true, const Shape& y_pred, const char* why) {
  EMBER_CHECK(y_true == y_pred, InvalidArgument)
      << who << ": y_true has shape " << y_true << " but y_pred has shape " << y_pred << "; "
      << (why ? why : "they must be equal (a trailing dimension of 1 on either side is squeezed or added first)");
}

std::pair<Tensor, Tensor> prepare_same_shape(const std::string& who, const Tensor& y_true, const Tensor& y_pred) {
  check_input(who, y_true, "y_true");
  check_input(who, y_pred, "y_pred");
  auto [t, p] = metrics::squeeze_or_expand_to_same_rank(metrics::to_float32(y_true), metrics::to_float32(y_pred));
  if (t.shape() != p.shape()) check_same_shape(who, y_true.shape(), y_pred.shape());
  return {t, p};
}

std::string config_reduction(const json& config, const std::string& fallback, const std::string& who) {
  auto it = config.find("reduction");
  if (it == config.end()) return fallback;
  if (it->is_null()) return "none";  // Keras's reduction=None
  return config_string(config, "reduction", fallback, who);
}

BaseConfig read_base_config(const json& config, const std::string& class_name, const char* default_name,
                            std::initializer_list<const char*> extra) {
  EMBER_CHECK(config.is_object(), InvalidArgument)
      << class_name << ": config must be an object, got " << config.dump();
  for (const auto& item : config.items()) {
    const std::string& key = item.key();
    bool known = key == "name" || key == "reduction" || key == "dtype";
    for (const char* k : extra) known = known || key == k;
    if (!known) {
      std::ostringstream keys;
      keys << "name, reduction, dtype";
      for (const char* k : extra) keys << ", " << k;
      throw InvalidArgument(class_name + ": unknown config key \"" + key + "\" (known keys: " + keys.str() + ")");
    }
  }
  const std::string dtype = config_string(config, "dtype", "float32", class_name);
  EMBER_CHECK(dtype == "float32", InvalidArgument)
      << class_name << ": config \"dtype\" is \"" << dtype << "\"; Ember's losses compute in float32 only";
  return {config_string(config, "name", default_name, class_name), config_reduction(config, "sum_over_batch_size", class_name)};
}

}  // namespace ember::losses::detail
