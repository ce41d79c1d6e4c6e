// The fused optimizer updates equal the unfused elementwise ops they replace, bit for bit.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "framework/ember.h"
#include "tests/support/tensor_testing.h"
#include "framework/ops/dispatch.h"

using namespace ember;
using ember::testing::same_bits;

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

namespace {
// Whether two tensors hold the same bits (NaNs of the same payload included).
}  // namespace

TEST_CASE("apply_adam_factored_in_place gives the bits of matmul then apply_adam_in_place", "[ops][optimizer]") {
  // Every batch of 1 to 8 rows, split over the pool or not, in both dtypes; an inf in a factor gives the NaNs
  // the product gives.
  const int before = config::get_intra_op_parallelism_threads();
  for (DType dt : {DType::Float32, DType::Float64})
    for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{784, 256}, std::pair<int64_t, int64_t>{5, 3}})
      for (int64_t k = 1; k <= ops::kFactoredMaxRows; ++k)
        for (int threads : {2, 1}) {
          config::set_intra_op_parallelism_threads(threads);
          INFO(dtype_name(dt) << " " << rows << " x " << cols << " at k = " << k << ", threads " << threads);
          auto r = [&](Shape s, uint64_t seed, double lo) {
            return ops::cast(random::uniform(s, {.minval = lo, .maxval = 1, .seed = seed}), dt);
          };
          Tensor w = r({rows, cols}, 1, -1), m = r({rows, cols}, 2, -1), v = r({rows, cols}, 3, 0);
          Tensor a = r({k, rows}, 4, -1), b = r({k, cols}, 5, -1);
          if (k == 3) {  // an inf in column 1 of a: row 1 of the gradient is infinite, and its step NaN
            std::vector<double> av = ops::cast(a, DType::Float64).to_vector<double>();
            av[static_cast<size_t>(rows + 1)] = INFINITY;
            a = ops::cast(Tensor::from_vector<double>(av, a.shape()), dt);
          }
          Tensor w2 = w.clone(), m2 = m.clone(), v2 = v.clone();
          ops::apply_adam_in_place(w2, m2, v2, ops::matmul(a, b, {.transpose_a = true}), 0.00123, 0.9, 0.999, 1e-7);
          const void* buffers[] = {w.raw_data(), m.raw_data(), v.raw_data()};
          ops::apply_adam_factored_in_place(w, m, v, a, b, 0.00123, 0.9, 0.999, 1e-7);
          CHECK(w.raw_data() == buffers[0]);
          CHECK(m.raw_data() == buffers[1]);
          CHECK(v.raw_data() == buffers[2]);
          CHECK(same_bits(w, w2));
          CHECK(same_bits(m, m2));
          CHECK(same_bits(v, v2));
          if (k == 3) CHECK(std::isnan(ops::cast(w, DType::Float64).to_vector<double>()[static_cast<size_t>(cols)]));
        }
  config::set_intra_op_parallelism_threads(before);
}

TEST_CASE("apply_adam_factored_in_place checks shapes, dtypes and buffers", "[ops][optimizer][errors]") {
  Tensor w = ops::zeros({4, 3}), m = ops::zeros({4, 3}), v = ops::zeros({4, 3});
  auto step = [&](const Tensor& a, const Tensor& b) { ops::apply_adam_factored_in_place(w, m, v, a, b, 0.1, 0.9, 0.999, 1e-7); };
  CHECK_THROWS_WITH(step(ops::zeros({2, 5}), ops::zeros({2, 3})),
                    Catch::Contains("shapes (2, 5) and (2, 3)") && Catch::Contains("(k, 4) and (k, 3)"));
  CHECK_THROWS_WITH(step(ops::zeros({9, 4}), ops::zeros({9, 3})), Catch::Contains("1 <= k <= 8"));
  CHECK_THROWS_AS(step(ops::zeros({2, 4}), ops::zeros({1, 3})), InvalidArgument);
  CHECK_THROWS_WITH(step(ops::zeros({2, 4}, DType::Float64), ops::zeros({2, 3}, DType::Float64)),
                    Catch::Contains("factor a has shape (2, 4) and dtype float64"));
  Tensor m_bad = ops::zeros({4, 3}, DType::Float64);
  CHECK_THROWS_WITH(ops::apply_adam_factored_in_place(w, m_bad, v, ops::zeros({1, 4}), ops::zeros({1, 3}), 0.1, 0.9,
                                                      0.999, 1e-7),
                    Catch::Contains("momentum has shape (4, 3) and dtype float64"));
  CHECK_THROWS_WITH(ops::apply_adam_factored_in_place(w, m, m, ops::zeros({1, 4}), ops::zeros({1, 3}), 0.1, 0.9,
                                                      0.999, 1e-7),
                    Catch::Contains("momentum shares its buffer with the velocity"));
  CHECK_THROWS_WITH(ops::apply_adam_factored_in_place(w, m, v, w.view({3, 4}), ops::zeros({3, 3}), 0.1, 0.9, 0.999,
                                                      1e-7),
                    Catch::Contains("variable shares its buffer with the factor a"));
  Tensor i1 = ops::zeros({4, 3}, DType::Int32), i2 = ops::zeros({4, 3}, DType::Int32), i3 = ops::zeros({4, 3}, DType::Int32);
  CHECK_THROWS_WITH(ops::apply_adam_factored_in_place(i1, i2, i3, ops::zeros({1, 4}, DType::Int32),
                                                      ops::zeros({1, 3}, DType::Int32), 0.1, 0.9, 0.999, 1e-7),
                    Catch::Contains("apply_adam_factored") && Catch::Contains("int32"));
}

