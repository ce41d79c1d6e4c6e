// Crash safety of every save: a process killed at a random moment while saving over a checkpoint, or a
// save that runs out of disk space, never leaves the target unloadable; the old file stays intact.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

#include "framework/ember.h"
#include "tests/support/temp_dir.h"

using namespace ember;

namespace {

std::shared_ptr<Sequential> crash_model(uint64_t seed, int64_t width = 64) {
  random::set_seed(seed);
  return std::make_shared<Sequential>(std::vector<SequentialEntry>{
      layers::Input({32}), layers::Dense(width, {.activation = "relu"}), layers::Dense(width), layers::Dense(4)});
}

bool same_weights(const Model& a, const Model& b) {
  auto wa = a.get_weights(), wb = b.get_weights();
  if (wa.size() != wb.size()) return false;
  for (size_t i = 0; i < wa.size(); ++i)
    if (wa[i].to_vector<float>() != wb[i].to_vector<float>()) return false;
  return true;
}

// model.save_weights for a ".weights.h5" name, model.save otherwise.
void save_to(const Model& model, const std::string& path) {
  if (path.size() > 11 && path.compare(path.size() - 11, 11, ".weights.h5") == 0)
    model.save_weights(path);
  else
    model.save(path);
}

// Saves a or b alternately to path, forever (in a child process, until killed).
[[noreturn]] void save_forever(const Model& a, const Model& b, const std::string& path) {
  for (uint64_t i = 0;; ++i) {
    try {
      save_to(i % 2 ? b : a, path);
    } catch (...) {
      _exit(3);
    }
  }
}

}  // namespace

TEST_CASE("a save killed at a random moment leaves a loadable checkpoint", "[io][crash]") {
  testing::TempDir dir("crash");
  auto a = crash_model(1), b = crash_model(2);
  for (const char* name : {"model.weights.h5", "model.h5", "model.keras"}) {
    INFO(name);
    const std::string path = dir.file(name);
    save_to(*a, path);  // a complete file exists before the first kill
    std::mt19937 rng(7);
    for (int round = 0; round < 12; ++round) {
      const pid_t child = fork();
      REQUIRE(child >= 0);
      if (child == 0) save_forever(*a, *b, path);
      std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<int>(0, 40000)(rng)));
      ::kill(child, SIGKILL);
      int status = 0;
      ::waitpid(child, &status, 0);
      REQUIRE(WIFSIGNALED(status));  // killed while saving, not failed
      auto loaded = crash_model(3);
      if (std::string(name) == "model.keras") {
        Model m = models::load_model(path);
        CHECK((same_weights(m, *a) || same_weights(m, *b)));
      } else {
        loaded->load_weights(path);
        CHECK((same_weights(*loaded, *a) || same_weights(*loaded, *b)));
      }
    }
  }
}

TEST_CASE("a save that runs out of space fails cleanly and keeps the old file", "[io][crash]") {
  testing::TempDir dir("full");
  auto small = crash_model(1, 8), big = crash_model(2, 512);
  for (const char* name : {"model.weights.h5", "model.h5", "model.keras"}) {
    INFO(name);
    const std::string path = dir.file(name);
    save_to(*small, path);
    const auto size_before = std::filesystem::file_size(path);
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      // A file size limit makes writes fail with EFBIG, as a full disk fails them with ENOSPC.
      ::signal(SIGXFSZ, SIG_IGN);
      rlimit limit{static_cast<rlim_t>(size_before + 4096), static_cast<rlim_t>(size_before + 4096)};
      ::setrlimit(RLIMIT_FSIZE, &limit);
      try {
        save_to(*big, path);
      } catch (const Error&) {
        _exit(0);  // the failure is an ember::Error
      } catch (...) {
        _exit(2);
      }
      _exit(1);  // the save should not have succeeded
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    CHECK(std::filesystem::file_size(path) == size_before);
    size_t leftovers = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir.path())) leftovers += entry.path().filename().string().find(".tmp") != std::string::npos;
    CHECK(leftovers == 0);
    if (std::string(name) == "model.keras") {
      Model m = models::load_model(path);
      CHECK(same_weights(m, *small));
    } else {
      auto loaded = crash_model(3, 8);
      loaded->load_weights(path);
      CHECK(same_weights(*loaded, *small));
    }
  }
}
