// The intra-op pool's default size: EMBER_NUM_THREADS, else OMP_NUM_THREADS, else the hardware threads; bad
// values skipped with a warning; set_intra_op_parallelism_threads overriding them at run time. The pool is
// sized once per process, so the end-to-end cases run this executable again with the variables set.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "framework/core/thread_count.h"
#include "framework/ember.h"
#include "tests/support/self_child.h"

using namespace ember;
using ember::detail::default_intra_op_threads;
using ember::detail::parse_thread_count;

namespace {

// default_intra_op_threads over a fake environment; the warnings it gave land in `warnings`.
int default_from(const std::map<std::string, std::string>& env, int hardware, std::vector<std::string>& warnings) {
  return default_intra_op_threads(
      [&](const char* name) {
        const auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      hardware, [&](const std::string& w) { warnings.push_back(w); });
}

// Runs this executable's hidden "pool size child" case under `env` (a shell prefix such as "A=1 B=2") and
// returns its stdout and stderr.
std::string run_child(const std::string& env) {
  return ember::testing::run_self_case("env -u EMBER_NUM_THREADS -u OMP_NUM_THREADS " + env, "pool size child");
}

std::string pool_line(int threads) { return "pool=" + std::to_string(threads) + ";"; }

}  // namespace

TEST_CASE("thread count: parsing an environment value", "[core][threads]") {
  CHECK(!parse_thread_count("EMBER_NUM_THREADS", nullptr).threads);
  CHECK(parse_thread_count("EMBER_NUM_THREADS", nullptr).problem.empty());
  CHECK(parse_thread_count("EMBER_NUM_THREADS", "3").threads == 3);
  CHECK(parse_thread_count("EMBER_NUM_THREADS", " 12\n").threads == 12);
  CHECK(parse_thread_count("OMP_NUM_THREADS", "4,2").threads == 4);  // OpenMP's outermost level
  // 0 is "the default", as TF_NUM_INTRAOP_THREADS=0: no count and no complaint.
  CHECK(!parse_thread_count("EMBER_NUM_THREADS", "0").threads);
  CHECK(parse_thread_count("EMBER_NUM_THREADS", "0").problem.empty());
  for (const char* bad : {"", "  ", "-1", "two", "3x", "2.5", "+2", "99999999999", "4,2"}) {
    INFO("EMBER_NUM_THREADS='" << bad << "'");
    const auto count = parse_thread_count("EMBER_NUM_THREADS", bad);
    CHECK(!count.threads);
    CHECK(count.problem == std::string("EMBER_NUM_THREADS='") + bad +
                               "' is not a thread count (expected a positive integer, or 0 for the default); "
                               "ignoring it");
  }
  CHECK(!parse_thread_count("OMP_NUM_THREADS", ",4").threads);
}

TEST_CASE("thread count: EMBER_NUM_THREADS, then OMP_NUM_THREADS, then the hardware", "[core][threads]") {
  std::vector<std::string> warnings;
  CHECK(default_from({}, 8, warnings) == 8);
  CHECK(default_from({}, 0, warnings) == 1);  // hardware_concurrency() may answer 0
  CHECK(default_from({{"OMP_NUM_THREADS", "2"}}, 8, warnings) == 2);
  CHECK(default_from({{"EMBER_NUM_THREADS", "3"}, {"OMP_NUM_THREADS", "2"}}, 8, warnings) == 3);
  CHECK(default_from({{"EMBER_NUM_THREADS", "0"}, {"OMP_NUM_THREADS", "2"}}, 8, warnings) == 2);
  CHECK(warnings.empty());
  // A bad value is skipped with a warning naming it; the next source decides.
  CHECK(default_from({{"EMBER_NUM_THREADS", "many"}, {"OMP_NUM_THREADS", "2"}}, 8, warnings) == 2);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("EMBER_NUM_THREADS='many'") != std::string::npos);
  warnings.clear();
  CHECK(default_from({{"OMP_NUM_THREADS", "-4"}}, 8, warnings) == 8);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("OMP_NUM_THREADS='-4'") != std::string::npos);
}

TEST_CASE("thread count: the process's pool follows the environment", "[core][threads]") {
  const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  CHECK(run_child("").find(pool_line(hardware)) != std::string::npos);
  CHECK(run_child("OMP_NUM_THREADS=1").find(pool_line(1)) != std::string::npos);
  CHECK(run_child("OMP_NUM_THREADS=5").find(pool_line(5)) != std::string::npos);
  CHECK(run_child("EMBER_NUM_THREADS=3 OMP_NUM_THREADS=5").find(pool_line(3)) != std::string::npos);
  const std::string bad = run_child("EMBER_NUM_THREADS=lots OMP_NUM_THREADS=4");
  CHECK(bad.find(pool_line(4)) != std::string::npos);
  CHECK(bad.find("[ember] [warning] EMBER_NUM_THREADS='lots' is not a thread count") != std::string::npos);
}

TEST_CASE("thread count: set_intra_op_parallelism_threads overrides the environment", "[core][threads]") {
  // The child sets 2, then 0 (back to the environment's 3).
  const std::string out = run_child("EMBER_NUM_THREADS=3 EMBER_TEST_SET_THEN_RESET=1");
  CHECK(out.find("pool=3;set=2;reset=3;") != std::string::npos);
}

// Run by the cases above in a fresh process: prints the pool's size as the environment left it (and, with
// EMBER_TEST_SET_THEN_RESET set, after setting 2 and then 0), which those cases look for.
TEST_CASE("pool size child", "[.]") {
  std::string line = pool_line(config::get_intra_op_parallelism_threads());
  if (std::getenv("EMBER_TEST_SET_THEN_RESET")) {
    config::set_intra_op_parallelism_threads(2);
    line += "set=" + std::to_string(config::get_intra_op_parallelism_threads()) + ";";
    config::set_intra_op_parallelism_threads(0);
    line += "reset=" + std::to_string(config::get_intra_op_parallelism_threads()) + ";";
  }
  std::printf("%s\n", line.c_str());
}
