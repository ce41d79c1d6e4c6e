#include "optimizers/registry.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "framework/core/error.h"
#include "framework/core/strings.h"

namespace ember::optimizers {

namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::string, std::pair<std::string, OptimizerFactory>> by_lower_name;  // -> (class name, factory)
};
Registry& optimizer_registry() {
  static Registry r;
  return r;
}

OptimizerFactory find_optimizer(const std::string& name, const char* caller) {
  Registry& r = optimizer_registry();
  std::lock_guard lock(r.mutex);
  auto it = r.by_lower_name.find(ascii_lower(name));
  if (it != r.by_lower_name.end()) return it->second.second;
  std::string known;
  for (const auto& [k, v] : r.by_lower_name) known += (known.empty() ? "" : ", ") + k;
  throw make_error<InvalidArgument>(caller, ": Could not interpret optimizer identifier: '", name,
                                    "'; expected one of: ", known);
}

}  // namespace

void register_optimizer(const std::string& class_name, OptimizerFactory factory) {
  Registry& r = optimizer_registry();
  std::lock_guard lock(r.mutex);
  r.by_lower_name[ascii_lower(class_name)] = {class_name, std::move(factory)};
}

std::vector<std::string> registered_optimizers() {
  Registry& r = optimizer_registry();
  std::lock_guard lock(r.mutex);
  std::vector<std::string> out;
  for (const auto& [k, v] : r.by_lower_name) out.push_back(v.first);
  std::sort(out.begin(), out.end());
  return out;
}

OptimizerPtr get(const std::string& identifier) {
  return find_optimizer(identifier, "optimizers::get")(nlohmann::json::object());
}

nlohmann::json serialize(const Optimizer& optimizer) {
  return {{"module", "keras.optimizers"},
          {"class_name", optimizer.class_name()},
          {"config", optimizer.get_config()},
          {"registered_name", nullptr}};
}

OptimizerPtr deserialize(const nlohmann::json& j) {
  EMBER_CHECK(j.is_object() && j.contains("class_name") && j["class_name"].is_string(), InvalidArgument)
      << "optimizers::deserialize: expected {\"class_name\", \"config\"}, got " << j.dump();
  const OptimizerFactory factory = find_optimizer(j["class_name"].get<std::string>(), "optimizers::deserialize");
  return factory(j.value("config", nlohmann::json::object()));
}

}  // namespace ember::optimizers
