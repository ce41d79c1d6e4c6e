// Backward formulas of conv2d, pooling and their gradient ops: float64 central differences against the tape
// (strides, SAME/VALID, dilation, groups), first maximum routing, and second order through nested tapes.
#include <algorithm>
#include <functional>
#include <limits>
#include <optional>

#include "framework/ops/dispatch.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using ember::testing::check_tensor;
using ember::testing::make;
using ember::testing::uniform_values;
using ember::testing::values_as_double;

namespace {

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

// <f(inputs), w> in double.
double weighted(const Fn& f, const std::vector<Tensor>& inputs, const std::vector<double>& w) {
  return ember::testing::dot(values_as_double(f(inputs)), w);
}

// Checks the tape's d<f, w>/d inputs[i] for every i in wrt against central differences (f must be smooth
// near inputs; float64 inputs).
void check_gradients(const Fn& f, const std::vector<Tensor>& inputs, const std::vector<size_t>& wrt, uint32_t seed = 7) {
  Tensor y0 = f(inputs);
  std::vector<double> w = uniform_values(y0.num_elements(), seed);
  Tensor wt = make(w, y0.shape(), DType::Float64);
  std::vector<Tensor> sources;
  for (size_t i : wrt) sources.push_back(inputs[i]);
  std::vector<Tensor> grads;
  {
    GradientTape tape;
    for (const Tensor& s : sources) tape.watch(s);
    Tensor y = f(inputs);
    grads = tape.gradient(y, sources, {.output_gradients = {wt}});
  }
  const double h = 1e-6;
  for (size_t k = 0; k < wrt.size(); ++k) {
    size_t i = wrt[k];
    INFO("input " << i << " of shape " << inputs[i].shape());
    REQUIRE(grads[k].defined());
    REQUIRE(grads[k].shape() == inputs[i].shape());
    std::vector<double> base = values_as_double(inputs[i]), got = values_as_double(grads[k]);
    for (size_t e = 0; e < base.size(); ++e) {
      std::vector<Tensor> plus(inputs), minus(inputs);
      std::vector<double> vp(base), vm(base);
      vp[e] += h;
      vm[e] -= h;
      plus[i] = make(vp, inputs[i].shape(), DType::Float64);
      minus[i] = make(vm, inputs[i].shape(), DType::Float64);
      double numeric = (weighted(f, plus, w) - weighted(f, minus, w)) / (2 * h);
      INFO("element " << e << ": tape " << got[e] << ", numeric " << numeric);
      CHECK(std::abs(got[e] - numeric) <= 1e-6 + 1e-6 * std::abs(numeric));
    }
  }
}

Tensor random_tensor(const Shape& s, uint32_t seed) { return make(uniform_values(s.num_elements(), seed), s, DType::Float64); }

struct ConvCase {
  Shape input, filters;
  ops::Conv2DOptions options;
};

const std::vector<ConvCase> kConvCases = {
    {{2, 5, 5, 2}, {3, 3, 2, 3}, {}},
    {{1, 6, 5, 2}, {3, 2, 2, 2}, {.strides = {2, 2}, .padding = "SAME"}},
    {{1, 5, 6, 3}, {2, 3, 3, 2}, {.strides = {2, 1}, .padding = "VALID"}},
    {{1, 7, 6, 2}, {3, 2, 2, 2}, {.padding = "SAME", .dilations = {2, 2}}},
    {{1, 7, 7, 1}, {2, 2, 1, 2}, {.padding = "VALID", .dilations = {2, 3}}},
    {{2, 5, 4, 4}, {3, 3, 2, 4}, {.padding = "SAME"}},                   // groups 2
    {{1, 6, 6, 4}, {2, 2, 2, 2}, {.strides = {2, 2}, .padding = "VALID"}},  // groups 2, stride 2
};

std::string describe(const ConvCase& c) {
  std::ostringstream os;
  os << "input " << c.input << " filters " << c.filters << " strides " << c.options.strides[0] << ","
     << c.options.strides[1] << " " << c.options.padding << " dilations " << c.options.dilations[0] << ","
     << c.options.dilations[1];
  return os.str();
}

struct PoolCase {
  Shape input;
  std::array<int64_t, 2> ksize;
  ops::Pool2DOptions options;
};

const std::vector<PoolCase> kPoolCases = {
    {{2, 4, 4, 2}, {2, 2}, {.strides = {2, 2}}},
    {{1, 5, 5, 2}, {3, 3}, {.strides = {2, 2}, .padding = "SAME"}},
    {{1, 5, 4, 1}, {2, 3}, {.padding = "SAME"}},
    {{1, 6, 5, 3}, {3, 2}, {.strides = {1, 2}, .padding = "VALID"}},
};

}  // namespace

