// Memory bandwidth of large elementwise ops: GB/s of ops::add (3 x 64 MiB moved: two reads, one write) and
// ops::relu (2 x 64 MiB) on 16M float32 elements with the default thread count, beside memcpy moving the
// same bytes in the same run (a copy of N bytes counts N read + N written). speedup = ember / memcpy.
// Also Adam's fused update of the MLP's first kernel (784 x 256 float32, slots in cache): in place
// (ops::apply_adam_in_place, what the optimizer runs) beside the same step into fresh tensors
// (ops::apply_adam), in ns a parameter. speedup = fresh / in place.
// Also the transcendental activations on a Dense layer's output at batch 128 (128 x 256 float32, in cache), on one
// thread: ops::tanh, sigmoid, exp, elu, log (of |x|) and gelu in us a call beside a loop over the C library's tanhf,
// expf, expm1f, logf and erff (sigmoid, elu and gelu written as the ops define them) in the same run. speedup =
// C library / ember. (The log row's Ember side includes ops::abs, a pass of its own.)
// Also Keras's MaxPooling2D(2) on the example CNN's first convolution output at batch 128 (128 x 26 x 26 x 32),
// forward and gradient, float32 and bfloat16, in GB/s of the bytes the kernel must move (forward: x read, y
// written; gradient: x and dy read, dx written) beside memcpy moving as many bytes.
// Also random::uniform over a dropout mask of the example CNN (128 x 1600 float32) on one intra-op thread, in ns an
// element, beside a loop calling philox::block block by block (what the op computes, one chain at a time).
// Usage: bench_elementwise [--json]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "framework/core/philox.h"
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

// Each slot and the kernel are their own page-aligned allocation, as in training, so their addresses agree
// modulo 4 KiB: a kernel that reloads an element after storing another array's stalls on every load.
Row adam_row() {
  constexpr int64_t kParams = 784 * 256;
  Tensor w = random::uniform({kParams}, {.minval = -0.1, .maxval = 0.1, .seed = 3});
  Tensor g = random::uniform({kParams}, {.minval = -1e-2, .maxval = 1e-2, .seed = 4});
  Tensor m = ops::zeros({kParams}), v = ops::zeros({kParams});
  const double in_place_s = warm_best_seconds(200, [&] {
    ops::apply_adam_in_place(w, m, v, g, 1e-3, 0.9, 0.999, 1e-7);
    keep_alive(w.raw_data());
  });
  ops::AdamUpdate fresh;
  const double fresh_s = warm_best_seconds(200, [&] {
    fresh = ops::apply_adam(w, m, v, g, 1e-3, 0.9, 0.999, 1e-7);
    keep_alive(fresh.variable.raw_data());
  });
  const double ns = in_place_s / kParams * 1e9, ref = fresh_s / kParams * 1e9;
  return {"adam_in_place_200704", "ns/param", "apply_adam into fresh tensors", ns, ref, ref / ns};
}

// us a call of op on a 128 x 256 float32 tensor on one intra-op thread, beside a plain loop applying reference.
template <class Op, class Ref>
Row activation_row(const std::string& name, Op op, Ref reference) {
  const int64_t n = 128 * 256;
  const Tensor x = random::normal({128, 256}, {.stddev = 2.0f, .seed = 3});
  const int threads = config::get_intra_op_parallelism_threads();
  config::set_intra_op_parallelism_threads(1);
  Tensor y;
  const double ember_s = warm_best_seconds(200, [&] {
    y = op(x);
    keep_alive(y.raw_data());
  });
  config::set_intra_op_parallelism_threads(threads);
  std::vector<float> out(static_cast<size_t>(n));
  const float* in = x.data<float>();
  const double ref_s = warm_best_seconds(200, [&] {
    for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = reference(in[i]);
    keep_alive(out.data());
  });
  return {name, "us", "C library", ember_s * 1e6, ref_s * 1e6, ref_s / ember_s};
}

