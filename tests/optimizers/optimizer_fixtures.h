#pragma once
// Loading the Keras golden files of tests/fixtures/optimizers (written by make_optimizer_fixtures.py)
// and comparing values against them.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/json_fixtures.h"
#include "tests/support/tensor_testing.h"

namespace ember::testing {

inline nlohmann::json load_optimizer_fixture(const std::string& file, const std::string& dir = "optimizers") {
  return load_json_fixture(dir + "/" + file);
}

inline std::vector<double> json_values(const nlohmann::json& j) { return j.get<std::vector<double>>(); }

// Keras's bar for the goldens: float32 results within 1e-6 relative (a 1e-30 floor for exact zeros).
inline void check_close(const std::vector<double>& got, const std::vector<double>& expected, const std::string& what,
                        double rel = 1e-6) {
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO(what << "[" << i << "]: got " << got[i] << ", Keras " << expected[i]);
    CHECK(std::abs(got[i] - expected[i]) <= rel * std::abs(expected[i]) + 1e-30);
  }
}

}  // namespace ember::testing
