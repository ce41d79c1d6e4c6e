// ember::function with unknown dimensions: an input_signature with -1 (None), reduce_retracing, and the graphs
// made for other sizes from one trace, with eager execution's bits.
#include <catch2/catch.hpp>

#include "framework/ember.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using ember::testing::same_bits;

namespace {

std::unique_ptr<Sequential> mlp() {
  random::set_seed(11);
  auto model = std::make_unique<Sequential>();
  model->add(layers::Input({784}));
  model->add(layers::Dense(32, {.activation = "relu"}));
  model->add(layers::Dense(10));
  return model;
}

struct Batch {
  Tensor x, y;
};
Batch batch(int64_t n, uint64_t seed) {
  std::vector<int32_t> y(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) y[static_cast<size_t>(i)] = static_cast<int32_t>((i * 3 + seed) % 10);
  return {random::uniform({n, 784}, {.seed = seed}), Tensor::from_vector<int32_t>(y)};
}

}  // namespace

TEST_CASE("a [None, 784] training step serves every batch size from one trace, with eager's bits",
          "[function][unknown_dims]") {
  auto eager_model = mlp();
  auto traced_model = mlp();
  optimizers::Adam eager_opt({.learning_rate = 1e-2}), traced_opt({.learning_rate = 1e-2});
  losses::SparseCategoricalCrossentropy loss_fn({.from_logits = true});
  int traced = 0;
  auto step_of = [&](Sequential& model, optimizers::Optimizer& opt, int* count) {
    return [&model, &opt, &loss_fn, count](const Tensor& x, const Tensor& y) {
      if (count) ++*count;
      std::vector<Variable> vars = model.trainable_weights();
      GradientTape tape;
      Tensor loss = loss_fn(y, model(x, /*training=*/true));
      opt.apply(tape.gradient(loss, vars), vars);
      return loss;
    };
  };
  auto eager_step = step_of(*eager_model, eager_opt, nullptr);
  auto traced_step = ember::function(
      step_of(*traced_model, traced_opt, &traced),
      {.input_signature = std::vector<TensorSpec>{TensorSpec({-1, 784}, DType::Float32, "x"),
                                                  TensorSpec({-1}, DType::Int32, "y")}});
  const std::vector<int64_t> sizes{128, 7, 1, 7, 128, 3};
  for (size_t i = 0; i < sizes.size(); ++i) {
    INFO("batch " << sizes[i]);
    const Batch b = batch(sizes[i], 40 + i);
    CHECK(same_bits(traced_step(b.x, b.y), eager_step(b.x, b.y)));
  }
  CHECK(traced_step.tracing_count() == 1);
  CHECK(traced == 3);  // the trace at 128, and two dry probe traces when batch 7 came
  CHECK(traced_step.concrete_functions().size() == 4);  // 128, and made for 7, 1 and 3
  std::vector<Variable> a = eager_model->weights(), b = traced_model->weights();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) CHECK(same_bits(a[i].value(), b[i].value()));
  CHECK(eager_opt.iterations().value().item<int64_t>() == traced_opt.iterations().value().item<int64_t>());
}

TEST_CASE("a call that does not match an input_signature with unknown dimensions names the argument",
          "[function][unknown_dims]") {
  auto f = ember::function([](const Tensor& x) { return x * 2.0f; },
                           {.input_signature = std::vector<TensorSpec>{TensorSpec({-1, 3}, DType::Float32, "x")}});
  CHECK(f(ops::ones({5, 3})).shape() == Shape{5, 3});
  for (const Tensor& bad : {ops::ones({5}), ops::ones({5, 3}, DType::Int32), ops::ones({5, 4}), ops::ones({5, 3, 1})}) {
    INFO(bad.shape() << " " << dtype_name(bad.dtype()));
    try {
      f(bad);
      FAIL("expected InvalidArgument");
    } catch (const InvalidArgument& e) {
      CHECK(std::string(e.what()).find("argument 'x'") != std::string::npos);
      CHECK(std::string(e.what()).find("shape=(None, 3)") != std::string::npos);
    }
  }
  CHECK(f.tracing_count() == 1);
  CHECK_THROWS_AS(
      ember::function([](const Tensor& x) { return x; }, {.input_signature = std::vector<TensorSpec>{TensorSpec({-2})}}),
      InvalidArgument);
}

TEST_CASE("reduce_retracing generalises the dimensions in which a second trace differs", "[function][unknown_dims]") {
  // A mean over the rows, a reshape to the row count and a fill of it: shapes and a count baked in while traced.
  auto body = [](const Tensor& x) {
    const int64_t n = x.shape()[0];
    Tensor mean = ops::reduce_sum(x, 0) / static_cast<double>(n);
    Tensor flat = ops::reshape(x, {n * x.shape()[1]});
    return ops::reduce_sum(flat) + ops::reduce_sum(ops::ones({n, 2})) + mean;
  };
  auto f = ember::function(body, {.reduce_retracing = true});
  for (int64_t n : {4, 6, 9, 1, 4, 17}) {
    INFO("rows " << n);
    const Tensor x = random::normal({n, 3}, {.seed = static_cast<uint64_t>(n)});
    CHECK(same_bits(f(x), body(x)));
  }
  CHECK(f.tracing_count() == 2);  // the first shape's trace, then the generalised one at 6 rows
  // Another column count differs from the traced ones in both dimensions: rows and columns of other sizes
  // cannot share one unknown size, so it traces for its shape.
  const Tensor wide = random::normal({5, 7}, {.seed = 3});
  CHECK(same_bits(f(wide), body(wide)));
  CHECK(f.tracing_count() == 3);
}

TEST_CASE("a graph that cannot be made for another size traces per shape, and stays right", "[function][unknown_dims]") {
  const std::vector<TensorSpec> spec{TensorSpec({-1, 3}, DType::Float32, "x")};
  SECTION("a constant that is not affine in the size") {
    auto body = [](const Tensor& x) { return x * static_cast<float>(1.0 / static_cast<double>(x.shape()[0])); };
    auto f = ember::function(body, {.input_signature = spec});
    for (int64_t n : {8, 5, 8, 2}) {
      const Tensor x = random::normal({n, 3}, {.seed = static_cast<uint64_t>(n)});
      CHECK(same_bits(f(x), body(x)));
    }
    CHECK(f.tracing_count() == 3);  // 8, 5 and 2
  }
  SECTION("a size rounded to even: the probes take the other parity") {
    auto body = [](const Tensor& x) { return ops::pad(x, {{0, x.shape()[0] % 2}, {0, 0}}) * 2.0f; };
    auto f = ember::function(body, {.reduce_retracing = true});
    for (int64_t n : {4, 6, 8, 5, 7, 10}) {
      INFO("n = " << n);
      const Tensor x = random::normal({n, 3}, {.seed = static_cast<uint64_t>(n)});
      CHECK(same_bits(f(x), body(x)));
    }
  }
  SECTION("a host call returning a tensor: not run by the probes") {
    int host_runs = 0;
    auto body = [&](const Tensor& x) {
      return graph::host_call("double", {x}, [&](std::span<const Tensor> in) {
        ++host_runs;
        return std::vector<Tensor>{in[0] * 2.0f};
      })[0];
    };
    auto f = ember::function(body, {.input_signature = spec});
    for (int64_t n : {8, 5, 8}) {
      const Tensor x = random::normal({n, 3}, {.seed = static_cast<uint64_t>(n)});
      CHECK(same_bits(f(x), x * 2.0f));
    }
    CHECK(f.tracing_count() == 2);
    CHECK(host_runs == 3);  // once per call
  }
}
