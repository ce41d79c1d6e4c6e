#pragma once
// Layer conformance check (Keras's run_layer_test): output shape against compute_output_shape (eager
// and symbolic), weight count and shapes, input and weight gradients against float64 central
// differences, one SGD step lowering a loss, the config round-trip, and the shape check of a built layer.
#include <catch2/catch.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "framework/ember.h"
#include "tests/support/grad_check.h"
#include "tests/support/tensor_testing.h"

namespace ember::testing {

struct LayerTestSpec {
  std::string what;                        // names the case in failure messages
  std::function<LayerPtr()> make;          // a fresh layer; must not set a dtype (the harness picks policies)
  std::vector<Shape> input_shapes;         // concrete shapes (batch included)
  // Input values; default uniform in [-1, 1) of the given dtype (float64 for gradient checks).
  std::function<std::vector<Tensor>(DType)> make_inputs;
  int64_t trainable_weights = 0;
  int64_t non_trainable_weights = 0;
  std::vector<Shape> weight_shapes;        // in weights() order; empty: not checked
  bool training = false;                   // the flag used for the output and gradient checks
  bool check_input_gradients = true;       // integer inputs are skipped anyway
  bool check_weight_gradients = true;
  bool check_training_step = true;         // needs trainable weights
  bool check_bad_input_shape = true;       // a built layer rejects a changed per-sample dimension
  GradCheckOptions grad{.h = 1e-6, .rtol = 1e-5, .atol = 1e-6, .seed = 1234};
  bool check_config = true;                // false only for a layer that cannot be serialized (Lambda)
};

namespace detail_layer_test {

inline std::vector<Tensor> default_inputs(const LayerTestSpec& s, DType dtype) {
  if (s.make_inputs) return s.make_inputs(dtype);
  std::vector<Tensor> xs;
  uint32_t seed = 7;
  for (const Shape& sh : s.input_shapes) xs.push_back(make(uniform_in(sh.num_elements(), -1, 1, seed++), sh, dtype));
  return xs;
}

inline Tensor call(Layer& l, const std::vector<Tensor>& xs, bool training) {
  return xs.size() == 1 ? l(xs[0], training) : l(xs, training);
}

struct PolicyScope {
  explicit PolicyScope(const std::string& name) : old(mixed_precision::global_policy()) {
    mixed_precision::set_global_policy(name);
  }
  ~PolicyScope() { mixed_precision::set_global_policy(old); }
  mixed_precision::Policy old;
};

// Tape gradients of L = sum(y * w) with respect to each variable, against central differences made by
// assigning perturbed values.
inline void check_weight_gradients(const LayerTestSpec& s, Layer& l, const std::vector<Tensor>& xs) {
  std::vector<Variable> vars = l.trainable_weights();
  if (vars.empty()) return;
  std::vector<double> w;
  std::vector<Tensor> grads;
  {
    GradientTape tape;
    Tensor y = call(l, xs, s.training);
    w = uniform_in(y.num_elements(), -1, 1, s.grad.seed);
    std::vector<Tensor> sources(vars.begin(), vars.end());
    GradientOptions go;
    go.output_gradients = {make(w, y.shape(), y.dtype())};
    go.unconnected_gradients = UnconnectedGradients::Zero;
    grads = tape.gradient(y, sources, go);
  }
  for (size_t k = 0; k < vars.size(); ++k) {
    Variable& v = vars[k];
    const Tensor base = v.value().clone();
    std::vector<double> b = values_as_double(base), g = values_as_double(grads[k]);
    int failures = 0;
    for (size_t j = 0; j < b.size() && failures < 5; ++j) {
      std::vector<double> p = b;
      p[j] = b[j] + s.grad.h;
      v.assign(make(p, base.shape(), base.dtype()));
      const double lp = weighted_sum(call(l, xs, s.training), w);
      p[j] = b[j] - s.grad.h;
      v.assign(make(p, base.shape(), base.dtype()));
      const double lm = weighted_sum(call(l, xs, s.training), w);
      const double numeric = (lp - lm) / (2 * s.grad.h);
      const bool ok = std::abs(g[j] - numeric) <= s.grad.atol + s.grad.rtol * std::abs(numeric);
      if (!ok) ++failures;
      INFO(s.what << ": weight " << v.name() << " element " << j << ": tape " << g[j] << ", numeric " << numeric);
      CHECK(ok);
    }
    v.assign(base);
  }
}

}  // namespace detail_layer_test

// Runs every conformance check on the layer the spec makes.
inline void run_layer_test(const LayerTestSpec& s) {
  using namespace detail_layer_test;
  INFO("layer test: " << s.what);

  // 1. float32: output shape vs compute_output_shape, weights, symbolic call.
  {
    LayerPtr l = s.make();
    std::vector<Tensor> xs = default_inputs(s, DType::Float32);
    Tensor y = call(*l, xs, s.training);
    REQUIRE(l->built());
    std::vector<Shape> shapes;
    for (const Tensor& x : xs) {
      Shape sh = x.shape();
      sh[0] = -1;
      shapes.push_back(sh);
    }
    Shape expected = shapes.size() == 1 ? l->compute_output_shape(shapes[0]) : l->compute_output_shape(shapes);
    CHECK(expected[0] == -1);
    expected[0] = y.shape()[0];
    CHECK(y.shape() == expected);
    CHECK(static_cast<int64_t>(l->trainable_weights().size()) == s.trainable_weights);
    CHECK(static_cast<int64_t>(l->non_trainable_weights().size()) == s.non_trainable_weights);
    if (!s.weight_shapes.empty()) {
      std::vector<Variable> ws = l->weights();
      REQUIRE(ws.size() == s.weight_shapes.size());
      for (size_t i = 0; i < ws.size(); ++i) CHECK(ws[i].shape() == s.weight_shapes[i]);
    }
    int64_t params = 0;
    for (const Variable& v : l->weights()) params += v.shape().num_elements();
    CHECK(l->count_params() == params);

    // The same layer class called symbolically gives the same per-sample shape.
    LayerPtr sym = s.make();
    std::vector<Tensor> ins;
    for (size_t i = 0; i < xs.size(); ++i) {
      Shape per_sample(xs[i].shape().begin() + 1, xs[i].shape().end());
      ins.push_back(layers::Input(per_sample, {.batch_size = -1, .dtype = xs[i].dtype(), .name = ""}));
    }
    Tensor ys = ins.size() == 1 ? (*sym)(ins[0]) : (*sym)(ins);
    CHECK(ys.is_symbolic());
    Shape eager = y.shape();
    eager[0] = -1;
    CHECK(ys.shape() == eager);

    // 2. config round-trip: an equal, unbuilt layer.
    if (s.check_config) {
      nlohmann::json config = l->get_config();
      LayerPtr again = deserialize_layer(serialize_layer(*l));
      CHECK(again->class_name() == l->class_name());
      CHECK(again->get_config() == config);
      CHECK_FALSE(again->built());
    }

    // 3. A built layer rejects an input whose per-sample shape changed.
    if (s.check_bad_input_shape) {
      std::vector<Tensor> bad = xs;
      Shape sh = bad[0].shape();
      sh[sh.rank() - 1] += 1;
      bad[0] = ops::zeros(sh, bad[0].dtype());
      CHECK_THROWS_AS(call(*l, bad, s.training), InvalidArgument);
    }
  }

  // 4. Gradients in float64.
  {
    PolicyScope policy("float64");
    LayerPtr l = s.make();
    std::vector<Tensor> xs = default_inputs(s, DType::Float64);
    call(*l, xs, s.training);  // build
    if (s.check_input_gradients) {
      check_gradients(s.what + " (input gradients)",
                      [&](const std::vector<Tensor>& in) { return call(*l, in, s.training); }, xs, s.grad);
    }
    if (s.check_weight_gradients) check_weight_gradients(s, *l, xs);
  }

  // 5. One SGD step on mean((y - t)^2) lowers it.
  if (s.check_training_step && s.trainable_weights > 0) {
    LayerPtr l = s.make();
    std::vector<Tensor> xs = default_inputs(s, DType::Float32);
    Tensor y0 = call(*l, xs, s.training);
    Tensor target = make(uniform_in(y0.num_elements(), -1, 1, 99), y0.shape(), DType::Float32);
    auto loss_of = [&] { return ops::reduce_mean(ops::square(call(*l, xs, s.training) - target)); };
    std::vector<Variable> vars = l->trainable_weights();
    float before;
    std::vector<Tensor> grads;
    {
      GradientTape tape;
      Tensor loss = loss_of();
      before = loss.item<float>();
      grads = tape.gradient(loss, std::vector<Tensor>(vars.begin(), vars.end()));
    }
    for (size_t i = 0; i < vars.size(); ++i)
      if (grads[i].defined()) vars[i].assign_sub(grads[i] * 0.01);
    const float after = loss_of().item<float>();
    INFO("loss before " << before << ", after one SGD step " << after);
    CHECK(after < before);
  }
}

}  // namespace ember::testing