TEST_CASE("conv2d gradients match central differences", "[autodiff][grads][nn]") {
  for (const ConvCase& c : kConvCases) {
    INFO(describe(c));
    Tensor x = random_tensor(c.input, 1), w = random_tensor(c.filters, 2);
    check_gradients([&](const std::vector<Tensor>& in) { return ops::conv2d(in[0], in[1], c.options); }, {x, w},
                    {0, 1});
  }
}

TEST_CASE("conv2d_backprop_input and conv2d_backprop_filter gradients", "[autodiff][grads][nn]") {
  for (const ConvCase& c : kConvCases) {
    INFO(describe(c));
    Tensor x = random_tensor(c.input, 3), w = random_tensor(c.filters, 4);
    Tensor dy = random_tensor(ops::conv2d(x, w, c.options).shape(), 5);
    Shape xs = c.input, ws = c.filters;
    check_gradients(
        [&](const std::vector<Tensor>& in) { return ops::conv2d_backprop_input(xs, in[0], in[1], c.options); }, {w, dy},
        {0, 1});
    check_gradients(
        [&](const std::vector<Tensor>& in) { return ops::conv2d_backprop_filter(in[0], ws, in[1], c.options); },
        {x, dy}, {0, 1});
  }
}

TEST_CASE("pooling gradients match central differences", "[autodiff][grads][nn]") {
  for (const PoolCase& c : kPoolCases) {
    INFO("input " << c.input << " ksize " << c.ksize[0] << "x" << c.ksize[1] << " " << c.options.padding);
    // Distinct values, far apart relative to the step, so no window's maximum changes under perturbation.
    Tensor x = random_tensor(c.input, 11);
    check_gradients([&](const std::vector<Tensor>& in) { return ops::max_pool2d(in[0], c.ksize, c.options); }, {x},
                    {0});
    check_gradients([&](const std::vector<Tensor>& in) { return ops::avg_pool2d(in[0], c.ksize, c.options); }, {x},
                    {0});
    Tensor y = ops::max_pool2d(x, c.ksize, c.options);
    Tensor g = random_tensor(y.shape(), 12);
    Shape xs = c.input;
    check_gradients([&](const std::vector<Tensor>& in) { return ops::avg_pool2d_grad(xs, in[0], c.ksize, c.options); },
                    {g}, {0});
    // max_pool2d_grad is linear in grad (checked numerically) and piecewise constant in orig_input/orig_output.
    check_gradients(
        [&](const std::vector<Tensor>& in) { return ops::max_pool2d_grad(in[0], in[1], in[2], c.ksize, c.options); },
        {x, y, g}, {2});
    GradientTape tape;
    tape.watch(x);
    tape.watch(y);
    Tensor dx = ops::max_pool2d_grad(x, y, g, c.ksize, c.options);
    auto zs = tape.gradient(dx, {x, y});
    check_tensor(zs[0], DType::Float64, x.shape(), std::vector<double>(static_cast<size_t>(x.num_elements()), 0.0));
    check_tensor(zs[1], DType::Float64, y.shape(), std::vector<double>(static_cast<size_t>(y.num_elements()), 0.0));
  }
}

