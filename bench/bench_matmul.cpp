// Float32 matmul throughput: Ember's GFLOP/s beside OpenBLAS cblas_sgemm measured in the same run,
// the seed benchmark (200 products of a 1000x1000 normal matrix) against the same with OpenBLAS, and the
// weight gradients of a small batch (x^T @ dy with 1 or 8 rows, the MLP's first layer) beside one
// dnnl_sgemm call left to oneDNN's own threading.
// Usage: bench_matmul [--json]
#include <cblas.h>
#include <dnnl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_util.h"
#include "framework/ember.h"

using namespace ember;

namespace {

using namespace ember::bench;

// Debian's OpenBLAS 0.3.21 does not recognise recent CPUs and silently uses a slow generic kernel.
// It reads OPENBLAS_CORETYPE once, when it loads, so set it and restart this program.
void select_openblas_core(char** argv) {
  __builtin_cpu_init();
  const char* want = __builtin_cpu_supports("avx512f") ? "SkylakeX" : __builtin_cpu_supports("avx2") ? "Haswell" : nullptr;
  if (!want) return;
  const char* have = std::getenv("OPENBLAS_CORETYPE");
  if (have && std::strcmp(have, want) == 0) return;
  setenv("OPENBLAS_CORETYPE", want, 1);
  execv("/proc/self/exe", argv);
  std::perror("bench_matmul: execv failed, OpenBLAS keeps its default kernel");
}

// Both libraries keep their workers spinning for a while after a call (OpenMP for Ember, pthreads for
// OpenBLAS); on a small machine the idle spinners steal cores from the other library's run.
void let_spinners_sleep() { std::this_thread::sleep_for(std::chrono::milliseconds(150)); }

// Measures ember_fn and ref_fn alternately in several rounds, after a warm-up of each; best times.
template <class E, class R>
std::pair<double, double> compare(int rounds, int reps, E&& ember_fn, R&& ref_fn) {
  ember_fn();
  let_spinners_sleep();
  ref_fn();
  let_spinners_sleep();
  double e = 1e300, r = 1e300;
  for (int i = 0; i < rounds; ++i) {
    e = std::min(e, best_seconds(reps, ember_fn));
    let_spinners_sleep();
    r = std::min(r, best_seconds(reps, ref_fn));
    let_spinners_sleep();
  }
  return {e, r};
}


std::vector<float> deterministic(int64_t count, int seed) {
  std::vector<float> v(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) v[static_cast<size_t>(i)] = static_cast<float>((i * 31 + seed) % 17 - 8) * 0.05f;
  return v;
}

Row gflops_row(int n, int threads, const std::string& reference) {
  config::set_intra_op_parallelism_threads(threads);
  openblas_set_num_threads(threads);
  const std::vector<float> va = deterministic(int64_t{n} * n, 1), vb = deterministic(int64_t{n} * n, 2);
  std::vector<float> vc(va.size());
  Tensor a = Tensor::from_vector(va, {n, n}), b = Tensor::from_vector(vb, {n, n}), c;
  // About 0.2 s of work per block at ~100 GFLOP/s, at least 2 calls.
  const double flops = 2.0 * n * n * n;
  const int reps = std::max(2, static_cast<int>(2e10 / flops / threads));
  auto [e, r] = compare(5, reps, [&] { c = ops::matmul(a, b); },
                        [&] {
                          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, va.data(), n, vb.data(),
                                      n, 0.0f, vc.data(), n);
                        });
  const double ge = flops / e / 1e9, gr = flops / r / 1e9;
  return {"matmul_" + std::to_string(n) + "_" + std::to_string(threads) + "t", "GFLOP/s", reference, ge, gr, ge / gr};
}

// The seed benchmark as apps/ember_demo.cpp runs it: y = w @ y, 200 times, then a host read.
Row seed_row(const std::string& reference, bool json) {
  constexpr int n = 1000, products = 200;
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  config::set_intra_op_parallelism_threads(threads);
  openblas_set_num_threads(threads);
  // Scaled so repeated products stay finite: each product multiplies the norm by about sqrt(1000).
  Tensor w = random::normal({n, n}, {.seed = 1}) * (1.0 / std::sqrt(1000.0));
  const std::vector<float> vw = w.to_vector<float>();
  std::vector<float> y0(vw.size()), y1(vw.size());
  double ember_sum = 0, ref_sum = 0;
  auto ember_run = [&] {
    Tensor y = w;
    for (int i = 0; i < products; ++i) y = ops::matmul(w, y);
    const std::vector<float> host = y.to_vector<float>();  // the host read forces completion
    ember_sum = 0;
    for (float v : host) ember_sum += std::abs(v);
  };
  auto ref_run = [&] {
    const float* in = vw.data();
    for (int i = 0; i < products; ++i) {
      float* out = i % 2 ? y1.data() : y0.data();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, vw.data(), n, in, n, 0.0f, out, n);
      in = out;
    }
    ref_sum = 0;
    for (int i = 0; i < n * n; ++i) ref_sum += std::abs(in[i]);
  };
  auto [e, r] = compare(3, 1, ember_run, ref_run);
  if (!json)
    std::printf("seed_matmul_200: %d thread(s), sum|y| ember %.6g, openblas %.6g\n", threads, ember_sum, ref_sum);
  return {"seed_matmul_" + std::to_string(products), "s", reference, e, r, r / e};
}

// The first Dense layer's weight gradient at batch k: x^T @ dy for x [k, 784], dy [k, 256] (a 784x256
// output with a short inner dimension), against one dnnl_sgemm call threaded by oneDNN itself.
Row small_batch_gradient_row(int64_t k, int threads) {
  constexpr int64_t m = 784, n = 256;
  config::set_intra_op_parallelism_threads(threads);
  const std::vector<float> vx = deterministic(k * m, 3), vdy = deterministic(k * n, 4);
  std::vector<float> vc(static_cast<size_t>(m * n));
  Tensor x = Tensor::from_vector(vx, {k, m}), dy = Tensor::from_vector(vdy, {k, n}), c;
  auto [e, r] = compare(5, 2000, [&] { c = ops::matmul(x, dy, {.transpose_a = true}); },
                        [&] { dnnl_sgemm('T', 'N', m, n, k, 1.0f, vx.data(), m, vdy.data(), n, 0.0f, vc.data(), n); });
  return {"matmul_tn_784x256_k" + std::to_string(k) + "_" + std::to_string(threads) + "t", "us", "dnnl_sgemm", e * 1e6,
          r * 1e6, r / e};
}

}  // namespace

int main(int argc, char** argv) {
  select_openblas_core(argv);
  const bool json = json_requested(argc, argv);
  const std::string reference = std::string("openblas_sgemm_") + openblas_get_corename();
  if (!json)
    std::printf("OpenBLAS %s, core %s (OPENBLAS_CORETYPE=%s)\n", openblas_get_config(), openblas_get_corename(),
                std::getenv("OPENBLAS_CORETYPE") ? std::getenv("OPENBLAS_CORETYPE") : "unset");
  for (int n : {256, 1000, 2048})
    for (int threads : {1, 2}) print(gflops_row(n, threads, reference), json);
  print(seed_row(reference, json), json);
  for (int64_t k : {1, 8}) print(small_batch_gradient_row(k, 2), json);
  return 0;
}