TEST_CASE("factored_adam_pays for rows the CPU kernel vectorizes, and on a GPU", "[ops][optimizer]") {
  CHECK(ops::factored_adam_pays({784, 256}, DeviceType::CPU));
  CHECK(ops::factored_adam_pays({3, 16}, DeviceType::CPU));
  CHECK_FALSE(ops::factored_adam_pays({256, 10}, DeviceType::CPU));
  CHECK_FALSE(ops::factored_adam_pays({256}, DeviceType::CPU));
  CHECK(ops::factored_adam_pays({256, 10}, DeviceType::CUDA));
}

namespace {

// unscale_gradients' reference: the gradient cast to float32 (float64 stays), divided by the scale in that dtype.
Tensor unscaled_by_ops(const Tensor& g, float scale) {
  const DType wide = g.dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
  const Tensor w = g.dtype() == wide ? g : ops::cast(g, wide);
  return ops::div(w, Tensor::scalar_of(scale, wide));
}

// Gradients of every floating dtype and sizes from empty to several pool chunks (the split crosses gradients).
std::vector<Tensor> mixed_gradients(uint64_t seed, double tiny = 1) {
  std::vector<Tensor> out;
  const std::vector<std::pair<int64_t, DType>> specs = {
      {7, DType::Float16}, {40000, DType::Float32}, {0, DType::BFloat16}, {30001, DType::BFloat16},
      {5, DType::Float64}, {70001, DType::Float16}, {33333, DType::Float64}, {1, DType::Float32}};
  for (const auto& [n, dt] : specs) {
    std::vector<double> v = random::uniform({n}, {.minval = -3e4, .maxval = 3e4, .dtype = DType::Float64, .seed = seed++})
                                .to_vector<double>();
    for (size_t i = 0; i < v.size() / 8; ++i) v[i] *= tiny;  // with tiny: quotients below the normal range
    out.push_back(ops::cast(Tensor::from_vector(v, {n}), dt));
  }
  return out;
}

}  // namespace

