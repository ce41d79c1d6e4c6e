#pragma once
// Reading Keras configs (JSON) into options structs: typed getters that name the class and key in
// their errors, and the key check that rejects arguments Keras would not recognise.
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "framework/core/config_reader.h"
#include "framework/core/error.h"

namespace ember::optimizers::detail {

using nlohmann::json;

// ::ember::detail::check_config_keys for "<cls>.from_config" (Keras: "Argument(s) not recognized"), after
// dropping the keys that Keras itself accepts and ignores (tf-keras leftovers).
inline void check_optimizer_config_keys(const json& config, const std::string& cls,
                                        std::initializer_list<const char*> known,
                                        std::initializer_list<const char*> more = {}) {
  json kept = config;
  if (kept.is_object())
    for (const char* leftover : {"decay", "jit_compile", "is_legacy_optimizer"}) kept.erase(leftover);
  ::ember::detail::check_config_keys(kept, cls + ".from_config", known, more);
}

inline double config_number(const json& c, const char* key, double fallback, const std::string& cls) {
  if (!c.contains(key) || c[key].is_null()) return fallback;
  EMBER_CHECK(c[key].is_number(), InvalidArgument)
      << cls << ".from_config: '" << key << "' must be a number, got " << c[key].dump();
  return c[key].get<double>();
}

// An argument without a default in Keras's constructor: missing or null is an error there (TypeError).
inline double config_required_number(const json& c, const char* key, const std::string& cls) {
  EMBER_CHECK(c.contains(key) && !c[key].is_null(), InvalidArgument)
      << cls << ".from_config: missing required argument '" << key << "'";
  return config_number(c, key, 0, cls);
}

inline std::optional<double> config_optional(const json& c, const char* key, const std::string& cls) {
  if (!c.contains(key) || c[key].is_null()) return std::nullopt;
  return config_number(c, key, 0, cls);
}

// An integer option; a float must be whole (Keras configs may hold 10.0 for 10).
inline int64_t config_int(const json& c, const char* key, int64_t fallback, const std::string& cls) {
  if (!c.contains(key) || c[key].is_null()) return fallback;
  double v = config_number(c, key, 0, cls);
  EMBER_CHECK(std::floor(v) == v, InvalidArgument)
      << cls << ".from_config: '" << key << "' must be a whole number, got " << c[key].dump();
  return static_cast<int64_t>(v);
}

inline int64_t config_required_int(const json& c, const char* key, const std::string& cls) {
  config_required_number(c, key, cls);
  return config_int(c, key, 0, cls);
}

inline std::optional<int64_t> config_optional_int(const json& c, const char* key, const std::string& cls) {
  if (!c.contains(key) || c[key].is_null()) return std::nullopt;
  return config_int(c, key, 0, cls);
}

inline bool config_bool(const json& c, const char* key, bool fallback, const std::string& cls) {
  if (!c.contains(key) || c[key].is_null()) return fallback;
  EMBER_CHECK(c[key].is_boolean(), InvalidArgument)
      << cls << ".from_config: '" << key << "' must be a boolean, got " << c[key].dump();
  return c[key].get<bool>();
}

inline std::string config_string(const json& c, const char* key, const std::string& fallback, const std::string& cls) {
  if (!c.contains(key) || c[key].is_null()) return fallback;
  EMBER_CHECK(c[key].is_string(), InvalidArgument)
      << cls << ".from_config: '" << key << "' must be a string, got " << c[key].dump();
  return c[key].get<std::string>();
}

template <class T>
json optional_json(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

}  // namespace ember::optimizers::detail
