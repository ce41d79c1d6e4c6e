#pragma once
// Reading Keras configs (metrics, losses and layers): a missing key, or null where Keras writes None, gives
// the fallback; a wrong type is an InvalidArgument naming who and the key.
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ember::detail {

// Throws InvalidArgument naming who and the key unless config is an object whose keys are all in allowed
// or more (a class's own keys after its base's).
void check_config_keys(const nlohmann::json& config, const std::string& who, std::initializer_list<const char*> allowed,
                       std::initializer_list<const char*> more = {});
std::string config_string(const nlohmann::json& config, const char* key, const std::string& fallback,
                          const std::string& who);
bool config_bool(const nlohmann::json& config, const char* key, bool fallback, const std::string& who);
double config_double(const nlohmann::json& config, const char* key, double fallback, const std::string& who);
int64_t config_int(const nlohmann::json& config, const char* key, int64_t fallback, const std::string& who);
std::optional<int64_t> config_optional_int(const nlohmann::json& config, const char* key, const std::string& who);
std::optional<double> config_optional_double(const nlohmann::json& config, const char* key, const std::string& who);
// A constructor argument without a default: missing or null is an InvalidArgument too.
int64_t config_required_int(const nlohmann::json& config, const char* key, const std::string& who);
double config_required_double(const nlohmann::json& config, const char* key, const std::string& who);
// An int or a list of ints (Keras writes an axis either way) as a list.
std::vector<int64_t> config_int_list(const nlohmann::json& config, const char* key, std::vector<int64_t> fallback,
                                     const std::string& who);

}  // namespace ember::detail
