// Backward formulas of the elementwise ops against central differences in float64, broadcasting
// included, plus TF's conventions at ties and kinks and the cast error.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "framework/ember.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using ember::testing::make;
using ember::testing::uniform_values;
using ember::testing::values_as_double;

namespace {

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;
struct Input {
  std::vector<double> values;
  Shape shape;
};

// Compares the tape's gradient of reduce_sum(f(inputs) * w), w a fixed random weight, with central
// differences (h = 1e-6) for every element of every input.
void check_gradients(const Fn& f, const std::vector<Input>& inputs) {
  constexpr double h = 1e-6;
  std::vector<Tensor> xs;
  for (const Input& in : inputs) xs.push_back(make(in.values, in.shape, DType::Float64));
  const Tensor out = f(xs);
  const Tensor w = make(uniform_values(out.num_elements(), 7), out.shape(), DType::Float64);
  auto loss = [&](const std::vector<Tensor>& a) { return ops::reduce_sum(f(a) * w); };

  std::vector<Tensor> grads;
  {
    GradientTape tape;
    for (const Tensor& x : xs) tape.watch(x);
    grads = tape.gradient(loss(xs), xs);
  }
  for (size_t i = 0; i < xs.size(); ++i) {
    INFO("input " << i);
    REQUIRE(grads[i].defined());
    REQUIRE(grads[i].dtype() == DType::Float64);
    REQUIRE(grads[i].shape() == inputs[i].shape);
    const std::vector<double> g = values_as_double(grads[i]);
    for (size_t k = 0; k < g.size(); ++k) {
      std::vector<Tensor> plus = xs, minus = xs;
      std::vector<double> v = inputs[i].values;
      v[k] += h;
      plus[i] = make(v, inputs[i].shape, DType::Float64);
      v[k] -= 2 * h;
      minus[i] = make(v, inputs[i].shape, DType::Float64);
      const double fd = (loss(plus).item<double>() - loss(minus).item<double>()) / (2 * h);
      INFO("element " << k << " at " << inputs[i].values[k]);
      CHECK(g[k] == Approx(fd).epsilon(1e-5).margin(1e-6));
    }
  }
}

Fn unary(Tensor (*op)(const Tensor&)) {
  return [op](const std::vector<Tensor>& a) { return op(a[0]); };
}
Fn binary(Tensor (*op)(const Tensor&, const Tensor&)) {
  return [op](const std::vector<Tensor>& a) { return op(a[0], a[1]); };
}

std::vector<double> mapped(std::vector<double> v, double (*m)(double)) {
  for (double& x : v) x = m(x);
  return v;
}

}  // namespace

TEST_CASE("unary elementwise gradients match central differences", "[autodiff][grads][elementwise]") {
  const std::vector<double> x = {-1.7, -0.6, 0.3, 0.9, 2.2, -3.1};
  const std::vector<double> pos = {0.3, 0.7, 1.2, 2.5, 4.0, 0.9};
  struct Case {
    const char* name;
    Fn fn;
    std::vector<double> values;
  };
  const std::vector<Case> cases = {
      {"neg", unary(ops::neg), x},
      {"abs", unary(ops::abs), x},
      {"exp", unary(ops::exp), x},
      {"log", unary(ops::log), pos},
      {"log1p", unary(ops::log1p), {-0.5, -0.2, 0.3, 1.5, 4.0, 0.9}},
      {"sqrt", unary(ops::sqrt), pos},
      {"rsqrt", unary(ops::rsqrt), pos},
      {"square", unary(ops::square), x},
      {"reciprocal", unary(ops::reciprocal), {-2.0, -0.7, 0.3, 1.2, 2.5, 4.0}},
      {"sin", unary(ops::sin), x},
      {"cos", unary(ops::cos), x},
      {"tanh", unary(ops::tanh), x},
      {"sigmoid", unary(ops::sigmoid), x},
      {"relu", unary(ops::relu), x},
      {"relu6", unary(ops::relu6), {-1.5, 0.5, 3.0, 5.5, 6.5, 8.0}},
      {"elu", unary(ops::elu), x},
      {"selu", unary(ops::selu), x},
      {"gelu", [](const std::vector<Tensor>& a) { return ops::gelu(a[0]); }, {-5.0, -1.7, -0.6, 0.0, 0.9, 2.2}},
      {"gelu approximate", [](const std::vector<Tensor>& a) { return ops::gelu(a[0], true); },
       {-5.0, -1.7, -0.6, 0.0, 0.9, 2.2}},
      {"softplus", unary(ops::softplus), {-40.0, -1.7, -0.6, 0.3, 2.2, 40.0}},
      {"softsign", unary(ops::softsign), x},
      {"swish", unary(ops::swish), x},
      {"cast to float64", [](const std::vector<Tensor>& a) { return ops::cast(a[0], DType::Float64); }, x},
  };
  for (const Case& c : cases) {
    SECTION(c.name) { check_gradients(c.fn, {{c.values, Shape{2, 3}}}); }
  }
}

