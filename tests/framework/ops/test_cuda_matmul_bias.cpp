// matmul_bias on the GPU: the product with the bias (and relu) in cuBLASLt's epilogue agrees with the CPU and
// with the GPU's separate bias pass (taken for a bias at an address cuBLASLt's epilogue is not given: a view
// one element in). The [cuda] case skips without a GPU.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "framework/ember.h"
#include "tests/support/tensor_testing.h"

using namespace ember;

TEST_CASE("matmul_bias on the GPU: cuBLASLt's epilogue agrees with the CPU and the separate pass", "[cuda][linalg]") {
  if (device_count(DeviceType::CUDA) == 0) {
    WARN("no CUDA device (device_count(DeviceType::CUDA) == 0): skipped");
    return;
  }
  const Device gpu = Device::cuda(0);
  for (DType dt : {DType::Float32, DType::Float16, DType::BFloat16}) {
    for (bool relu : {false, true}) {
      // Made on the CPU (a GPU is the default device) and copied, so both sides see the same values.
      DeviceScope on_cpu(Device::cpu());
      const Tensor a = random::normal({37, 96}, {.dtype = dt, .seed = 7});
      const Tensor b = random::normal({96, 80}, {.dtype = dt, .seed = 8});
      const Tensor bias = random::normal({80}, {.dtype = dt, .seed = 9});
      auto run = [&](const Tensor& x, const Tensor& y, const Tensor& c) {
        return (relu ? ops::matmul_bias_relu(x, y, c) : ops::matmul_bias(x, y, c)).to(Device::cpu());
      };
      const Tensor ag = a.to(gpu), bg = b.to(gpu);
      // The epilogue reads an aligned bias; the same values one element into a buffer go the separate pass.
      const Tensor shifted = ops::concat({ops::zeros({1}, dt), bias}, 0).to(gpu).slice_rows(1, 81);
      const Tensor fused = run(ag, bg, bias.to(gpu));
      const Tensor separate = run(ag, bg, shifted);
      const Tensor cpu = run(a, b, bias);
      const double tol = dt == DType::Float32 ? 1e-2 : dt == DType::Float16 ? 5e-2 : 3e-1;  // TF32 / half products
      const std::vector<double> f = testing::values_as_double(fused), s = testing::values_as_double(separate),
                                c = testing::values_as_double(cpu);
      REQUIRE(f.size() == c.size());
      int bad = 0;
      for (size_t i = 0; i < f.size(); ++i) {
        bad += std::abs(f[i] - c[i]) > tol * (1 + std::abs(c[i]));
        bad += std::abs(f[i] - s[i]) > tol * (1 + std::abs(s[i]));
        if (relu) bad += f[i] < 0;
      }
      INFO(dt << (relu ? " with relu" : ""));
      CHECK(bad == 0);
    }
  }
}
