#pragma once
// Helpers shared by the data tests: reading a dataset's elements as plain numbers, timing, thread counts.
#include <catch2/catch.hpp>

#include <chrono>
#include <unistd.h>

#include <filesystem>
#include <thread>
#include <string>
#include <vector>

#include "framework/ember.h"
#include "tests/support/temp_dir.h"

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

// Whether thread_count() reaches `expected` within a second. pthread_join returns once the kernel
// clears the thread's tid, a moment before the exiting task leaves /proc/self/task, so a joined thread
// can still be listed briefly (seen under TSan).
inline bool thread_count_settles_to(int expected) {
  const auto t0 = std::chrono::steady_clock::now();
  while (thread_count() != expected && seconds_since(t0) < 1.0)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return thread_count() == expected;
}

}  // namespace ember::testing
