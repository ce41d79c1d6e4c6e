#pragma once
// Helpers shared by the data tests: reading a dataset's elements as plain numbers, timing, thread counts.
#include <catch2/catch.hpp>

#include <chrono>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "framework/ember.h"

namespace ember::testing {

// Every element of one pass: component `c`, a scalar int64, as a number.
inline std::vector<int64_t> scalars(const data::Dataset& ds, size_t c = 0) {
  std::vector<int64_t> out;
  for (const data::Element& e : ds) out.push_back(e.at(c).item<int64_t>());
  return out;
}

// 0, 1, ..., n-1.
inline std::vector<int64_t> iota64(int64_t n, int64_t start = 0) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(start + i);
  return v;
}

// Seconds since t0.
inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Threads of this process now (Linux: /proc/self/task), to prove a pipeline joined all of its own.
inline int thread_count() {
  int n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

// A fresh empty directory under the system temp dir, removed with the object.
class TempDir {
 public:
  explicit TempDir(const std::string& tag) {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("ember_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace ember::testing
