// conv2d on the GPU: the timed algorithm choice under op determinism (the same bits on every run, values as
// the CPU's) and the logged fall-back to the direct kernel. Op determinism and the log level hold for the
// rest of a process, so the cases run this executable's hidden "cuda conv child" case in a fresh one. The
// [cuda] cases skip without a GPU.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "framework/ember.h"
#include "tests/support/tensor_testing.h"
#include "tests/support/self_child.h"

using namespace ember;

namespace {

constexpr Device kCpu = Device::cpu();
constexpr Device kGpu = Device::cuda(0);

bool has_gpu() { return device_count(DeviceType::CUDA) > 0; }

// This executable's "cuda conv child" case under `env` (a shell prefix): its stdout and stderr together.
std::string conv_child(const std::string& env) { return ember::testing::run_self_case(env, "cuda conv child"); }

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The forward value and both gradients of sum(conv2d(x, f) * w) on `device`.
std::vector<Tensor> conv_step(const Tensor& x, const Tensor& f, const Tensor& w, Device device,
                              const ops::Conv2DOptions& options) {
  const Tensor xd = x.to(device), fd = f.to(device), wd = w.to(device);
  GradientTape tape;
  tape.watch(xd);
  tape.watch(fd);
  const Tensor y = ops::conv2d(xd, fd, options);
  const Tensor loss = ops::reduce_sum(ops::mul(y, wd));
  std::vector<Tensor> out = tape.gradient(loss, {xd, fd});
  out.insert(out.begin(), y);
  for (Tensor& t : out) t = t.to(kCpu);
  return out;
}

}  // namespace

TEST_CASE("cuda conv child", "[.]") {
  config::enable_op_determinism();
  const std::vector<ops::Conv2DOptions> cases = {
      {}, {.strides = {2, 2}, .padding = "SAME"}, {.padding = "SAME", .dilations = {2, 2}}};
  bool same = true, close = true;
  for (DType dt : {DType::Float32, DType::Float16}) {
    const double tol = dt == DType::Float32 ? 2e-3 : 3e-2;  // TF32 tensor cores / float16 products
    for (const ops::Conv2DOptions& o : cases) {
      const Tensor x = random::normal({4, 13, 11, 16}, {.dtype = dt, .seed = 1});
      const Tensor f = random::normal({3, 3, 16, 24}, {.dtype = dt, .seed = 2});
      const Tensor w = ops::cast(random::normal(ops::conv2d(x, f, o).shape(), {.seed = 3}), dt);
      const std::vector<Tensor> first = conv_step(x, f, w, kGpu, o), second = conv_step(x, f, w, kGpu, o),
                                cpu = conv_step(x, f, w, kCpu, o);
      for (size_t i = 0; i < first.size(); ++i) {
        same = same && testing::same_bits(first[i], second[i]);
        const std::vector<double> g = testing::values_as_double(first[i]), c = testing::values_as_double(cpu[i]);
        for (size_t j = 0; j < g.size(); ++j) close = close && std::abs(g[j] - c[j]) <= tol * (1 + std::abs(c[j])) * 16;
      }
    }
  }
  // Float64 has no cuDNN path: it runs the direct kernel, said once for the shape.
  const Tensor x64 = random::normal({1, 5, 5, 2}, {.dtype = DType::Float64, .seed = 4});
  const Tensor f64 = random::normal({3, 3, 2, 3}, {.dtype = DType::Float64, .seed = 5});
  for (int i = 0; i < 2; ++i) (void)ops::conv2d(x64.to(kGpu), f64.to(kGpu)).to(kCpu);
  std::printf("cuda conv child: same bits %s, close to the CPU %s\n", same ? "yes" : "no", close ? "yes" : "no");
}

TEST_CASE("conv2d on the GPU under op determinism: the same bits twice, values as the CPU's", "[cuda][conv]") {
  if (!has_gpu()) {
    WARN("no CUDA device (device_count(DeviceType::CUDA) == 0): skipped");
    return;
  }
  const std::string out = conv_child("EMBER_LOG_LEVEL=info");
  INFO(out);
  CHECK(has(out, "cuda conv child: same bits yes, close to the CPU yes"));
  // The float64 convolution's fall-back is logged once (two calls), naming the shape and why.
  const std::string note = "conv2d on the GPU runs the direct kernel (no cuDNN) for input [1, 5, 5, 2]";
  const size_t at = out.find(note);
  CHECK(at != std::string::npos);
  CHECK(has(out, "cuDNN has no float64 convolution in NHWC"));
  CHECK(out.find(note, at + 1) == std::string::npos);
}