TEST_CASE("unscale_gradients gives a cast to float32 then ops::div for every gradient, and one finite flag",
          "[ops][optimizer][mixed_precision]") {
  const int before = config::get_intra_op_parallelism_threads();
  for (int threads : {1, 2}) {
    config::set_intra_op_parallelism_threads(threads);
    const std::vector<Tensor> grads = mixed_gradients(5);
    // 2^15 and 2^-3 (a multiplication by the reciprocal), 2^127 (whose reciprocal is not normal: a division) and
    // one not a power of two (a division).
    for (float scale : {32768.0f, 0.125f, std::ldexp(1.0f, 127), 3.0f * 32768}) {
      INFO("threads " << threads << ", scale " << scale);
      const ops::UnscaledGradients u = ops::unscale_gradients(grads, Tensor::scalar<float>(scale));
      REQUIRE(u.gradients.size() == grads.size());
      CHECK(u.finite.item<bool>());
      for (size_t k = 0; k < grads.size(); ++k) {
        INFO("gradient " << k << ", " << dtype_name(grads[k].dtype()));
        CHECK(u.gradients[k].shape() == grads[k].shape());
        CHECK(same_bits(u.gradients[k], unscaled_by_ops(grads[k], scale)));
      }
    }
    // Quotients below the normal range: the same bits as the division (flushed alike).
    const std::vector<Tensor> tiny = mixed_gradients(17, 1e-39);
    const ops::UnscaledGradients t = ops::unscale_gradients(tiny, Tensor::scalar<float>(32768.0f));
    for (size_t k = 0; k < tiny.size(); ++k) CHECK(same_bits(t.gradients[k], unscaled_by_ops(tiny[k], 32768.0f)));
    // An infinity or a NaN in any gradient, at either end, clears the flag; the values still divide.
    for (size_t k : {size_t{0}, size_t{3}, size_t{5}, size_t{6}})
      for (double bad : {INFINITY, -INFINITY, NAN})
        for (bool last : {false, true}) {
          INFO("gradient " << k << ", value " << bad << (last ? " last" : " first"));
          std::vector<Tensor> g = grads;
          std::vector<double> v = ops::cast(g[k], DType::Float64).to_vector<double>();
          (last ? v.back() : v.front()) = bad;
          g[k] = ops::cast(Tensor::from_vector(v, g[k].shape()), g[k].dtype());
          const ops::UnscaledGradients b = ops::unscale_gradients(g, Tensor::scalar<float>(32768.0f));
          CHECK_FALSE(b.finite.item<bool>());
          CHECK(same_bits(b.gradients[k], unscaled_by_ops(g[k], 32768.0f)));
        }
  }
  config::set_intra_op_parallelism_threads(before);
}

TEST_CASE("unscale_gradients refuses what it cannot unscale", "[ops][optimizer][mixed_precision]") {
  const Tensor scale = Tensor::scalar<float>(2);
  REQUIRE_THROWS_WITH(ops::unscale_gradients({}, scale), Catch::Contains("unscale_gradients") && Catch::Contains("no gradients"));
  REQUIRE_THROWS_WITH(ops::unscale_gradients({ops::zeros({3}), ops::zeros({3}, DType::Int32)}, scale),
                      Catch::Contains("unscale_gradients: gradient 1 is int32"));
  REQUIRE_THROWS_WITH(ops::unscale_gradients({Tensor()}, scale), Catch::Contains("gradient 0 is undefined"));
  REQUIRE_THROWS_WITH(ops::unscale_gradients({ops::zeros({3})}, Tensor::scalar<double>(2)),
                      Catch::Contains("unscale_gradients: the scale") && Catch::Contains("float64"));
}

TEST_CASE("update_loss_scale: Keras's growth and halving of the dynamic scale", "[ops][optimizer][mixed_precision]") {
  struct Step {
    int64_t counter;
    bool finite;
    float scale, counter_after;
  };
  // growth_steps 4 from a scale of 1024: counting, doubling at the 4th finite step, halving a skipped one.
  for (const Step& s : {Step{0, true, 1024, 1}, Step{2, true, 1024, 3}, Step{3, true, 2048, 0}, Step{3, false, 512, 0},
                        Step{0, false, 512, 0}}) {
    INFO("counter " << s.counter << (s.finite ? " finite" : " skipped"));
    const ops::LossScaleUpdate u = ops::update_loss_scale(
        Tensor::scalar<float>(1024), Tensor::scalar<int64_t>(s.counter), Tensor::scalar<bool>(s.finite), 4);
    CHECK(u.scale.item<float>() == s.scale);
    CHECK(u.counter.item<int64_t>() == static_cast<int64_t>(s.counter_after));
  }
  // growth_steps 1 doubles every finite step.
  CHECK(ops::update_loss_scale(Tensor::scalar<float>(8), Tensor::scalar<int64_t>(0), Tensor::scalar<bool>(true), 1)
            .scale.item<float>() == 16);
  REQUIRE_THROWS_WITH(ops::update_loss_scale(Tensor::scalar<double>(8), Tensor::scalar<int64_t>(0),
                                             Tensor::scalar<bool>(true), 4),
                      Catch::Contains("update_loss_scale") && Catch::Contains("float64"));
  REQUIRE_THROWS_WITH(ops::update_loss_scale(Tensor::scalar<float>(8), Tensor::scalar<int64_t>(0),
                                             Tensor::scalar<bool>(true), 0),
                      Catch::Contains("growth_steps must be at least 1"));
}