TEST_CASE("max_pool2d_grad's gradient follows the first maximum on ties and -inf windows", "[autodiff][grads][nn]") {
  // Every window of 2x2 stride 1 over a constant image ties: the kernel routes each to its top-left pixel, so the
  // gradient with respect to grad must read dy there.
  const double inf = std::numeric_limits<double>::infinity();
  for (double v : {1.0, -inf}) {
    INFO("constant " << v);
    Tensor x = make(std::vector<double>(9, v), {1, 3, 3, 1}, DType::Float64);
    ops::Pool2DOptions o{.padding = "SAME"};
    Tensor y = ops::max_pool2d(x, {2, 2}, o);
    Tensor g = random_tensor(y.shape(), 3);
    Tensor dx_seed = make(ember::testing::iota(9, 1), x.shape(), DType::Float64);
    GradientTape tape;
    tape.watch(g);
    Tensor dx = ops::max_pool2d_grad(x, y, g, {2, 2}, o);
    Tensor dg = tape.gradient(dx, {g}, {.output_gradients = {dx_seed}})[0];
    // Output (i, j)'s clipped window starts at input (i, j).
    check_tensor(dg, DType::Float64, y.shape(), ember::testing::iota(9, 1));
  }
}

TEST_CASE("second order through conv2d with nested tapes", "[autodiff][grads][nn]") {
  for (const ConvCase& c : kConvCases) {
    INFO(describe(c));
    Tensor x = random_tensor(c.input, 21), w = random_tensor(c.filters, 22);
    Shape xs = c.input;
    // h(x, w) = d(0.5 |conv2d(x, w)|^2)/dx = conv2d_backprop_input(x.shape, w, conv2d(x, w)); its gradient runs
    // the formulas of conv2d_backprop_input and conv2d.
    Fn h = [&](const std::vector<Tensor>& in) {
      Tensor y = ops::conv2d(in[0], in[1], c.options);
      return ops::conv2d_backprop_input(xs, in[1], y, c.options);
    };
    Tensor v = random_tensor(c.input, 23);
    std::vector<Tensor> second;
    {
      GradientTape outer;
      outer.watch(x);
      outer.watch(w);
      Tensor dx;
      {
        GradientTape inner;
        inner.watch(x);
        Tensor y = ops::conv2d(x, w, c.options);
        dx = inner.gradient(y, {x}, {.output_gradients = {y}})[0];
      }
      REQUIRE(dx.defined());
      check_tensor(dx, DType::Float64, xs, values_as_double(h({x, w})), 1e-12, 1e-12);
      second = outer.gradient(dx, {x, w}, {.output_gradients = {v}});
    }
    std::vector<double> vv = values_as_double(v);
    const double step = 1e-6;
    for (size_t k = 0; k < 2; ++k) {
      std::vector<Tensor> in{x, w};
      REQUIRE(second[k].defined());
      REQUIRE(second[k].shape() == in[k].shape());
      std::vector<double> base = values_as_double(in[k]), got = values_as_double(second[k]);
      for (size_t e = 0; e < base.size(); ++e) {
        std::vector<double> vp(base), vm(base);
        vp[e] += step;
        vm[e] -= step;
        std::vector<Tensor> plus(in), minus(in);
        plus[k] = make(vp, in[k].shape(), DType::Float64);
        minus[k] = make(vm, in[k].shape(), DType::Float64);
        double numeric = (weighted(h, plus, vv) - weighted(h, minus, vv)) / (2 * step);
        INFO("source " << k << " element " << e << ": tape " << got[e] << ", numeric " << numeric);
        CHECK(std::abs(got[e] - numeric) <= 1e-6 + 1e-6 * std::abs(numeric));
      }
    }
  }
}

