#pragma once
// Reading Keras configs (metrics, losses and layers): a missing key, or null where Keras writes None, gives
// the fallback; a wrong type is an InvalidArgument naming who and the key.
#include <initializer_list>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace ember::detail {

// Throws InvalidArgument unless config is an object whose keys are all in allowed.
void check_config_keys(const nlohmann::json& config, std::initializer_list<const char*> allowed, const std::string& who);
std::string config_string(const nlohmann::json& config, const char* key, const std::string& fallback,
                          const std::string& who);
bool config_bool(const nlohmann::json& config, const char* key, bool fallback, const std::string& who);
double config_double(const nlohmann::json& config, const char* key, double fallback, const std::string& who);
int64_t config_int(const nlohmann::json& config, const char* key, int64_t fallback, const std::string& who);
std::optional<int64_t> config_optional_int(const nlohmann::json& config, const char* key, const std::string& who);

}  // namespace ember::detail
