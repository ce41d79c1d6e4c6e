// Custom ops (framework/ops/custom_op.h): ops registered from test code run eagerly, record on the tape, pass the
// float64 gradient checker, trace and replay in ember::function, show in the profiler under their name, and
// refuse bad registrations and calls with errors naming the op. The [cuda] case runs a user .cu kernel.
#include <catch2/catch.hpp>
#include <zlib.h>

#include <cmath>
#include <sstream>

#include "framework/ember.h"
#include "tests/support/custom_test_ops.h"
#include "tests/support/grad_check.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using ember::testing::same_bits;

namespace {

std::vector<ops::ShapeDType> floating_like_first(std::span<const ops::ShapeDType> in, const AttrMap&) {
  for (const ops::ShapeDType& t : in) {
    EMBER_CHECK(t.dtype == DType::Float32 || t.dtype == DType::Float64, InvalidArgument)
        << "expected float32 or float64 inputs, got " << t.dtype;
    EMBER_CHECK(t.shape == in[0].shape, InvalidArgument) << "inputs of shapes " << in[0].shape << " and " << t.shape;
  }
  return {in[0]};
}

template <class T>
void cube_kernel(const ops::CustomKernelContext& ctx) {
  const T alpha = ctx.attrs.get<T>("alpha");
  const T* x = ctx.inputs[0].data<T>();
  T* y = ctx.outputs[0].data<T>();
  for (int64_t i = 0; i < ctx.inputs[0].num_elements(); ++i) y[i] = alpha * x[i] * x[i] * x[i];
}

// test_scaled_cube(x; alpha) = alpha * x^3, its gradient written with ops (so differentiable again).
const ops::CustomOp scaled_cube = ops::register_op({
    .name = "test_scaled_cube",
    .num_inputs = 1,
    .infer = floating_like_first,
    .cpu = [](const ops::CustomKernelContext& ctx) {
      ctx.inputs[0].dtype() == DType::Float32 ? cube_kernel<float>(ctx) : cube_kernel<double>(ctx);
    },
    .gradient = [](const ops::CustomGradContext& ctx) {
      const Tensor& x = ctx.inputs[0];
      return std::vector<Tensor>{ctx.grads[0] * ops::square(x) * (3 * ctx.attrs.get<double>("alpha"))};
    },
});

Tensor cube(const Tensor& x, double alpha) { return scaled_cube({x}, {{"alpha", alpha}})[0]; }

template <class T>
void sum_diff_kernel(const ops::CustomKernelContext& ctx) {
  const T* a = ctx.inputs[0].data<T>();
  const T* b = ctx.inputs[1].data<T>();
  T* s = ctx.outputs[0].data<T>();
  T* d = ctx.outputs[1].data<T>();
  for (int64_t i = 0; i < ctx.inputs[0].num_elements(); ++i) {
    s[i] = a[i] + b[i];
    d[i] = a[i] - b[i];
  }
}

// test_sum_diff(a, b) = (a + b, a - b): two inputs, two outputs.
const ops::CustomOp sum_diff = ops::register_op({
    .name = "test_sum_diff",
    .num_inputs = 2,
    .infer = [](std::span<const ops::ShapeDType> in, const AttrMap& attrs) {
      std::vector<ops::ShapeDType> out = floating_like_first(in, attrs);
      return std::vector<ops::ShapeDType>{out[0], out[0]};
    },
    .cpu = [](const ops::CustomKernelContext& ctx) {
      ctx.inputs[0].dtype() == DType::Float32 ? sum_diff_kernel<float>(ctx) : sum_diff_kernel<double>(ctx);
    },
    .gradient = [](const ops::CustomGradContext& ctx) {
      return std::vector<Tensor>{ctx.grads[0] + ctx.grads[1], ctx.grads[0] - ctx.grads[1]};
    },
});

void copy_kernel(const ops::CustomKernelContext& ctx) {
  std::memcpy(ctx.outputs[0].raw_data(), ctx.inputs[0].raw_data(), ctx.inputs[0].nbytes());
}
std::vector<ops::ShapeDType> like_first(std::span<const ops::ShapeDType> in, const AttrMap&) { return {in[0]}; }

// Without a gradient, and with one of the wrong shape.
const ops::CustomOp no_grad = ops::register_op({.name = "test_no_grad", .infer = like_first, .cpu = copy_kernel});
const ops::CustomOp bad_grad = ops::register_op({
    .name = "test_bad_grad",
    .infer = like_first,
    .cpu = copy_kernel,
    .gradient = [](const ops::CustomGradContext& ctx) { return std::vector<Tensor>{ops::reduce_sum(ctx.grads[0])}; },
});

Tensor f32(const std::vector<float>& v, const Shape& s) { return Tensor::from_vector<float>(v, s); }

}  // namespace

