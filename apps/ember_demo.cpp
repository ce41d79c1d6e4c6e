// `make train` until the training app lands: the seed benchmark (200 products of a 1000x1000 normal
// matrix, synchronised at the end), printing the time and a checksum of the result.
#include <chrono>
#include <cstdio>

#include "framework/ember.h"
using namespace ember;

int main() {
  Tensor x = random::normal({1000, 1000}, {.seed = 1});
  // Scale so repeated products stay finite: each product multiplies the norm by about sqrt(1000).
  Tensor w = x * (1.0 / std::sqrt(1000.0));
  Tensor y = w;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 200; ++i) y = ops::matmul(w, y);
  double checksum = ops::reduce_sum(ops::abs(y)).item<float>();  // host read: forces completion
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("ember_demo: 200 matmuls of 1000x1000 float32 on %d thread(s) in %.3f s (%.1f GFLOP/s), checksum %.6g\n",
              config::get_intra_op_parallelism_threads(), secs, 200 * 2e9 / secs / 1e9, checksum);
  return 0;
}
