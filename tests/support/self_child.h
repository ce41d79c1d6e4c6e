#pragma once
// Runs this test executable again on one of its hidden cases, for what a process reads once (environment
// variables, the logger's level, a fresh CUDA context) or what may end it.
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstdio>
#include <string>
#include <vector>

namespace ember::testing {

// The hidden case `name` of this executable, the command prefixed by `env` (a shell prefix such as
// "env -u X Y=1") and its output redirected by `redirect` ("2>&1": stdout and stderr together; "2>&1 >/dev/null":
// stderr alone). Returns what it printed; checks that it exited with 0.
inline std::string run_self_case(const std::string& env, const std::string& name,
                                 const std::string& redirect = "2>&1") {
  std::vector<char> self(4096);
  const ssize_t n = readlink("/proc/self/exe", self.data(), self.size() - 1);
  REQUIRE(n > 0);
  self[static_cast<size_t>(n)] = '\0';
  FILE* pipe = popen((env + " '" + std::string(self.data()) + "' '" + name + "' " + redirect).c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buf[512];
  while (size_t got = fread(buf, 1, sizeof buf, pipe)) out.append(buf, got);
  CHECK(pclose(pipe) == 0);
  return out;
}

}  // namespace ember::testing
