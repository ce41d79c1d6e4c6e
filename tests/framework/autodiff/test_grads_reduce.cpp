// Backward formulas of reductions, matmul, softmax and log_softmax against float64 central
// differences (with a random output gradient, so each formula sees a non-trivial dy), plus exact
// values where the function has a kink (ties of max/min) and second-order checks through nested tapes.
#include <functional>

#include "framework/ops/dispatch.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using ember::testing::check_tensor;
using ember::testing::make;
using ember::testing::uniform_values;
using ember::testing::values_as_double;

namespace {

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

Tensor random_tensor(const Shape& shape, uint32_t seed) {
  return make(uniform_values(shape.num_elements(), seed), shape, DType::Float64);
}

// sum(f(xs) * w) as a double. Not under a NoRecordScope: that would also pause the inner tapes of
// the second-order checks; fresh unwatched tensors are not recorded anyway.
double weighted_sum(const Fn& f, const std::vector<Tensor>& xs, const Tensor& w) {
  return ember::testing::dot(values_as_double(f(xs)), values_as_double(w));
}

// Compares the tape's gradient of f at xs (output gradient w, random) with central differences.
void check_gradients(const Fn& f, const std::vector<Tensor>& xs, uint32_t seed = 7, double eps = 1e-6,
                     double tol = 1e-7) {
  Tensor y0 = f(xs);
  Tensor w = random_tensor(y0.shape(), seed);
  GradientTape tape;
  for (const Tensor& x : xs) tape.watch(x);
  Tensor y = f(xs);
  REQUIRE(y.shape() == y0.shape());
  std::vector<Tensor> grads =
      tape.gradient(y, xs, {.output_gradients = {w}, .unconnected_gradients = UnconnectedGradients::Zero});
  REQUIRE(grads.size() == xs.size());
  for (size_t k = 0; k < xs.size(); ++k) {
    INFO("input " << k << " of shape " << xs[k].shape());
    REQUIRE(grads[k].defined());
    std::vector<double> base = values_as_double(xs[k]);
    std::vector<double> numeric(base.size());
    for (size_t i = 0; i < base.size(); ++i) {
      std::vector<Tensor> plus = xs, minus = xs;
      std::vector<double> vp = base, vm = base;
      vp[i] += eps;
      vm[i] -= eps;
      plus[k] = make(vp, xs[k].shape(), DType::Float64);
      minus[k] = make(vm, xs[k].shape(), DType::Float64);
      numeric[i] = (weighted_sum(f, plus, w) - weighted_sum(f, minus, w)) / (2 * eps);
    }
    check_tensor(grads[k], DType::Float64, xs[k].shape(), numeric, tol, tol);
  }
}

struct AxesCase {
  std::vector<int64_t> axes;
  bool keepdims;
};

const std::vector<AxesCase> kAxesCases = {
    {{}, false},    {{0}, false},     {{1}, true},        {{-1}, false},     {{0, 2}, false},
    {{2, 0}, true}, {{-1, 1}, false}, {{0, 1, 2}, false}, {{0, 1, 2}, true},
};

using Reducer = Tensor (*)(const Tensor&, ops::Axes, bool);

void check_reducer(Reducer r, double lo_shift = 0) {
  Tensor x = random_tensor({2, 3, 4}, 11);
  if (lo_shift != 0) x = x + lo_shift;
  for (const AxesCase& c : kAxesCases) {
    INFO("axes " << Shape(c.axes) << ", keepdims " << c.keepdims);
    check_gradients([&](const std::vector<Tensor>& in) { return r(in[0], ops::Axes(c.axes), c.keepdims); }, {x});
  }
  INFO("all axes (axis=None)");
  check_gradients([&](const std::vector<Tensor>& in) { return r(in[0], ops::Axes(), false); }, {x});
}

}  // namespace

TEST_CASE("reduce_sum gradient: axis sets, negative axes, keepdims", "[autodiff][grads]") {
  check_reducer(&ops::reduce_sum);
}

TEST_CASE("reduce_mean gradient: axis sets, negative axes, keepdims", "[autodiff][grads]") {
  check_reducer(&ops::reduce_mean);
}

TEST_CASE("reduce_max and reduce_min gradients without ties", "[autodiff][grads]") {
  check_reducer(&ops::reduce_max);
  check_reducer(&ops::reduce_min);
}

