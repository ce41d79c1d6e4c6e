#pragma once
// Where committed fixtures live: tests/fixtures/, found from this header's own path (tests run from
// their build directory, so a relative path would not do).
#include <filesystem>
#include <string>

namespace ember::testing {

// tests/fixtures/<relative>, e.g. fixture_path("checkpoints/mlp.keras").
inline std::filesystem::path fixture_path(const std::string& relative) {
  return std::filesystem::path(__FILE__).parent_path().parent_path() / "fixtures" / relative;
}

}  // namespace ember::testing