TEST_CASE("apply_adam_multi_in_place equals apply_adam_in_place per variable, with Adam's host step size",
          "[ops][optimizer]") {
  for (DType dt : {DType::Float32, DType::Float64}) {
    INFO("dtype " << dtype_name(dt));
    const double lr = 0.00123, b1 = 0.9, b2 = 0.999, eps = 1e-7;
    for (int64_t step : {int64_t{0}, int64_t{6}, int64_t{1234}}) {
      INFO("step " << step);
      // Adam's bias-corrected step size as the optimizer makes it on the host (Keras's float32 tensor math).
      double alpha;
      if (dt == DType::Float32) {
        const float t = static_cast<float>(step + 1);
        alpha = static_cast<float>(static_cast<float>(lr) * std::sqrt(1.0f - std::pow(0.999f, t))) /
                (1.0f - std::pow(0.9f, t));
        alpha = static_cast<float>(alpha);
      } else {
        const double t = static_cast<double>(step + 1);
        alpha = lr * std::sqrt(1.0 - std::pow(static_cast<double>(0.999f), t)) /
                (1.0 - std::pow(static_cast<double>(0.9f), t));
      }
      std::vector<ops::AdamSlots> slots;
      std::vector<ops::AdamUpdate> expected;
      uint64_t seed = 10;
      for (int64_t n : {int64_t{7}, int64_t{0}, int64_t{100003}, int64_t{1}}) {
        auto r = [&](double lo) {
          return ops::cast(random::uniform({n}, {.minval = lo, .maxval = 1, .seed = seed++}), dt);
        };
        ops::AdamSlots s{r(-1), r(-1), r(0), r(-1)};
        expected.push_back(ops::apply_adam(s.variable, s.momentum, s.velocity, s.gradient, alpha, b1, b2, eps));
        slots.push_back(s);
      }
      // A skipped step changes nothing; the step and the flag may be on the host or the device.
      std::vector<Tensor> before;
      for (const ops::AdamSlots& s : slots) before.push_back(s.variable.clone());
      ops::apply_adam_multi_in_place(slots, Tensor::scalar<int64_t>(step), Tensor::scalar<bool>(false), lr, b1, b2, eps);
      for (size_t k = 0; k < slots.size(); ++k) CHECK(same_bits(slots[k].variable, before[k]));
      ops::apply_adam_multi_in_place(slots, Tensor::scalar<int64_t>(step), Tensor::scalar<bool>(true), lr, b1, b2, eps);
      for (size_t k = 0; k < slots.size(); ++k) {
        INFO("variable " << k);
        CHECK(same_bits(slots[k].variable, expected[k].variable));
        CHECK(same_bits(slots[k].momentum, expected[k].momentum));
        CHECK(same_bits(slots[k].velocity, expected[k].velocity));
      }
    }
  }
}

TEST_CASE("apply_adam_multi_in_place refuses mismatched or shared tensors", "[ops][optimizer][errors]") {
  const Tensor step = Tensor::scalar<int64_t>(0), yes = Tensor::scalar<bool>(true);
  auto z = [](int64_t n, DType dt = DType::Float32) { return ops::zeros({n}, dt); };
  CHECK_THROWS_WITH(ops::apply_adam_multi_in_place({}, step, yes, 0.1, 0.9, 0.999, 1e-7),
                    Catch::Contains("no variables"));
  CHECK_THROWS_WITH(ops::apply_adam_multi_in_place({{z(3), z(3), z(3), z(3)}}, Tensor::scalar<float>(0), yes, 0.1, 0.9,
                                                   0.999, 1e-7),
                    Catch::Contains("expected an int64 scalar"));
  CHECK_THROWS_WITH(ops::apply_adam_multi_in_place({{z(3), z(3), z(3), z(3)}}, step, Tensor::scalar<float>(1), 0.1, 0.9,
                                                   0.999, 1e-7),
                    Catch::Contains("expected a bool scalar"));
  CHECK_THROWS_WITH(ops::apply_adam_multi_in_place({{z(3), z(3), z(3), z(3)}, {z(2), z(2), z(2), z(2, DType::Float64)}},
                                                   step, yes, 0.1, 0.9, 0.999, 1e-7),
                    Catch::Contains("variable 1's gradient is float64") && Catch::Contains("dtype float32"));
  const Tensor shared = z(3);
  CHECK_THROWS_WITH(ops::apply_adam_multi_in_place({{shared, z(3), z(3), z(3)}, {z(3), shared, z(3), z(3)}}, step, yes,
                                                   0.1, 0.9, 0.999, 1e-7),
                    Catch::Contains("variable 1's momentum shares its buffer"));
  CHECK_THROWS_WITH(ops::apply_adam_multi_in_place({{shared, z(3), z(3), shared}}, step, yes, 0.1, 0.9, 0.999, 1e-7),
                    Catch::Contains("a gradient shares its buffer"));
}

