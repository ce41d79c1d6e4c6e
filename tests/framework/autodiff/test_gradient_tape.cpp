// GradientTape semantics (TF's tf.GradientTape): persistence, multiple targets, output_gradients,
// unconnected sources, stop_gradient, variables, custom_gradient, integer paths, check_numerics and the
// release of saved tensors.
#include <cstring>

#include "framework/ops/dispatch.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using ember::testing::same_bits;
using ember::testing::check_tensor;

namespace {

Tensor scalar(double v) { return Tensor::scalar<float>(static_cast<float>(v)); }
float value(const Tensor& t) { return t.item<float>(); }

// Turns check_numerics off at the end of a test even when an assertion throws.
struct CheckNumericsScope {
  CheckNumericsScope() { debugging::enable_check_numerics(); }
  ~CheckNumericsScope() { debugging::disable_check_numerics(); }
};

int64_t cpu_bytes() { return config::memory_info(Device::cpu()).bytes_in_use; }

}  // namespace

TEST_CASE("gradient of x*x + 2x + 1 at 3 is 8", "[autodiff][tape]") {
  Tensor x = scalar(3);
  GradientTape tape;
  tape.watch(x);
  Tensor y = x * x + 2.0 * x + 1.0;
  std::vector<Tensor> g = tape.gradient(y, {x});
  REQUIRE(g.size() == 1);
  CHECK(g[0].dtype() == DType::Float32);
  CHECK(g[0].shape() == Shape{});
  CHECK(value(g[0]) == 8.0f);
}

TEST_CASE("nested tapes give the second derivative of x^3", "[autodiff][tape]") {
  Tensor x = scalar(2);
  GradientTape outer;
  outer.watch(x);
  Tensor dy;
  {
    GradientTape inner;
    inner.watch(x);
    Tensor y = x * x * x;
    dy = inner.gradient(y, {x})[0];
  }
  CHECK(value(dy) == 12.0f);  // 3x^2
  Tensor d2 = outer.gradient(dy, {x})[0];
  CHECK(value(d2) == 12.0f);  // 6x
}

TEST_CASE("a persistent tape computes several gradients; a plain one only one", "[autodiff][tape]") {
  Tensor x = scalar(3);
  {
    GradientTape tape({.persistent = true});
    tape.watch(x);
    Tensor y = x * x;
    Tensor z = y * y;
    CHECK(value(tape.gradient(z, {x})[0]) == 108.0f);  // 4x^3
    CHECK(value(tape.gradient(y, {x})[0]) == 6.0f);
    CHECK(value(tape.gradient(z, {x})[0]) == 108.0f);
  }
  GradientTape tape;
  tape.watch(x);
  Tensor y = x * x;
  CHECK(value(tape.gradient(y, {x})[0]) == 6.0f);
  CHECK_THROWS_AS(tape.gradient(y, {x}), FailedPrecondition);
  CHECK_THROWS_WITH(tape.gradient(y, {x}), Catch::Contains("persistent"));
}

TEST_CASE("multiple targets are summed; output_gradients weight them", "[autodiff][tape]") {
  Tensor x = Tensor::from_vector<float>({1, 2});
  {
    GradientTape tape;
    tape.watch(x);
    std::vector<Tensor> g = tape.gradient({x * x, x * 3.0}, {x});
    check_tensor(g[0], DType::Float32, {2}, {5, 7});  // 2x + 3
  }
  {
    GradientTape tape;
    tape.watch(x);
    Tensor y = x * 2.0;
    GradientOptions o;
    o.output_gradients = {Tensor::from_vector<float>({1, 10})};
    check_tensor(tape.gradient(y, {x}, o)[0], DType::Float32, {2}, {2, 20});
  }
  {
    GradientTape tape;
    tape.watch(x);
    GradientOptions o;
    o.output_gradients = {Tensor::from_vector<float>({1, 2, 3})};
    CHECK_THROWS_AS(tape.gradient(x * 2.0, {x}, o), InvalidArgument);
  }
}

