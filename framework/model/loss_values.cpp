// The registry of loss values that losses/ fills and the loss-based metrics read.
#include "framework/model/loss_values.h"

#include <map>
#include <mutex>

#include "framework/core/error.h"

namespace ember::detail {

namespace {
std::map<std::string, LossValuesFactory>& registry() {
  static std::map<std::string, LossValuesFactory> r;
  return r;
}
std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
}  // namespace

bool register_loss_values(const std::string& class_name, LossValuesFactory factory) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry()[class_name] = std::move(factory);
  return true;
}

LossValuesFn make_loss_values(const std::string& class_name, const nlohmann::json& config) {
  LossValuesFactory factory;
  {
    std::lock_guard<std::mutex> lock(registry_mutex());
    auto it = registry().find(class_name);
    if (it != registry().end()) factory = it->second;
  }
  EMBER_CHECK(factory, NotFound) << "loss values: no loss class \"" << class_name
                                 << "\" is registered (losses/ registers each loss it defines)";
  return factory(config);
}

}  // namespace ember::detail