TEST_CASE("custom op: runs eagerly with its attributes, by handle or by name", "[ops][custom_op]") {
  Tensor x = f32({1, -2, 3}, {3});
  CHECK(cube(x, 2.0).to_vector<float>() == std::vector<float>{2, -16, 54});
  CHECK(ops::custom("test_scaled_cube", {x}, {{"alpha", 0.5}})[0].to_vector<float>() ==
        std::vector<float>{0.5f, -4, 13.5f});
  Tensor x64 = Tensor::from_vector<double>({2}, {1});
  CHECK(cube(x64, 1.5).to_vector<double>() == std::vector<double>{12});
  CHECK(ops::find_op("test_scaled_cube").name() == "test_scaled_cube");

  std::vector<Tensor> sd = sum_diff({f32({1, 2}, {2}), f32({10, 20}, {2})});
  REQUIRE(sd.size() == 2);
  CHECK(sd[0].to_vector<float>() == std::vector<float>{11, 22});
  CHECK(sd[1].to_vector<float>() == std::vector<float>{-9, -18});
  // An int attribute reads as a float.
  CHECK(cube(x, 1).to_vector<float>() == std::vector<float>{1, -8, 27});
}

TEST_CASE("custom op: attribute maps", "[ops][custom_op]") {
  AttrMap a{{"i", 3}, {"f", 0.5f}, {"b", true}, {"s", "same"}, {"l", {1, 2}}};
  CHECK(a.get<int64_t>("i") == 3);
  CHECK(a.get<int>("i") == 3);
  CHECK(a.get<double>("f") == 0.5);
  CHECK(a.get<float>("i") == 3.0f);
  CHECK(a.get<bool>("b"));
  CHECK(a.get<std::string>("s") == "same");
  CHECK(a.get<std::vector<int64_t>>("l") == std::vector<int64_t>{1, 2});
  CHECK(a.get<double>("missing", 7.0) == 7.0);
  CHECK_THROWS_WITH(a.get<double>("missing"), Catch::Contains("attribute 'missing' (float) is missing"));
  CHECK_THROWS_WITH(a.get<int64_t>("f"), Catch::Contains("attribute 'f' is float, expected int"));
  // Equal when they compute the same: floats by their bits, an int is not a float.
  CHECK(AttrMap{{"x", 0.5}} == AttrMap{{"x", 0.5}});
  CHECK_FALSE(AttrMap{{"x", 0.0}} == AttrMap{{"x", -0.0}});
  CHECK(AttrMap{{"x", std::nan("")}} == AttrMap{{"x", std::nan("")}});
  CHECK_FALSE(AttrMap{{"x", 1}} == AttrMap{{"x", 1.0}});
  CHECK_FALSE(AttrMap{{"x", 1}} == AttrMap{});
  a.set("i", 4);
  CHECK(a.get<int64_t>("i") == 4);
}

TEST_CASE("custom op: gradients match float64 central differences", "[ops][custom_op][grad_check]") {
  testing::check_gradients("test_scaled_cube", [](const std::vector<Tensor>& in) { return cube(in[0], 0.7); },
                           {testing::rand64({2, 3}, 11)});
  testing::check_gradients("test_scaled_cube of a scalar", [](const std::vector<Tensor>& in) { return cube(in[0], -2); },
                           {testing::rand64({}, 12)});
  // Both outputs, each input reaching both.
  testing::check_gradients("test_sum_diff",
                           [](const std::vector<Tensor>& in) {
                             std::vector<Tensor> o = sum_diff({in[0], in[1]});
                             return o[0] * o[1] + ops::exp(o[1]);
                           },
                           {testing::rand64({3, 2}, 13), testing::rand64({3, 2}, 14)});
  // The gradient is made of ops, so a nested tape differentiates it again: d2/dx2 alpha x^3 = 6 alpha x.
  testing::check_gradients("d/dx of test_scaled_cube's gradient",
                           testing::gradient_of([](const std::vector<Tensor>& in) { return cube(in[0], 0.7); }, 0),
                           {testing::rand64({4}, 15)});
}