TEST_CASE("unconnected sources: undefined, or zeros on request", "[autodiff][tape]") {
  Tensor x = scalar(3), z = Tensor::from_vector<float>({1, 2, 3});
  {
    GradientTape tape;
    tape.watch(x);
    tape.watch(z);
    std::vector<Tensor> g = tape.gradient(x * x, {x, z});
    CHECK(value(g[0]) == 6.0f);
    CHECK_FALSE(g[1].defined());
  }
  {
    GradientTape tape;
    tape.watch(x);
    GradientOptions o;
    o.unconnected_gradients = UnconnectedGradients::Zero;
    std::vector<Tensor> g = tape.gradient(x * x, {x, z}, o);
    check_tensor(g[1], DType::Float32, {3}, {0, 0, 0});
  }
}

TEST_CASE("stop_gradient and stop_recording cut the path", "[autodiff][tape]") {
  Tensor x = scalar(3);
  {
    GradientTape tape;
    tape.watch(x);
    Tensor y = x * ops::stop_gradient(x);
    CHECK(value(y) == 9.0f);
    CHECK(value(tape.gradient(y, {x})[0]) == 3.0f);  // x, not 2x
  }
  {
    GradientTape tape;
    tape.watch(x);
    Tensor z;
    {
      auto pause = tape.stop_recording();
      z = x * x;
    }
    Tensor y = x * 2.0 + z;  // recorded again
    CHECK(value(tape.gradient(y, {x})[0]) == 2.0f);
  }
}

TEST_CASE("variables: trainable reads are watched, others are not", "[autodiff][tape][variable]") {
  Variable v(scalar(3));
  Variable frozen(scalar(3), {.name = "frozen", .trainable = false});
  {
    GradientTape tape;
    Tensor a = v.read_value(), b = frozen.read_value();
    std::vector<Tensor> g = tape.gradient(a * a + b * b, {v.value(), frozen.value()});
    CHECK(value(g[0]) == 6.0f);
    CHECK_FALSE(g[1].defined());
  }
  {
    GradientTape tape({.watch_accessed_variables = false});
    Tensor a = v;
    CHECK_FALSE(tape.gradient(a * a, {v.value()})[0].defined());
  }
  {
    GradientTape tape({.watch_accessed_variables = false});
    tape.watch(v);
    tape.watch(frozen);
    Tensor a = v, b = frozen;
    std::vector<Tensor> g = tape.gradient(a * b, {v.value(), frozen.value()});
    CHECK(value(g[0]) == 3.0f);
    CHECK(value(g[1]) == 3.0f);
  }
}

TEST_CASE("variable updates are not recorded", "[autodiff][tape][variable]") {
  Variable w(scalar(1));
  Tensor x = scalar(2);
  GradientTape tape;
  tape.watch(x);
  w.assign_sub(x);  // w = -1; were it recorded, w would depend on x and dy/dx would be w - x = -3
  Tensor y = w.read_value() * x;
  std::vector<Tensor> g = tape.gradient(y, {x, w.value()});
  CHECK(value(g[0]) == -1.0f);
  CHECK(value(g[1]) == 2.0f);
}

TEST_CASE("custom_gradient uses the given backward", "[autodiff][tape]") {
  Tensor x = scalar(3);
  {
    GradientTape tape;
    tape.watch(x);
    Tensor y = custom_gradient(x, [](const Tensor& x) { return x * 2.0f; }, [](const Tensor& dy) { return dy * 2.0f; });
    CHECK(value(y) == 6.0f);
    CHECK(value(tape.gradient(y, {x})[0]) == 2.0f);
  }
  {
    GradientTape tape;
    tape.watch(x);
    Tensor y = custom_gradient(x, [](const Tensor& x) { return x * 2.0f; }, [](const Tensor& dy) { return dy * 3.0f; });
    CHECK(value(y) == 6.0f);
    CHECK(value(tape.gradient(y * y, {x})[0]) == 36.0f);  // 2y * 3: the custom backward, chained
  }
  {
    // Several inputs; forward runs unrecorded, so only the custom backward contributes.
    Tensor a = scalar(2), b = scalar(5);
    GradientTape tape;
    tape.watch(a);
    tape.watch(b);
    Tensor y = custom_gradient(
        {a, b}, [](const std::vector<Tensor>& in) { return in[0] * in[1]; },
        [](const Tensor& dy) { return std::vector<Tensor>{dy * 10.0f, dy * 20.0f}; });
    std::vector<Tensor> g = tape.gradient(y, {a, b});
    CHECK(value(g[0]) == 10.0f);
    CHECK(value(g[1]) == 20.0f);
  }
}