TEST_CASE("apply_adam_multi_in_place with factored gradients and a tensor learning rate gives the per-variable bits",
          "[ops][optimizer]") {
  // Factored variables (split by rows over the pool or not) beside whole ones, in one pass; the rate as a float32
  // tensor (an optimizer's variable) gives the bits of the host's double holding the same float.
  const int before = config::get_intra_op_parallelism_threads();
  for (DType dt : {DType::Float32, DType::Float64})
    for (int threads : {2, 1}) {
      config::set_intra_op_parallelism_threads(threads);
      INFO(dtype_name(dt) << ", threads " << threads);
      const float lr = 0.00123f;
      const double b1 = 0.9, b2 = 0.999, eps = 1e-7;
      const int64_t step = 6;
      uint64_t seed = 70;
      auto r = [&](Shape s, double lo) {
        return ops::cast(random::uniform(s, {.minval = lo, .maxval = 1, .seed = seed++}), dt);
      };
      std::vector<ops::AdamSlots> slots, expected;
      std::vector<std::pair<Shape, int64_t>> cases = {{{784, 256}, 1}, {{300}, 0}, {{5, 3}, 3}, {{256, 256}, 8},
                                                      {{70000}, 0}};
      for (const auto& [shape, k] : cases) {
        ops::AdamSlots s{r(shape, -1), r(shape, -1), r(shape, 0), Tensor()};
        if (k > 0) {
          s.a = r({k, shape[0]}, -1);
          s.b = r({k, shape[1]}, -1);
        } else {
          s.gradient = r(shape, -1);
        }
        ops::AdamSlots e{s.variable.clone(), s.momentum.clone(), s.velocity.clone(),
                         k > 0 ? ops::matmul(s.a, s.b, {.transpose_a = true}) : s.gradient};
        slots.push_back(s);
        expected.push_back(e);
      }
      for (const ops::AdamSlots& e : expected)
        ops::apply_adam_multi_in_place({e}, Tensor::scalar<int64_t>(step), Tensor::scalar<bool>(true),
                                       static_cast<double>(lr), b1, b2, eps);
      std::vector<const void*> buffers;
      for (const ops::AdamSlots& s : slots) buffers.push_back(s.variable.raw_data());
      ops::apply_adam_multi_in_place(slots, Tensor::scalar<int64_t>(step), Tensor::scalar<bool>(true),
                                     Tensor::scalar<float>(lr), b1, b2, eps);
      for (size_t i = 0; i < slots.size(); ++i) {
        INFO("variable " << i);
        CHECK(slots[i].variable.raw_data() == buffers[i]);
        CHECK(same_bits(slots[i].variable, expected[i].variable));
        CHECK(same_bits(slots[i].momentum, expected[i].momentum));
        CHECK(same_bits(slots[i].velocity, expected[i].velocity));
      }
    }
  config::set_intra_op_parallelism_threads(before);
}