TEST_CASE("custom op: recorded on the tape", "[ops][custom_op][autodiff]") {
  Tensor a = f32({1, 2}, {2}), b = f32({3, 5}, {2});
  GradientTape tape({.persistent = true});
  tape.watch(a);
  tape.watch(b);
  std::vector<Tensor> o = sum_diff({a, b});
  // Only the first output reaches the target: the second's gradient is zeros.
  std::vector<Tensor> g = tape.gradient(ops::reduce_sum(o[0]), {a, b});
  CHECK(g[0].to_vector<float>() == std::vector<float>{1, 1});
  CHECK(g[1].to_vector<float>() == std::vector<float>{1, 1});
  g = tape.gradient(ops::reduce_sum(o[1] * 3.0f), {a, b});
  CHECK(g[0].to_vector<float>() == std::vector<float>{3, 3});
  CHECK(g[1].to_vector<float>() == std::vector<float>{-3, -3});
  // Through a variable read inside the tape.
  Variable w(f32({2}, {1}));
  GradientTape t2;
  Tensor loss = ops::reduce_sum(cube(w.read_value(), 1.0));
  CHECK(t2.gradient(loss, w).to_vector<float>() == std::vector<float>{12});
}

TEST_CASE("custom op: traced and replayed by ember::function with eager's bits, forward and gradient",
          "[ops][custom_op][function]") {
  auto step = [](const std::vector<Tensor>& in) {
    GradientTape tape;
    tape.watch(in[0]);
    Tensor y = cube(in[0], 0.3) + sum_diff({in[0], ops::exp(in[0])})[1];
    Tensor g = tape.gradient(ops::reduce_sum(y), in[0]);
    return std::vector<Tensor>{y, g};
  };
  const Tensor x = f32({0.5f, -1.25f, 2}, {3});
  const std::vector<Tensor> eager = step({x});
  auto f = ember::function(step);
  f(std::vector<Tensor>{x});
  const std::vector<Tensor> replayed = f(std::vector<Tensor>{x});
  CHECK(f.tracing_count() == 1);
  REQUIRE(replayed.size() == 2);
  CHECK(same_bits(replayed[0], eager[0]));
  CHECK(same_bits(replayed[1], eager[1]));
  // The graph names the ops by their registered names.
  std::ostringstream printed;
  printed << f.concrete_functions()[0]->graph();
  CHECK_THAT(printed.str(), Catch::Contains("test_scaled_cube"));
  CHECK_THAT(printed.str(), Catch::Contains("test_sum_diff"));
}

TEST_CASE("custom op: attributes take part in graph equality (common subexpressions)", "[ops][custom_op][function]") {
  auto f = ember::function([](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{cube(in[0], 2.0) + cube(in[0], 2.0) + cube(in[0], 3.0) +
                               scaled_cube({in[0]}, {{"alpha", 2}})[0]};
  });
  const Tensor x = f32({1, 2}, {2});
  CHECK(f(std::vector<Tensor>{x})[0].to_vector<float>() == std::vector<float>{9, 72});
  // 2.0 twice merge; 3.0 and the int 2 differ.
  CHECK(f.concrete_functions()[0]->graph().count(OpId::custom) == 3);
}

TEST_CASE("custom op: the profiler and check_numerics name it", "[ops][custom_op]") {
  testing::TempDir dir("custom_op_profile");
  profiler::start(dir.path().string(), {.print_summary = false});
  cube(f32({1, 2}, {2}), 2.0);
  const std::string path = profiler::stop();
  gzFile file = gzopen(path.c_str(), "rb");
  REQUIRE(file != nullptr);
  std::string text;
  char buf[4096];
  for (int n; (n = gzread(file, buf, sizeof(buf))) > 0;) text.append(buf, static_cast<size_t>(n));
  gzclose(file);
  CHECK_THAT(text, Catch::Contains("\"test_scaled_cube\""));

  debugging::enable_check_numerics();
  CHECK_THROWS_WITH(cube(f32({1e30f}, {1}), 1.0), Catch::Contains("op 'test_scaled_cube' produced"));
  debugging::disable_check_numerics();
}