// random::uniform on one thread against philox::block per block (same words, the uniform floats as TF makes them).
Row random_uniform_row() {
  constexpr int64_t kRows = 128, kCols = 1600, n = kRows * kCols;
  const int threads = config::get_intra_op_parallelism_threads();
  config::set_intra_op_parallelism_threads(1);
  Tensor u;
  const double ember_s = warm_best_seconds(50, [&] {
    u = random::uniform({kRows, kCols}, {.seed = 11});
    keep_alive(u.raw_data());
  });
  config::set_intra_op_parallelism_threads(threads);
  std::vector<float> out(static_cast<size_t>(n));
  const double ref_s = warm_best_seconds(50, [&] {
    for (int64_t b = 0; b < n / 4; ++b) {
      const philox::Uint4 w = philox::block(11, static_cast<uint64_t>(b));
      for (int j = 0; j < 4; ++j) out[static_cast<size_t>(4 * b + j)] = philox::uint32_to_float(w.v[j]);
    }
    keep_alive(out.data());
  });
  return {"random_uniform_128x1600", "ns/element", "philox::block per block", ember_s / n * 1e9, ref_s / n * 1e9,
          ref_s / ember_s};
}

// MaxPooling2D(2) forward and gradient on a conv output of the example CNN, dtype dt.
std::vector<Row> pool_rows(DType dt, const std::string& suffix) {
  const Tensor x = ops::cast(random::normal({128, 26, 26, 32}, {.seed = 5}), dt);
  const ops::Pool2DOptions o{.strides = {2, 2}};
  const Tensor y = ops::max_pool2d(x, {2, 2}, o);
  const Tensor dy = ops::cast(random::normal(y.shape(), {.seed = 6}), dt);
  const double x_bytes = static_cast<double>(x.num_elements() * dtype_size(dt));
  const double y_bytes = static_cast<double>(y.num_elements() * dtype_size(dt));
  Tensor out;
  const double forward_s = warm_best_seconds(50, [&] {
    out = ops::max_pool2d(x, {2, 2}, o);
    keep_alive(out.raw_data());
  });
  const double grad_s = warm_best_seconds(50, [&] {
    out = ops::max_pool2d_grad(x, y, dy, {2, 2}, o);
    keep_alive(out.raw_data());
  });
  return {row("max_pool_2x2_" + suffix, x_bytes + y_bytes, forward_s),
          row("max_pool_2x2_grad_" + suffix, 2 * x_bytes + y_bytes, grad_s)};
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
  print(adam_row(), json);
  print(activation_row("activation_tanh", [](const Tensor& t) { return ops::tanh(t); },
                       [](float v) { return std::tanh(v); }),
        json);
  print(activation_row("activation_sigmoid", [](const Tensor& t) { return ops::sigmoid(t); },
                       [](float v) {
                         const float e = std::exp(-std::abs(v));
                         return (v >= 0.0f ? 1.0f : e) / (1.0f + e);
                       }),
        json);
  print(activation_row("activation_exp", [](const Tensor& t) { return ops::exp(t); },
                       [](float v) { return std::exp(v); }),
        json);
  print(activation_row("activation_elu", [](const Tensor& t) { return ops::elu(t); },
                       [](float v) { return v < 0.0f ? std::expm1(v) : v; }),
        json);
  print(activation_row("activation_log", [](const Tensor& t) { return ops::log(ops::abs(t)); },
                       [](float v) { return std::log(std::abs(v)); }),
        json);
  print(activation_row("activation_gelu", [](const Tensor& t) { return ops::gelu(t); },
                       [](float v) { return 0.5f * v * (1.0f + std::erf(v * 0.7071067811865476f)); }),
        json);
  print(activation_row("activation_softplus", [](const Tensor& t) { return ops::softplus(t); },
                       [](float v) { return v > 15.0f ? v : std::log1p(std::exp(v)); }),
        json);
  print(random_uniform_row(), json);
  for (const Row& r : pool_rows(DType::Float32, "f32")) print(r, json);
  for (const Row& r : pool_rows(DType::BFloat16, "bf16")) print(r, json);
  return 0;
}
