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

#include "tests/support/tensor_testing.h"

namespace ember::testing {

inline nlohmann::json load_optimizer_fixture(const std::string& file) {
  namespace fs = std::filesystem;
  fs::path path = fs::path(__FILE__).parent_path().parent_path() / "fixtures" / "optimizers" / file;
  std::ifstream in(path);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

inline std::vector<double> json_values(const nlohmann::json& j) { return j.get<std::vector<double>>(); }

// Keras's bar for the goldens: float32 results within 1e-6 relative (a 1e-30 floor for exact zeros).
inline void check_close(const std::vector<double>& got, const std::vector<double>& expected, const std::string& what,
                        double rel = 1e-6) {
  REQUIRE(got.size() == expected.size());
  static double worst = 0; static int printed = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (expected[i] != 0) { double r = std::abs(got[i] - expected[i]) / std::abs(expected[i]); if (r > worst) { worst = r; if (printed++ < 400) fprintf(stderr, "TMPMAX %s %.3g\n", what.c_str(), r); } }
    INFO(what << "[" << i << "]: got " << got[i] << ", Keras " << expected[i]);
    CHECK(std::abs(got[i] - expected[i]) <= rel * std::abs(expected[i]) + 1e-30);
  }
}

}  // namespace ember::testing