TEST_CASE("custom op: clear errors for bad registrations and calls", "[ops][custom_op]") {
  const Tensor x = f32({1, 2}, {2});
  CHECK_THROWS_AS(ops::custom("no_such_op", {x}), NotFound);
  CHECK_THROWS_WITH(ops::custom("no_such_op", {x}), Catch::Contains("custom op 'no_such_op' is not registered"));
  CHECK_THROWS_WITH(ops::find_op("no_such_op"), Catch::Contains("no_such_op"));

  const ops::CustomOpDef def{.name = "test_scaled_cube", .infer = like_first, .cpu = copy_kernel};
  CHECK_THROWS_WITH(ops::register_op(def), Catch::Contains("an op named 'test_scaled_cube' is already registered"));
  CHECK_THROWS_WITH(ops::register_op({.name = "relu", .infer = like_first, .cpu = copy_kernel}),
                    Catch::Contains("'relu' is the name of a built-in op"));
  CHECK_THROWS_WITH(ops::register_op({.name = "custom", .infer = like_first, .cpu = copy_kernel}),
                    Catch::Contains("built-in"));
  CHECK_THROWS_WITH(ops::register_op({.name = "bad name", .infer = like_first, .cpu = copy_kernel}),
                    Catch::Contains("got 'bad name'"));
  CHECK_THROWS_AS(ops::register_op({.name = "", .infer = like_first, .cpu = copy_kernel}), InvalidArgument);
  CHECK_THROWS_WITH(ops::register_op({.name = "test_no_infer", .cpu = copy_kernel}), Catch::Contains("no infer"));
  CHECK_THROWS_WITH(ops::register_op({.name = "test_no_cpu", .infer = like_first}), Catch::Contains("no cpu kernel"));
  CHECK_THROWS_WITH(ops::register_op({.name = "test_arity", .num_inputs = -2, .infer = like_first, .cpu = copy_kernel}),
                    Catch::Contains("num_inputs -2"));
  CHECK_THROWS_AS(ops::find_op("test_no_cpu"), NotFound);  // a refused registration leaves nothing behind

  // Calls: arity, inference refusing the inputs, attributes.
  CHECK_THROWS_WITH(scaled_cube({x, x}, {{"alpha", 1.0}}),
                    Catch::Contains("test_scaled_cube: expected 1 input tensor(s), got 2"));
  CHECK_THROWS_WITH(cube(Tensor::from_vector<int32_t>({1}, {1}), 1.0),
                    Catch::Contains("test_scaled_cube: expected float32 or float64 inputs, got int32"));
  CHECK_THROWS_AS(cube(Tensor::from_vector<int32_t>({1}, {1}), 1.0), InvalidArgument);
  CHECK_THROWS_WITH(sum_diff({x, f32({1, 2, 3}, {3})}), Catch::Contains("test_sum_diff: inputs of shapes"));
  CHECK_THROWS_WITH(scaled_cube({x}), Catch::Contains("test_scaled_cube: attribute 'alpha' (float) is missing"));
  CHECK_THROWS_WITH(scaled_cube({x}, {{"alpha", "big"}}),
                    Catch::Contains("test_scaled_cube: attribute 'alpha' is string, expected float"));
  CHECK_THROWS_WITH(ops::custom("test_scaled_cube", {Tensor()}), Catch::Contains("test_scaled_cube: input 0 is undefined"));

  // Gradients: none registered, or of the wrong shape.
  GradientTape tape({.persistent = true});
  tape.watch(x);
  Tensor y1 = no_grad({x})[0];
  Tensor y2 = bad_grad({x})[0];
  CHECK_THROWS_AS(tape.gradient(ops::reduce_sum(y1), x), Unimplemented);
  CHECK_THROWS_WITH(tape.gradient(ops::reduce_sum(y1), x), Catch::Contains("custom op 'test_no_grad' has no gradient"));
  CHECK_THROWS_WITH(tape.gradient(ops::reduce_sum(y2), x),
                    Catch::Contains("test_bad_grad: its gradient for input 0 is float32 (), expected the input's float32 (2,)"));
}

TEST_CASE("custom op: a user CUDA kernel runs on the GPU, and an op without one refuses GPU tensors", "[cuda][custom_op]") {
  if (config::list_physical_devices("GPU").empty()) {
    WARN("no GPU: skipped");
    return;
  }
  const Device gpu = Device::cuda(0);
  const Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5}, {5});
  const Tensor xg = x.to(gpu);
  const Tensor y = testing::test_roll(xg, 2);
  CHECK(y.device() == gpu);
  CHECK(y.to(Device::cpu()).to_vector<float>() == std::vector<float>{4, 5, 1, 2, 3});
  GradientTape tape;
  tape.watch(xg);
  const Tensor g = tape.gradient(ops::reduce_sum(testing::test_roll(xg, 2) * xg), xg);
  // d/dx_j of sum_k roll(x)_k x_k = roll(x)_j + x_(j+2 mod 5)
  CHECK(g.to(Device::cpu()).to_vector<float>() == std::vector<float>{7, 9, 6, 3, 5});
  CHECK_THROWS_AS(cube(xg, 1.0), Unimplemented);
  CHECK_THROWS_WITH(cube(xg, 1.0), Catch::Contains("test_scaled_cube: no CUDA kernel is registered"));
}
