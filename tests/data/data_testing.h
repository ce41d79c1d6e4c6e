#pragma once
// Helpers shared by the data tests: reading a dataset's elements as plain numbers, timing, thread counts,
// writing files (plain and gzip) and setting environment variables for a scope.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
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

// ---- files and environment, for the loaders' tests ----

inline void write_plain(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// CRC-32 (gzip's, polynomial 0xEDB88320), bit by bit: the test files are small.
inline uint32_t crc32(const std::string& bytes) {
  uint32_t c = 0xffffffffu;
  for (unsigned char b : bytes) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = c & 1 ? (c >> 1) ^ 0xedb88320u : c >> 1;
  }
  return ~c;
}

// A gzip file holding `bytes` in stored (uncompressed) deflate blocks: a valid gzip stream without linking
// zlib into the test (RFC 1951 section 3.2.4, RFC 1952).
inline void write_gzip(const std::string& path, const std::string& bytes) {
  std::string out = {'\x1f', '\x8b', 8, 0, 0, 0, 0, 0, 0, 3};
  auto put16 = [&](uint32_t v) { out += {static_cast<char>(v & 0xff), static_cast<char>(v >> 8 & 0xff)}; };
  size_t pos = 0;
  do {
    const size_t n = std::min<size_t>(bytes.size() - pos, 65535);
    out.push_back(pos + n == bytes.size() ? 1 : 0);  // BFINAL, BTYPE 00
    put16(static_cast<uint32_t>(n));
    put16(static_cast<uint32_t>(~n & 0xffff));
    out.append(bytes, pos, n);
    pos += n;
  } while (pos < bytes.size());
  const uint32_t crc = crc32(bytes), size = static_cast<uint32_t>(bytes.size());
  put16(crc & 0xffff);
  put16(crc >> 16);
  put16(size & 0xffff);
  put16(size >> 16);
  write_plain(path, out);
}

inline std::string read_plain(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Sets an environment variable for one scope, restoring it after.
class EnvGuard {
 public:
  EnvGuard(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) setenv(name, value->c_str(), 1);
    else unsetenv(name);
  }
  ~EnvGuard() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// The message of the E that fn throws (fails when it throws nothing or something else).
template <class E, class F>
std::string message_of(F&& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  FAIL("expected an exception");
  return {};
}

}  // namespace ember::testing