TEST_CASE("an integer target is InvalidArgument; a path through an integer tensor carries no gradient",
          "[autodiff][tape]") {
  Tensor x = Tensor::from_vector<float>({1, 3, 2});
  {
    GradientTape tape;
    tape.watch(x);
    Tensor i = ops::argmax(x);
    CHECK_THROWS_AS(tape.gradient(i, {x}), InvalidArgument);
  }
  {  // TF: the cast from int64 has no gradient, so x is unconnected (None)
    GradientTape tape;
    tape.watch(x);
    Tensor y = ops::cast(ops::argmax(x), DType::Float32) * 2.0f;
    CHECK_FALSE(tape.gradient(y, {x})[0].defined());
  }
  {
    GradientTape tape;
    tape.watch(x);
    Tensor y = ops::cast(ops::cast(x, DType::Int32), DType::Float32);
    CHECK_FALSE(tape.gradient(y, {x})[0].defined());
  }
}

TEST_CASE("check_numerics names the op and the forward pass", "[autodiff][check_numerics]") {
  Tensor x = Tensor::from_vector<float>({1, 0});
  CHECK_NOTHROW(ops::log(x));  // off by default: -inf passes silently
  CheckNumericsScope on;
  CHECK_THROWS_AS(ops::log(x), InvalidArgument);
  CHECK_THROWS_WITH(ops::log(x), Catch::Contains("'log'") && Catch::Contains("forward"));
  CHECK_NOTHROW(ops::log(Tensor::from_vector<float>({1, 2})));
}

TEST_CASE("check_numerics names the backward pass", "[autodiff][check_numerics]") {
  Tensor x = Tensor::from_vector<float>({0, 4});
  CheckNumericsScope on;
  GradientTape tape;
  tape.watch(x);
  Tensor y;
  REQUIRE_NOTHROW(y = ops::sqrt(x));  // forward is finite: sqrt(0) = 0
  CHECK_THROWS_AS(tape.gradient(y, {x}), InvalidArgument);
  GradientTape tape2;
  tape2.watch(x);
  Tensor y2 = ops::sqrt(x);
  CHECK_THROWS_WITH(tape2.gradient(y2, {x}), Catch::Contains("backward"));  // 1 / (2 sqrt(0)) = inf
}

TEST_CASE("a non-persistent tape releases its saved tensors after gradient()", "[autodiff][tape][memory]") {
  const Tensor x = ops::ones({256, 256});  // 256 KiB per saved tensor
  const int64_t one = static_cast<int64_t>(x.nbytes());
  const int64_t before = cpu_bytes();
  {
    GradientTape tape;
    tape.watch(x);
    std::vector<Tensor> g;
    {
      Tensor y = ops::tanh(x);
      Tensor z = ops::exp(y);
      Tensor loss = ops::reduce_sum(z * y);
      CHECK(cpu_bytes() - before >= 3 * one);  // y, z, z * y alive (and saved)
      g = tape.gradient(loss, {x});
    }
    CHECK(cpu_bytes() - before <= one + one / 4);  // only the gradient, though the tape still lives
    g.clear();
    CHECK(cpu_bytes() - before <= one / 4);
  }
  {
    // A persistent tape keeps what its formulas need until it is destroyed.
    GradientTape tape({.persistent = true});
    tape.watch(x);
    {
      Tensor y = ops::tanh(x);
      Tensor loss = ops::reduce_sum(ops::exp(y));
      tape.gradient(loss, {x});
    }
    CHECK(cpu_bytes() - before >= 2 * one);
  }
  CHECK(cpu_bytes() - before <= one / 4);
}

TEST_CASE("gradient() frees each intermediate gradient once it is complete", "[autodiff][tape][memory]") {
  const Tensor x = ops::ones({256, 256});  // 256 KiB per tensor
  const int64_t one = static_cast<int64_t>(x.nbytes());
  for (bool persistent : {false, true}) {
    INFO("persistent " << persistent);
    GradientTape tape({.persistent = persistent});
    tape.watch(x);
    Tensor loss;
    {
      Tensor y = x;
      for (int i = 0; i < 12; ++i) y = ops::sin(y);  // 12 intermediate gradients on the way back
      loss = ops::reduce_sum(y);
    }
    config::reset_memory_stats(Device::cpu());
    const int64_t start = cpu_bytes();
    std::vector<Tensor> g = tape.gradient(loss, {x});
    // At any time: the gradient being consumed, its formula's cos(x) and the new gradient (kept: 12+).
    CHECK(config::memory_info(Device::cpu()).peak_bytes - start <= 4 * one);
    CHECK(g[0].shape() == x.shape());
  }
}

