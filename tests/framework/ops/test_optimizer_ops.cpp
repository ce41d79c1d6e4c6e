// The fused optimizer updates equal the unfused elementwise ops they replace, bit for bit.
#include <catch2/catch.hpp>

#include "framework/ember.h"
#include "framework/ops/dispatch.h"

using namespace ember;

TEST_CASE("apply_adam equals Keras's Adam step written with elementwise ops", "[ops][optimizer]") {
  for (DType dt : {DType::Float32, DType::Float64}) {
    INFO("dtype " << dtype_name(dt));
    for (int64_t n : {int64_t{7}, int64_t{100003}}) {  // one thread, and the parallel path
      auto r = [&](uint64_t seed, double lo) {
        return ops::cast(random::uniform({n}, {.minval = lo, .maxval = 1, .seed = seed}), dt);
      };
      Tensor w = r(1, -1), m = r(2, -1), v = r(3, 0), g = r(4, -1);
      const std::vector<double> w_before = ops::cast(w, DType::Float64).to_vector<double>();
      const double alpha = 0.00123, b1 = 0.9, b2 = 0.999, eps = 1e-7;
      ops::AdamUpdate u = ops::apply_adam(w, m, v, g, alpha, b1, b2, eps);
      Tensor m2 = m + (g - m) * (1 - b1);
      Tensor v2 = v + (ops::square(g) - v) * (1 - b2);
      Tensor w2 = w - (m2 * alpha) / (ops::sqrt(v2) + eps);
      CHECK(ops::reduce_all(ops::equal(u.momentum, m2)).item<bool>());
      CHECK(ops::reduce_all(ops::equal(u.velocity, v2)).item<bool>());
      CHECK(ops::reduce_all(ops::equal(u.variable, w2)).item<bool>());
      // Inputs are untouched: the results are new tensors.
      CHECK(ops::cast(w, DType::Float64).to_vector<double>() == w_before);
    }
  }
}

TEST_CASE("apply_adam_in_place writes apply_adam's values into the same buffers", "[ops][optimizer]") {
  for (DType dt : {DType::Float32, DType::Float64}) {
    INFO("dtype " << dtype_name(dt));
    for (int64_t n : {int64_t{7}, int64_t{100003}}) {
      auto r = [&](uint64_t seed, double lo) {
        return ops::cast(random::uniform({n}, {.minval = lo, .maxval = 1, .seed = seed}), dt);
      };
      Tensor w = r(1, -1), m = r(2, -1), v = r(3, 0), g = r(4, -1);
      ops::AdamUpdate u = ops::apply_adam(w, m, v, g, 0.00123, 0.9, 0.999, 1e-7);
      const void* buffers[] = {w.raw_data(), m.raw_data(), v.raw_data()};
      ops::apply_adam_in_place(w, m, v, g, 0.00123, 0.9, 0.999, 1e-7);
      CHECK(w.raw_data() == buffers[0]);
      CHECK(m.raw_data() == buffers[1]);
      CHECK(v.raw_data() == buffers[2]);
      CHECK(ops::reduce_all(ops::equal(w, u.variable)).item<bool>());
      CHECK(ops::reduce_all(ops::equal(m, u.momentum)).item<bool>());
      CHECK(ops::reduce_all(ops::equal(v, u.velocity)).item<bool>());
    }
  }
  Tensor a = ops::zeros({3}), b = ops::zeros({3}), c = ops::zeros({3});
  CHECK_THROWS_WITH(ops::apply_adam_in_place(a, b, c, a.view({3}), 0.1, 0.9, 0.999, 1e-7),
                    Catch::Contains("variable shares its buffer with the gradient"));
  CHECK_THROWS_WITH(ops::apply_adam_in_place(a, b, b, c, 0.1, 0.9, 0.999, 1e-7),
                    Catch::Contains("momentum shares its buffer with the velocity"));
}

TEST_CASE("apply_adam checks shapes and dtypes", "[ops][optimizer][errors]") {
  Tensor a = ops::zeros({3}), b = ops::zeros({4});
  CHECK_THROWS_WITH(ops::apply_adam(a, a, a, b, 0.1, 0.9, 0.999, 1e-7), Catch::Contains("gradient has shape (4,)"));
  Tensor h = ops::zeros({3}, DType::Float16);
  CHECK_FALSE(supports(OpId::apply_adam, DeviceType::CPU, DType::Float16));
  CHECK_THROWS_AS(ops::apply_adam(h, h, h, h, 0.1, 0.9, 0.999, 1e-7), InvalidArgument);
}
