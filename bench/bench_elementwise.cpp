// Memory bandwidth of large elementwise ops: GB/s of ops::add (3 x 64 MiB moved: two reads, one write) and
// ops::relu (2 x 64 MiB) on 16M float32 elements with the default thread count, beside memcpy moving the
// same bytes in the same run (a copy of N bytes counts N read + N written). speedup = ember / memcpy.
// Usage: bench_elementwise [--json]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "framework/ember.h"

using namespace ember;

namespace {

using namespace ember::bench;
constexpr int64_t kElements = int64_t{1} << 24;  // 16M float32 = 64 MiB
constexpr double kTensorBytes = static_cast<double>(kElements) * sizeof(float);

// Best seconds of `reps` calls of fn, after two warm-up calls (which also fault in fresh pages).
template <class F>
double warm_best_seconds(int reps, F&& fn) {
  fn();
  fn();
  return best_seconds(reps, fn);
}

// GB/s of memcpy moving `bytes_moved` bytes in all (half read, half written).
double memcpy_gbps(double bytes_moved) {
  const size_t n = static_cast<size_t>(bytes_moved / 2);
  auto free_fn = [](char* p) { std::free(p); };
  std::unique_ptr<char, decltype(free_fn)> src(static_cast<char*>(std::aligned_alloc(64, n)), free_fn);
  std::unique_ptr<char, decltype(free_fn)> dst(static_cast<char*>(std::aligned_alloc(64, n)), free_fn);
  std::memset(src.get(), 1, n);
  std::memset(dst.get(), 0, n);
  const double t = warm_best_seconds(10, [&] {
    std::memcpy(dst.get(), src.get(), n);
    keep_alive(dst.get());
  });
  return bytes_moved / t / 1e9;
}


Row row(const std::string& name, double bytes_moved, double seconds) {
  const double gbps = bytes_moved / seconds / 1e9, ref = memcpy_gbps(bytes_moved);
  return {name, "GB/s", "memcpy", gbps, ref, gbps / ref};
}

}  // namespace

int main(int argc, char** argv) {
  const bool json = json_requested(argc, argv);
  if (!json)
    std::printf("16M float32 elements, %d intra-op thread(s); memcpy single-threaded\n",
                config::get_intra_op_parallelism_threads());
  const Tensor a = random::uniform({kElements}, {.minval = -1, .maxval = 1, .seed = 1});
  const Tensor b = random::uniform({kElements}, {.minval = -1, .maxval = 1, .seed = 2});
  Tensor c;
  const double add_s = warm_best_seconds(10, [&] {
    c = ops::add(a, b);
    keep_alive(c.raw_data());
  });
  const double relu_s = warm_best_seconds(10, [&] {
    c = ops::relu(a);
    keep_alive(c.raw_data());
  });
  print(row("elementwise_add", 3 * kTensorBytes, add_s), json);
  print(row("elementwise_relu", 2 * kTensorBytes, relu_s), json);
  return 0;
}