TEST_CASE("reduce_prod gradient: random values, one zero and two zeros in a slice", "[autodiff][grads]") {
  check_reducer(&ops::reduce_prod, 1.5);  // away from zero
  // Row 0: one zero (its gradient is the product of the others); row 1: two zeros (all zero);
  // row 2: none. prod is multilinear, so central differences are exact even at zeros.
  Tensor x = make({2, 0, -3, 0.5, 0, 4, 0, 1.5, 1.5, -2, 0.5, 3}, {3, 4}, DType::Float64);
  for (bool keepdims : {false, true}) {
    check_gradients([&](const std::vector<Tensor>& in) { return ops::reduce_prod(in[0], 1, keepdims); }, {x});
    check_gradients([&](const std::vector<Tensor>& in) { return ops::reduce_prod(in[0], 0, keepdims); }, {x});
  }
  check_gradients([&](const std::vector<Tensor>& in) { return ops::reduce_prod(in[0]); }, {x});
  GradientTape tape;
  tape.watch(x);
  Tensor y = ops::reduce_prod(x, 1);
  check_tensor(tape.gradient(y, {x})[0], DType::Float64, {3, 4}, {0, -3, 0, 0, 0, 0, 0, 0, -3, 2.25, -9, -1.5});
}

TEST_CASE("reduce_max and reduce_min split the gradient evenly among ties", "[autodiff][grads]") {
  Tensor x = make({1, 3, 3, 2, 2, 2}, {2, 3}, DType::Float64);
  Tensor dy = make({2, 3}, {2}, DType::Float64);
  {
    GradientTape tape;
    tape.watch(x);
    Tensor y = ops::reduce_max(x, -1);
    check_tensor(tape.gradient(y, {x}, {.output_gradients = {dy}})[0], DType::Float64, {2, 3}, {0, 1, 1, 1, 1, 1});
  }
  {
    GradientTape tape;
    tape.watch(x);
    Tensor y = ops::reduce_min(x, 1, /*keepdims=*/true);
    check_tensor(tape.gradient(y, {x})[0], DType::Float64, {2, 3}, {1, 0, 0, 1.0 / 3, 1.0 / 3, 1.0 / 3});
  }
  {
    GradientTape tape;
    tape.watch(x);
    Tensor y = ops::reduce_max(x);  // the two 3s share the gradient
    check_tensor(tape.gradient(y, {x})[0], DType::Float64, {2, 3}, {0, 0.5, 0.5, 0, 0, 0});
  }
}

TEST_CASE("reduce gradients in float32 keep the dtype", "[autodiff][grads]") {
  Tensor x = make({1, 5, 2, 4, 3, 6}, {2, 3}, DType::Float32);
  GradientTape tape({.persistent = true});
  tape.watch(x);
  Tensor s = ops::reduce_mean(x, 0);
  Tensor m = ops::reduce_max(x, 1);
  Tensor p = ops::reduce_prod(x, 1, true);
  check_tensor(tape.gradient(s, {x})[0], DType::Float32, {2, 3}, {0.5, 0.5, 0.5, 0.5, 0.5, 0.5});
  check_tensor(tape.gradient(m, {x})[0], DType::Float32, {2, 3}, {0, 1, 0, 0, 0, 1});
  check_tensor(tape.gradient(p, {x})[0], DType::Float32, {2, 3}, {10, 2, 5, 18, 24, 12}, 1e-6);
}

TEST_CASE("matmul gradient: every transpose combination, batched with broadcast batch dims", "[autodiff][grads]") {
  struct Case {
    Shape a, b;  // shapes of c = op(a) @ op(b) with m = 2, k = 3, n = 4 before transposes
  };
  const std::vector<Case> cases = {
      {{2, 3}, {3, 4}},       {{5, 2, 3}, {5, 3, 4}},       {{5, 2, 3}, {3, 4}},
      {{2, 3}, {2, 5, 3, 4}}, {{1, 5, 2, 3}, {2, 1, 3, 4}}, {{2, 1, 2, 3}, {5, 3, 4}},
  };
  uint32_t seed = 1;
  for (const Case& c : cases) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        Shape sa = c.a, sb = c.b;
        if (ta) std::swap(sa[sa.rank() - 1], sa[sa.rank() - 2]);
        if (tb) std::swap(sb[sb.rank() - 1], sb[sb.rank() - 2]);
        INFO("a " << sa << " b " << sb << " transpose_a " << ta << " transpose_b " << tb);
        Tensor a = random_tensor(sa, seed++), b = random_tensor(sb, seed++);
        check_gradients(
            [&](const std::vector<Tensor>& in) {
              return ops::matmul(in[0], in[1], {.transpose_a = ta, .transpose_b = tb});
            },
            {a, b}, seed++);
      }
    }
  }
}