TEST_CASE("binary elementwise gradients match central differences, broadcasting included",
          "[autodiff][grads][elementwise]") {
  auto any = [](double v) { return 2 * v; };
  auto away_from_zero = [](double v) { return v < 0 ? v - 0.5 : v + 0.5; };
  auto positive = [](double v) { return 1.5 + v; };
  struct Case {
    const char* name;
    Fn fn;
    double (*a_map)(double);
    double (*b_map)(double);
  };
  const std::vector<Case> cases = {
      {"add", binary(ops::add), any, any},
      {"sub", binary(ops::sub), any, any},
      {"mul", binary(ops::mul), any, any},
      {"div", binary(ops::div), any, away_from_zero},
      {"mod", binary(ops::mod), [](double v) { return 5 * v; }, away_from_zero},
      {"pow", binary(ops::pow), positive, any},
      {"maximum", binary(ops::maximum), any, any},
      {"minimum", binary(ops::minimum), any, any},
      {"squared_difference", binary(ops::squared_difference), any, any},
  };
  // (a shape, b shape): equal, b broadcast along rows, both broadcast, b a scalar, a a scalar.
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {Shape{2, 3}, Shape{2, 3}}, {Shape{2, 3}, Shape{3}}, {Shape{2, 1}, Shape{1, 3}},
      {Shape{2, 3}, Shape{}},     {Shape{}, Shape{2, 3}}};
  for (const Case& c : cases) {
    SECTION(c.name) {
      for (const auto& [sa, sb] : shapes) {
        INFO("shapes " << sa << " and " << sb);
        check_gradients(c.fn, {{mapped(uniform_values(sa.num_elements(), 11), c.a_map), sa},
                               {mapped(uniform_values(sb.num_elements(), 23), c.b_map), sb}});
      }
    }
  }
}

TEST_CASE("where and clip_by_value gradients match central differences", "[autodiff][grads][elementwise]") {
  SECTION("where: cond picks a or b, both broadcast") {
    const Tensor cond = make({1, 0, 1, 0, 0, 1}, Shape{2, 3}, DType::Bool);
    const Tensor cond_row = make({0, 1, 1}, Shape{3}, DType::Bool);
    check_gradients([&](const std::vector<Tensor>& a) { return ops::where(cond, a[0], a[1]); },
                    {{uniform_values(6, 3), Shape{2, 3}}, {uniform_values(3, 4), Shape{3}}});
    check_gradients([&](const std::vector<Tensor>& a) { return ops::where(cond_row, a[0], a[1]); },
                    {{uniform_values(2, 5), Shape{2, 1}}, {uniform_values(1, 6), Shape{}}});
  }
  SECTION("where: the condition takes no gradient") {
    Tensor cond = make({1, 0, 1}, Shape{3}, DType::Bool);
    Tensor a = make({1, 2, 3}, Shape{3}, DType::Float64);
    Tensor b = make({4, 5, 6}, Shape{3}, DType::Float64);
    GradientTape tape;
    tape.watch(cond);
    tape.watch(a);
    std::vector<Tensor> g = tape.gradient(ops::reduce_sum(ops::where(cond, a, b)), {cond, a});
    CHECK_FALSE(g[0].defined());
    CHECK(values_as_double(g[1]) == std::vector<double>{1, 0, 1});
  }
  SECTION("clip_by_value: x inside, below and above; bounds broadcast") {
    check_gradients([](const std::vector<Tensor>& a) { return ops::clip_by_value(a[0], a[1], a[2]); },
                    {{{-0.9, -0.2, 0.7, 0.1, 0.65, 1.3}, Shape{2, 3}}, {{-0.5}, Shape{}}, {{0.4, 0.6, 0.8}, Shape{3}}});
  }
}