TEST_CASE("second order through max_pool2d and avg_pool2d", "[autodiff][grads][nn]") {
  // d/dx <max_pool2d(x), u> = max_pool2d_grad(x, y, u); differentiating <that, v> again with respect to u runs
  // max_pool2d_grad's formula and must give the gather <v at each window's argmax>, i.e. the adjoint.
  for (const PoolCase& c : kPoolCases) {
    INFO("input " << c.input << " ksize " << c.ksize[0] << "x" << c.ksize[1] << " " << c.options.padding);
    Tensor x = random_tensor(c.input, 31);
    Tensor y0 = ops::max_pool2d(x, c.ksize, c.options);
    Tensor u = random_tensor(y0.shape(), 32), v = random_tensor(c.input, 33);
    for (bool is_max : {true, false}) {
      INFO((is_max ? "max" : "avg"));
      Tensor du;
      {
        GradientTape outer;
        outer.watch(u);
        Tensor dx;
        {
          GradientTape inner;
          inner.watch(x);
          Tensor y = is_max ? ops::max_pool2d(x, c.ksize, c.options) : ops::avg_pool2d(x, c.ksize, c.options);
          dx = inner.gradient(y, {x}, {.output_gradients = {u}})[0];
        }
        du = outer.gradient(dx, {u}, {.output_gradients = {v}})[0];
      }
      // <dx(u), v> is linear in u, so its gradient is the forward pool's Jacobian applied to v: check it against
      // the forward op's directional derivative along v (central differences).
      const double step = 1e-6;
      Tensor xp = make(ember::testing::axpy(values_as_double(x), step, values_as_double(v)), c.input, DType::Float64);
      Tensor xm = make(ember::testing::axpy(values_as_double(x), -step, values_as_double(v)), c.input, DType::Float64);
      auto pool = [&](const Tensor& t) {
        return values_as_double(is_max ? ops::max_pool2d(t, c.ksize, c.options) : ops::avg_pool2d(t, c.ksize, c.options));
      };
      std::vector<double> plus = pool(xp), minus = pool(xm), expected(plus.size());
      for (size_t i = 0; i < plus.size(); ++i) expected[i] = (plus[i] - minus[i]) / (2 * step);
      check_tensor(du, DType::Float64, y0.shape(), expected, 1e-6, 1e-6);
    }
  }
}

namespace {
std::vector<OpId> g_seen_ops;
void record_op(const OpRecord& r) { g_seen_ops.push_back(r.op); }
}  // namespace

// The crossentropy's gradient takes softmax - one_hot as one op, unless a tape records ops on the logits
// (a higher-order gradient), which needs the differentiable ops; the values are the same bits either way.
TEST_CASE("sparse crossentropy gradient: one backprop op, the differentiable ops under a recording tape",
          "[autodiff][grads][nn]") {
  const Tensor logits = make(uniform_values(24, 301), {4, 6}, DType::Float32);
  const Tensor labels = Tensor::from_vector<int64_t>({5, 0, 2, 3}, {4});
  auto count = [](OpId op) { return std::count(g_seen_ops.begin(), g_seen_ops.end(), op); };
  // The gradient of sum(loss) with respect to the logits, with or without an outer tape watching them.
  auto gradient = [&](bool outer_tape) {
    g_seen_ops.clear();
    std::optional<GradientTape> outer;
    if (outer_tape) outer.emplace().watch(logits);
    GradientTape tape;
    tape.watch(logits);
    Tensor loss = ops::reduce_sum(ops::sparse_softmax_cross_entropy_with_logits(labels, logits));
    return tape.gradient(loss, {logits})[0];
  };
  const int hook = add_op_hook(&record_op);
  const Tensor fused = gradient(false);
  CHECK(count(OpId::sparse_softmax_cross_entropy_backprop) == 1);
  CHECK(count(OpId::softmax) == 0);
  CHECK(count(OpId::one_hot) == 0);
  const Tensor composite = gradient(true);
  CHECK(count(OpId::sparse_softmax_cross_entropy_backprop) == 0);
  CHECK(count(OpId::softmax) == 1);
  CHECK(count(OpId::one_hot) == 1);
  remove_op_hook(hook);
  CHECK(values_as_double(fused) == values_as_double(composite));
}