TEST_CASE("apply_adam_multi_in_place checks factors and the learning rate", "[ops][optimizer][errors]") {
  const Tensor step = Tensor::scalar<int64_t>(0), yes = Tensor::scalar<bool>(true);
  auto z = [](Shape s, DType dt = DType::Float32) { return ops::zeros(s, dt); };
  auto run = [&](ops::AdamSlots s, const Tensor& lr) { ops::apply_adam_multi_in_place({s}, step, yes, lr, 0.9, 0.999, 1e-7); };
  const Tensor lr = Tensor::scalar<float>(0.1f);
  CHECK_THROWS_WITH(run({z({4, 3}), z({4, 3}), z({4, 3}), Tensor(), z({2, 5}), z({2, 3})}, lr),
                    Catch::Contains("variable 0's gradient factors are float32 (2, 5) and float32 (2, 3)") &&
                        Catch::Contains("(k, 4) and (k, 3)"));
  CHECK_THROWS_WITH(run({z({4, 3}, DType::Float64), z({4, 3}, DType::Float64), z({4, 3}, DType::Float64), Tensor(),
                         z({9, 4}, DType::Float64), z({9, 3}, DType::Float64)},
                        lr),
                    Catch::Contains("1 <= k <= 8"));
  CHECK_THROWS_WITH(run({z({4, 3}), z({4, 3}), z({4, 3}), Tensor(), z({9, 4}), z({9, 3})}, lr),
                    Catch::Contains("float32 (9, 4) and float32 (9, 3)") && Catch::Contains("1 <= k <= 8"));
  CHECK_THROWS_WITH(run({z({4, 3}), z({4, 3}), z({4, 3}), Tensor(), z({1, 4}), Tensor()}, lr),
                    Catch::Contains("gradient factors are float32 (1, 4) and undefined"));
  CHECK_THROWS_WITH(run({z({4, 3}), z({4, 3}), z({4, 3}), z({4, 3}), z({1, 4}), z({1, 3})}, lr),
                    Catch::Contains("both a gradient and its factors"));
  CHECK_THROWS_WITH(run({z({4, 3}), z({4, 3}), z({4, 3}), z({4, 3})}, Tensor::scalar<int32_t>(1)),
                    Catch::Contains("the learning rate has shape () and dtype int32"));
  const Tensor w = z({4, 3});
  CHECK_THROWS_WITH(run({w, z({4, 3}), z({4, 3}), Tensor(), w.view({3, 4}), z({3, 3})}, lr),
                    Catch::Contains("a gradient shares its buffer with an updated tensor"));
}

TEST_CASE("apply_sgd_multi_in_place equals SGD's elementwise ops, with and without momentum", "[ops][optimizer]") {
  for (DType dt : {DType::Float32, DType::Float64})
    for (double momentum : {0.0, 0.9})
      for (bool nesterov : {false, true}) {
        INFO(dtype_name(dt) << " momentum " << momentum << (nesterov ? " nesterov" : ""));
        const double lr = 0.0123, mom = static_cast<float>(momentum);  // SGD casts the momentum to float32 first
        std::vector<ops::SgdSlots> slots;
        std::vector<std::pair<Tensor, Tensor>> expected;  // (w, m)
        uint64_t seed = 40;
        for (int64_t n : {int64_t{7}, int64_t{0}, int64_t{100003}}) {
          auto r = [&] { return ops::cast(random::uniform({n}, {.minval = -1, .maxval = 1, .seed = seed++}), dt); };
          ops::SgdSlots s{r(), momentum != 0 ? r() : Tensor(), r()};
          if (momentum == 0) {
            expected.push_back({s.variable - s.gradient * lr, Tensor()});
          } else {
            Tensor m = s.momentum * mom - s.gradient * lr;
            expected.push_back({nesterov ? s.variable + (m * mom - s.gradient * lr) : s.variable + m, m});
          }
          slots.push_back(s);
        }
        std::vector<Tensor> before;
        for (const ops::SgdSlots& s : slots) before.push_back(s.variable.clone());
        ops::apply_sgd_multi_in_place(slots, Tensor::scalar<bool>(false), lr, momentum, nesterov);
        for (size_t k = 0; k < slots.size(); ++k) CHECK(same_bits(slots[k].variable, before[k]));
        ops::apply_sgd_multi_in_place(slots, Tensor::scalar<bool>(true), lr, momentum, nesterov);
        for (size_t k = 0; k < slots.size(); ++k) {
          INFO("variable " << k);
          CHECK(same_bits(slots[k].variable, expected[k].first));
          if (momentum != 0) CHECK(same_bits(slots[k].momentum, expected[k].second));
        }
      }
  const Tensor w = ops::zeros({3});
  CHECK_THROWS_WITH(ops::apply_sgd_multi_in_place({{w, Tensor(), ops::zeros({3})}}, Tensor::scalar<bool>(true), 0.1,
                                                  0.9, false),
                    Catch::Contains("variable 0's momentum is undefined"));
  CHECK_THROWS_WITH(ops::apply_sgd_multi_in_place({{w, Tensor(), w}}, Tensor::scalar<bool>(true), 0.1, 0, false),
                    Catch::Contains("a gradient shares its buffer"));
}
