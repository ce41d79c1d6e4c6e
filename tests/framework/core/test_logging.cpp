// The `ember` logger: EMBER_LOG_LEVEL sets the level (warn when unset or unknown), and lines go to std::cerr
// as "[ember] [<level>] message". The level is read once per process, so each case runs this executable
// again with the variable set.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "framework/core/logging.h"
#include "tests/support/self_child.h"

namespace {

// Runs this executable's hidden "logging child" case under `env` (a shell prefix) and returns its stderr.
std::string log_child(const std::string& env) {
  return ember::testing::run_self_case("env -u EMBER_LOG_LEVEL " + env, "logging child", "2>&1 >/dev/null");
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("logging: EMBER_LOG_LEVEL sets which messages print", "[core][logging]") {
  const std::string by_default = log_child("");
  CHECK(has(by_default, "[ember] [warning] a warning\n"));
  CHECK_FALSE(has(by_default, "an info"));
  CHECK_FALSE(has(by_default, "a debug"));

  const std::string debug = log_child("EMBER_LOG_LEVEL=debug");
  CHECK(has(debug, "[ember] [debug] a debug\n"));
  CHECK(has(debug, "[ember] [info] an info\n"));
  CHECK(has(debug, "[ember] [warning] a warning\n"));

  const std::string info = log_child("EMBER_LOG_LEVEL=info");
  CHECK(has(info, "an info"));
  CHECK_FALSE(has(info, "a debug"));

  CHECK(log_child("EMBER_LOG_LEVEL=error").find("[ember]") == std::string::npos);
  CHECK(log_child("EMBER_LOG_LEVEL=off").find("[ember]") == std::string::npos);
  // An unknown name keeps the default.
  CHECK(has(log_child("EMBER_LOG_LEVEL=loud"), "[ember] [warning] a warning\n"));
}

TEST_CASE("logging: messages go through std::cerr, so redirecting it captures them", "[core][logging]") {
  std::ostringstream captured;
  std::streambuf* old = std::cerr.rdbuf(captured.rdbuf());
  ember::logging::warn("captured warning");
  std::cerr.rdbuf(old);
  CHECK(captured.str() == "[ember] [warning] captured warning\n");
}

TEST_CASE("logging child", "[.]") {
  ember::logging::debug("a debug");
  ember::logging::info("an info");
  ember::logging::warn("a warning");
}