namespace {
int tape_matmuls = 0, tape_conv_inputs = 0, tape_conv_filters = 0, tape_negs = 0;
void tape_count_ops(const OpRecord& r) {
  tape_matmuls += r.op == OpId::matmul;
  tape_negs += r.op == OpId::neg;
  tape_conv_inputs += r.op == OpId::conv2d_backprop_input;
  tape_conv_filters += r.op == OpId::conv2d_backprop_filter;
}
}  // namespace

TEST_CASE("backward skips the products toward inputs that lead to no source", "[autodiff][tape]") {
  Variable w(random::normal({4, 3}, {.seed = 1}), {.name = "w"});
  Variable k(random::normal({3, 3, 2, 5}, {.seed = 2}), {.name = "k"});
  const Tensor x = random::normal({6, 4}, {.seed = 3}), img = random::normal({2, 8, 8, 2}, {.seed = 4});
  GradientTape tape({.persistent = true});
  tape.watch(x);
  tape.watch(img);
  Tensor y = ops::reduce_sum(ops::matmul(x, w.value())) + ops::reduce_sum(ops::conv2d(img, k.value()));
  const int hook = add_op_hook(tape_count_ops);
  tape_matmuls = tape_conv_inputs = tape_conv_filters = 0;
  std::vector<Tensor> g = tape.gradient(y, {w.value(), k.value()});
  // Only d/dw and d/dk: no product toward the data x and no convolution toward the image.
  CHECK(tape_matmuls == 1);
  CHECK(tape_conv_inputs == 0);
  CHECK(tape_conv_filters == 1);
  // Asking for the data too computes those, and the weight gradients are unchanged.
  tape_matmuls = tape_conv_inputs = tape_conv_filters = 0;
  std::vector<Tensor> all = tape.gradient(y, {w.value(), k.value(), x, img});
  remove_op_hook(hook);
  CHECK(tape_matmuls == 2);
  CHECK(tape_conv_inputs == 1);
  CHECK(all[0].to_vector<float>() == g[0].to_vector<float>());
  CHECK(all[1].to_vector<float>() == g[1].to_vector<float>());
  CHECK(all[2].shape() == x.shape());
  CHECK(all[3].shape() == img.shape());

  // A binary op's gradient skips its side too: dividing by a constant computes no -x / c^2.
  const Tensor c = ops::full({6, 4}, 3.0);
  const int div_hook = add_op_hook(tape_count_ops);
  for (bool watch_c : {false, true}) {
    INFO("divisor watched: " << watch_c);
    GradientTape t;
    t.watch(x);
    if (watch_c) t.watch(c);
    const Tensor total = ops::reduce_sum(x / c);
    tape_negs = 0;
    const std::vector<Tensor> d = t.gradient(total, watch_c ? std::vector<Tensor>{x, c} : std::vector<Tensor>{x});
    CHECK(tape_negs == (watch_c ? 1 : 0));
    CHECK(d[0].to_vector<float>() == ops::full({6, 4}, 1.0 / 3.0).to_vector<float>());
  }
  remove_op_hook(div_hook);
}

TEST_CASE("gradient takes one source and gives one tensor, as TF's tape.gradient(y, x)", "[autodiff][tape]") {
  Tensor x = scalar(3);
  Variable w(2.0f, {.name = "w"});
  GradientTape tape({.persistent = true});
  tape.watch(x);
  Tensor y = x * x * w;
  Tensor dx = tape.gradient(y, x);
  Tensor dw = tape.gradient(y, w);
  CHECK(value(dx) == 12.0f);  // 2 * x * w
  CHECK(value(dw) == 9.0f);   // x * x
  // A braced list still means a list of sources.
  std::vector<Tensor> both = tape.gradient(y, {x, w});
  REQUIRE(both.size() == 2);
  CHECK(value(both[1]) == 9.0f);
  std::vector<Tensor> one = tape.gradient(y, {w});
  REQUIRE(one.size() == 1);
  CHECK(value(one[0]) == 9.0f);
}