TEST_CASE("elementwise gradients follow TF at ties and kinks", "[autodiff][grads][elementwise]") {
  auto grads_of = [](const std::function<Tensor(const Tensor&, const Tensor&)>& f, std::vector<double> av,
                     std::vector<double> bv) {
    Tensor a = make(av, Shape{static_cast<int64_t>(av.size())}, DType::Float64);
    Tensor b = make(bv, Shape{static_cast<int64_t>(bv.size())}, DType::Float64);
    GradientTape tape;
    tape.watch(a);
    tape.watch(b);
    std::vector<Tensor> g = tape.gradient(ops::reduce_sum(f(a, b)), {a, b});
    return std::make_pair(values_as_double(g[0]), values_as_double(g[1]));
  };
  using V = std::vector<double>;
  SECTION("maximum and minimum give ties to x") {
    CHECK(grads_of(ops::maximum, {1, 2, 3}, {1, 5, 0}) == std::make_pair(V{1, 0, 1}, V{0, 1, 0}));
    CHECK(grads_of(ops::minimum, {1, 2, 3}, {1, 5, 0}) == std::make_pair(V{1, 1, 0}, V{0, 0, 1}));
  }
  SECTION("clip_by_value passes dy at the bounds themselves") {
    CHECK(grads_of([](const Tensor& x, const Tensor& lo) { return ops::clip_by_value(x, lo, lo + 1.0); }, {0, 1, 2},
                   {0, 0, 0}) == std::make_pair(V{1, 1, 0}, V{0, 0, 1}));
  }
  SECTION("pow: no exponent gradient where the base is not positive") {
    auto [gx, gy] = grads_of(ops::pow, {-2, 0}, {3, 2});
    CHECK(gx == V{12, 0});
    CHECK(gy == V{0, 0});
  }
  SECTION("relu, relu6 and abs at their kinks") {
    auto unary_grad = [](Tensor (*op)(const Tensor&), V xv) {
      Tensor x = make(xv, Shape{static_cast<int64_t>(xv.size())}, DType::Float64);
      GradientTape tape;
      tape.watch(x);
      return values_as_double(tape.gradient(ops::reduce_sum(op(x)), {x})[0]);
    };
    CHECK(unary_grad(ops::relu, {-1, 0, 1}) == V{0, 0, 1});
    CHECK(unary_grad(ops::relu6, {0, 3, 6}) == V{0, 1, 0});
    CHECK(unary_grad(ops::abs, {-2, 0, 2}) == V{-1, 0, 1});
  }
}

TEST_CASE("cast's gradient returns in the input dtype and carries none through integer tensors", "[autodiff][grads][elementwise]") {
  Tensor x = make({0.5, -1.25, 3.0}, Shape{3}, DType::Float64);
  SECTION("float64 -> float32 -> gradient in float64") {
    GradientTape tape;
    tape.watch(x);
    Tensor y = ops::cast(x, DType::Float32);
    Tensor w = make({2, 3, -4}, Shape{3}, DType::Float32);
    Tensor g = tape.gradient(ops::reduce_sum(y * w), {x})[0];
    REQUIRE(g.dtype() == DType::Float64);
    CHECK(values_as_double(g) == std::vector<double>{2, 3, -4});
  }
  SECTION("an integer tensor carries no gradient, as in TF: only the direct path counts") {
    GradientTape tape;
    tape.watch(x);
    Tensor z = ops::cast(ops::cast(x, DType::Int32), DType::Float64);
    Tensor target = ops::reduce_sum(z * x);
    Tensor g = tape.gradient(target, {x})[0];
    REQUIRE(g.defined());
    CHECK(values_as_double(g) == values_as_double(z));  // d/dx of z * x with z held constant
  }
  SECTION("a bool mask carries no gradient (the masked-loss pattern)") {
    GradientTape tape;
    tape.watch(x);
    Tensor y = ops::square(x);
    Tensor mask = ops::cast(ops::greater(y, Tensor::scalar_of(2.0, DType::Float64)), DType::Float64);
    Tensor g = tape.gradient(ops::reduce_sum(y * mask), {x})[0];
    REQUIRE(g.defined());
    CHECK(values_as_double(g) == values_as_double(x * 2.0 * mask));
  }
  SECTION("a source reached only through an integer tensor: no gradient (None)") {
    GradientTape tape;
    tape.watch(x);
    Tensor target = ops::reduce_sum(ops::cast(ops::cast(x, DType::Int32), DType::Float64));
    CHECK_FALSE(tape.gradient(target, {x})[0].defined());
  }
}

TEST_CASE("elementwise gradients differentiate again (second order)", "[autodiff][grads][elementwise]") {
  // d2/dx2 against central differences of the first derivative.
  struct Case {
    const char* name;
    Tensor (*op)(const Tensor&);
  };
  const std::vector<Case> cases = {{"tanh", ops::tanh},       {"sigmoid", ops::sigmoid}, {"exp", ops::exp},
                                   {"softplus", ops::softplus}, {"swish", ops::swish},     {"elu", ops::elu},
                                   {"gelu", [](const Tensor& t) { return ops::gelu(t); }}};
  const std::vector<double> xv = {-1.3, -0.4, 0.6, 1.7};
  for (const Case& c : cases) {
    SECTION(c.name) {
      auto first = [&](const Tensor& x) {
        GradientTape inner;
        inner.watch(x);
        return inner.gradient(ops::reduce_sum(c.op(x)), {x})[0];
      };
      check_gradients([&](const std::vector<Tensor>& a) { return first(a[0]); }, {{xv, Shape{4}}});
    }
  }
}