TEST_CASE("softmax and log_softmax gradients along every axis", "[autodiff][grads]") {
  Tensor x = random_tensor({2, 3, 4}, 21) * 3.0;
  for (int64_t axis : {0, 1, 2, -1, -2}) {
    INFO("axis " << axis);
    check_gradients([&](const std::vector<Tensor>& in) { return ops::softmax(in[0], axis); }, {x}, 5);
    check_gradients([&](const std::vector<Tensor>& in) { return ops::log_softmax(in[0], axis); }, {x}, 6);
  }
  // Softmax is invariant to shifting the logits, so a plain sum of its outputs has zero gradient.
  GradientTape tape;
  tape.watch(x);
  Tensor y = ops::reduce_sum(ops::softmax(x));
  check_tensor(tape.gradient(y, {x})[0], DType::Float64, x.shape(), std::vector<double>(24, 0.0), 0, 1e-12);
}

TEST_CASE("second-order gradients through nested tapes", "[autodiff][grads]") {
  // The first-order gradient, itself computed on a tape, is differentiated again by central
  // differences of that first-order gradient.
  auto first_order = [](const Fn& f) {
    return [f](const std::vector<Tensor>& in) {
      GradientTape inner;
      for (const Tensor& x : in) inner.watch(x);
      Tensor y = f(in);
      Tensor w = random_tensor(y.shape(), 99);
      return inner.gradient(y, {in[0]}, {.output_gradients = {w}})[0];
    };
  };
  Tensor x = random_tensor({2, 3}, 31) + 1.5;
  Tensor b = random_tensor({3, 2}, 32);
  check_gradients(first_order([](const std::vector<Tensor>& in) { return ops::softmax(in[0], 1); }), {x}, 8, 1e-5,
                  1e-6);
  check_gradients(first_order([](const std::vector<Tensor>& in) { return ops::log_softmax(in[0], 0); }), {x}, 8, 1e-5,
                  1e-6);
  check_gradients(first_order([](const std::vector<Tensor>& in) { return ops::reduce_prod(in[0], 1); }), {x}, 8, 1e-5,
                  1e-6);
  check_gradients(first_order([](const std::vector<Tensor>& in) { return ops::reduce_mean(in[0], 0); }), {x}, 8, 1e-5,
                  1e-6);
  check_gradients(first_order([](const std::vector<Tensor>& in) { return ops::square(ops::matmul(in[0], in[1])); }),
                  {x, b}, 8, 1e-5, 1e-6);
}

namespace {
int broadcasts = 0;
void count_broadcasts(const OpRecord& r) { broadcasts += r.op == OpId::broadcast_to; }
}  // namespace

TEST_CASE("reduce_sum and reduce_mean gradients skip the broadcast when the reduced dimensions have size 1",
          "[autodiff][grads][reduce]") {
  // A batch-1 loss's sum over the batch: the gradient only needs the reshape.
  for (const Shape& shape : {Shape{1}, Shape{1, 3}, Shape{2, 3}}) {
    const Tensor x = make(uniform_values(shape.num_elements(), 5), shape, DType::Float32);
    for (bool mean : {false, true}) {
      GradientTape tape;
      tape.watch(x);
      const Tensor y = mean ? ops::reduce_mean(x, {0}) : ops::reduce_sum(x, {0});
      const int hook = add_op_hook(count_broadcasts);
      broadcasts = 0;
      const Tensor g = tape.gradient(y, {x})[0];
      remove_op_hook(hook);
      INFO(shape << (mean ? " mean" : " sum"));
      CHECK(broadcasts == (shape[0] == 1 ? 0 : 1));
      REQUIRE(g.shape() == shape);
      const double expected = mean ? 1.0 / static_cast<double>(shape[0]) : 1.0;
      for (double v : values_as_double(g)) CHECK(v == Approx(expected));
    }
  }
}