TEST_CASE("gradient takes a model's trainable_weights, a std::vector<Variable>", "[autodiff][tape]") {
  Tensor inputs = layers::Input({3});
  Model model(inputs, layers::Dense(2)(inputs));
  const Tensor x = Tensor::from_vector<float>({1, 2, 3}, {1, 3});
  GradientTape tape;
  Tensor loss = ops::reduce_sum(model(x));
  std::vector<Tensor> grads = tape.gradient(loss, model.trainable_weights());
  REQUIRE(grads.size() == 2);
  check_tensor(grads[0], DType::Float32, {3, 2}, {1, 1, 2, 2, 3, 3});  // d/dkernel = x^T ones
  check_tensor(grads[1], DType::Float32, {2}, {1, 1});
  std::vector<Variable> none_defined(1);
  GradientTape tape2;
  CHECK_THROWS_AS(tape2.gradient(ops::reduce_sum(model(x)), none_defined), InvalidArgument);
}

TEST_CASE("Variable from a C++ number is a scalar typed as tf.Variable types a Python number", "[autodiff][variable]") {
  Variable f(3.0f);
  CHECK(f.dtype() == DType::Float32);
  CHECK(f.shape() == Shape{});
  CHECK(f.read_value().item<float>() == 3.0f);
  Variable d(0.5, {.name = "half", .trainable = false});
  CHECK(d.dtype() == DType::Float32);  // tf.Variable(0.5) is float32, not float64
  CHECK(d.name() == "half");
  CHECK_FALSE(d.trainable());
  Variable i(3);
  CHECK(i.dtype() == DType::Int32);
  CHECK(i.read_value().item<int32_t>() == 3);
  Variable big(int64_t{1} << 40);
  CHECK(big.dtype() == DType::Int64);
  CHECK(big.read_value().item<int64_t>() == (int64_t{1} << 40));
  Variable b(true);
  CHECK(b.dtype() == DType::Bool);
  // It trains like any variable.
  GradientTape tape;
  Tensor y = f.read_value() * f.read_value();
  CHECK(tape.gradient(y, f).item<float>() == 6.0f);
}

TEST_CASE("on_gradient_ready hands out each source's gradient once its last reader's backward has run",
          "[autodiff][tape]") {
  Tensor x = Tensor::from_vector<float>({1, 2});
  Tensor w1 = Tensor::from_vector<float>({3, 4}), w2 = Tensor::from_vector<float>({5, 6});
  Tensor unused = Tensor::from_vector<float>({7});
  GradientTape tape;
  tape.watch(w1);
  tape.watch(w2);
  tape.watch(unused);
  Tensor a = w1 * x;                      // w1's first reader
  Tensor b = a * w2;                      // w2's only reader
  Tensor loss = ops::reduce_sum(b + w1);  // w1 read again
  std::vector<std::string> events;
  std::vector<Tensor> handed(3);
  GradientOptions options;
  options.on_backward_op = [&] { events.push_back("op"); };
  options.on_gradient_ready = [&](size_t k, const Tensor& g) {
    events.push_back(std::to_string(k));
    CHECK_FALSE(handed[k].defined());  // once each
    handed[k] = g.defined() ? g : Tensor::scalar<float>(-1);
  };
  const std::vector<Tensor> grads = tape.gradient(loss, {w1, w2, unused}, options);
  // Backward: reduce_sum, add, the second mul (w2 final), the first mul (w1 final); the unconnected one last.
  CHECK(events == std::vector<std::string>{"op", "op", "op", "1", "op", "0", "2"});
  CHECK(handed[0].to_vector<float>() == grads[0].to_vector<float>());
  CHECK(grads[0].to_vector<float>() == std::vector<float>{6, 13});  // x * w2 + 1
  CHECK(handed[1].to_vector<float>() == std::vector<float>{3, 8});  // w1 * x
  CHECK_FALSE(grads[2].defined());
  CHECK(handed[2].to_vector<float>() == std::vector<float>{-1});  // handed out undefined
}
