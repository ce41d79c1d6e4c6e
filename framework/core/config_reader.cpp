// Keras config readers shared by metrics, losses and layers.
#include "framework/core/config_reader.h"

#include <algorithm>
#include <sstream>

#include "framework/core/error.h"

namespace ember::detail {

using nlohmann::json;

void check_config_keys(const json& config, const std::string& who, std::initializer_list<const char*> allowed,
                       std::initializer_list<const char*> more) {
  EMBER_CHECK(config.is_object(), InvalidArgument) << who << ": config must be an object, got " << config.dump();
  for (const auto& item : config.items()) {
    bool known = false;
    for (const char* k : allowed) known = known || item.key() == k;
    for (const char* k : more) known = known || item.key() == k;
    if (!known) {
      std::ostringstream keys;
      for (const char* k : allowed) keys << (keys.tellp() > 0 ? ", " : "") << k;
      for (const char* k : more) keys << (keys.tellp() > 0 ? ", " : "") << k;
      throw InvalidArgument(who + ": unknown config key \"" + item.key() + "\" (known keys: " + keys.str() + ")");
    }
  }
}

namespace {
const json* find_key(const json& config, const char* key) {
  auto it = config.find(key);
  return it == config.end() || it->is_null() ? nullptr : &*it;
}
}  // namespace

std::string config_string(const json& config, const char* key, const std::string& fallback, const std::string& who) {
  const json* v = find_key(config, key);
  if (!v) return fallback;
  EMBER_CHECK(v->is_string(), InvalidArgument)
      << who << ": config \"" << key << "\" must be a string, got " << v->dump();
  return v->get<std::string>();
}

bool config_bool(const json& config, const char* key, bool fallback, const std::string& who) {
  const json* v = find_key(config, key);
  if (!v) return fallback;
  EMBER_CHECK(v->is_boolean(), InvalidArgument)
      << who << ": config \"" << key << "\" must be true or false, got " << v->dump();
  return v->get<bool>();
}

double config_double(const json& config, const char* key, double fallback, const std::string& who) {
  const json* v = find_key(config, key);
  if (!v) return fallback;
  EMBER_CHECK(v->is_number(), InvalidArgument)
      << who << ": config \"" << key << "\" must be a number, got " << v->dump();
  return v->get<double>();
}

int64_t config_int(const json& config, const char* key, int64_t fallback, const std::string& who) {
  const json* v = find_key(config, key);
  if (!v) return fallback;
  EMBER_CHECK(v->is_number_integer(), InvalidArgument)
      << who << ": config \"" << key << "\" must be an integer, got " << v->dump();
  return v->get<int64_t>();
}

std::optional<int64_t> config_optional_int(const json& config, const char* key, const std::string& who) {
  const json* v = find_key(config, key);
  if (!v) return std::nullopt;
  return config_int(config, key, 0, who);
}

std::optional<double> config_optional_double(const json& config, const char* key, const std::string& who) {
  const json* v = find_key(config, key);
  if (!v) return std::nullopt;
  return config_double(config, key, 0, who);
}

int64_t config_required_int(const json& config, const char* key, const std::string& who) {
  EMBER_CHECK(find_key(config, key), InvalidArgument) << who << ": config \"" << key << "\" is required";
  return config_int(config, key, 0, who);
}

double config_required_double(const json& config, const char* key, const std::string& who) {
  EMBER_CHECK(find_key(config, key), InvalidArgument) << who << ": config \"" << key << "\" is required";
  return config_double(config, key, 0, who);
}

std::vector<int64_t> config_int_list(const json& config, const char* key, std::vector<int64_t> fallback,
                                     const std::string& who) {
  const json* v = find_key(config, key);
  if (!v) return fallback;
  if (v->is_number_integer()) return {v->get<int64_t>()};
  EMBER_CHECK(v->is_array() && std::all_of(v->begin(), v->end(), [](const json& e) { return e.is_number_integer(); }),
              InvalidArgument)
      << who << ": config \"" << key << "\" must be an integer or a list of integers, got " << v->dump();
  return v->get<std::vector<int64_t>>();
}

}  // namespace ember::detail
