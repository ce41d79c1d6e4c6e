// The fused batch norm (ops::fused_batch_norm and its gradient) against the composed float64 formula on the
// CPU, the rule that picks it for BatchNormalization, the graph pass that moves a relu (and a residual add) into
// it, and, [cuda] (skipped without a GPU), the layer's training step on the GPU (cuDNN) against the CPU's
// composed ops in float32, mixed_float16 and mixed_bfloat16.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "framework/ember.h"
#include "framework/ops/batch_norm.h"
#include "framework/ops/dispatch.h"
#include "layers/batch_normalization.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using ember::testing::values_as_double;

namespace {

constexpr double kEps = 1e-3;
constexpr BatchNormOps kFusions[] = {BatchNormOps::Bn, BatchNormOps::BnRelu, BatchNormOps::BnAddRelu};

const char* fusion_name(BatchNormOps f) {
  return f == BatchNormOps::Bn ? "Bn" : f == BatchNormOps::BnRelu ? "BnRelu" : "BnAddRelu";
}

DType stats_dtype(DType dt) { return dt == DType::Float64 ? DType::Float64 : DType::Float32; }

Tensor f64(const Tensor& t) { return ops::cast(t, DType::Float64); }

// Values 2 u + 0.5 (u normal): a batch whose channels have their own means and spreads.
Tensor sample(const Shape& shape, DType dt, uint64_t seed) {
  const Tensor u = random::normal(shape, {.dtype = DType::Float64, .seed = seed});
  return ops::cast(u * 2.0 + 0.5, dt);
}

std::vector<int64_t> batch_axes(const Tensor& x) {
  std::vector<int64_t> axes(static_cast<size_t>(x.rank() - 1));
  std::iota(axes.begin(), axes.end(), int64_t{0});
  return axes;
}

// The composed formula in float64 (what BatchNormalization's ops compute): {y, mean, variance, inv_std}.
std::vector<Tensor> reference(const Tensor& x, const Tensor& scale, const Tensor& offset, BatchNormOps f,
                              const std::optional<Tensor>& side) {
  const Tensor xd = f64(x);
  const std::vector<int64_t> axes = batch_axes(x);
  const Tensor mean = ops::reduce_mean(xd, axes);
  const Tensor centered = xd - mean;
  const Tensor var = ops::reduce_mean(ops::square(centered), axes);
  const Tensor inv = ops::rsqrt(var + kEps);
  Tensor y = centered * inv * f64(scale) + f64(offset);
  if (side) y = y + f64(*side);
  if (f != BatchNormOps::Bn) y = ops::relu(y);
  return {y, mean, var, inv};
}

// max |a - b| over max(1, max |b|).
double relative_error(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = values_as_double(a), y = values_as_double(b);
  REQUIRE(x.size() == y.size());
  double err = 0, scale = 1;
  for (size_t i = 0; i < x.size(); ++i) {
    err = std::max(err, std::abs(x[i] - y[i]));
    scale = std::max(scale, std::abs(y[i]));
  }
  return err / scale;
}

// Inputs of one case: x, scale, offset, side (BnAddRelu only).
struct BnInputs {
  Tensor x, scale, offset;
  std::optional<Tensor> side;
};
BnInputs inputs_for(const Shape& shape, DType dt, BatchNormOps f) {
  const Shape c{shape[shape.rank() - 1]};
  BnInputs in{sample(shape, dt, 11), sample(c, stats_dtype(dt), 12), sample(c, stats_dtype(dt), 13), std::nullopt};
  if (f == BatchNormOps::BnAddRelu) in.side = sample(shape, dt, 14);
  return in;
}

// Output tolerance per dtype: the output rounds once to its dtype.
double y_tolerance(DType dt) { return dt == DType::Float64 ? 1e-12 : 2 * testing::tolerance_for(dt); }

}  // namespace

TEST_CASE("fused_batch_norm on the CPU gives the composed formula's output and statistics", "[ops][batch_norm]") {
  for (DType dt : testing::kFloatDTypes)
    for (BatchNormOps f : kFusions)
      for (const Shape& shape : {Shape{4, 3, 5, 6}, Shape{7, 5}}) {
        INFO(dtype_name(dt) << " " << fusion_name(f) << " " << shape);
        const BnInputs in = inputs_for(shape, dt, f);
        const std::vector<Tensor> got = ops::fused_batch_norm(in.x, in.scale, in.offset, kEps, f, in.side);
        const std::vector<Tensor> want = reference(in.x, in.scale, in.offset, f, in.side);
        REQUIRE(got.size() == 5);
        CHECK(got[0].dtype() == dt);
        CHECK(got[0].shape() == shape);
        CHECK(relative_error(got[0], want[0]) <= y_tolerance(dt));
        const double stats_tol = dt == DType::Float64 ? 1e-13 : 1e-6;
        for (int k = 1; k <= 3; ++k) {
          CHECK(got[static_cast<size_t>(k)].dtype() == stats_dtype(dt));
          CHECK(got[static_cast<size_t>(k)].shape() == Shape({shape[shape.rank() - 1]}));
          CHECK(relative_error(got[static_cast<size_t>(k)], want[static_cast<size_t>(k)]) <= stats_tol);
        }
        CHECK(got[4].dtype() == DType::UInt8);
        CHECK(got[4].shape() == Shape({0}));  // the CPU keeps no state for the backward
        if (f != BatchNormOps::Bn) CHECK(ops::reduce_min(f64(got[0])).item<double>() >= 0.0);
      }
}

TEST_CASE("fused_batch_norm's gradient matches the composed formula's tape gradient", "[ops][batch_norm]") {
  for (DType dt : testing::kFloatDTypes)
    for (BatchNormOps f : kFusions) {
      INFO(dtype_name(dt) << " " << fusion_name(f));
      const Shape shape{3, 4, 2, 5};
      const BnInputs in = inputs_for(shape, dt, f);
      const Tensor w = sample(shape, DType::Float64, 15);
      std::vector<Tensor> sources = {in.x, in.scale, in.offset};
      if (in.side) sources.push_back(*in.side);

      GradientTape tape;
      for (const Tensor& s : sources) tape.watch(s);
      const Tensor y = ops::fused_batch_norm(in.x, in.scale, in.offset, kEps, f, in.side)[0];
      const std::vector<Tensor> got = tape.gradient(ops::reduce_sum(f64(y) * w), sources);

      std::vector<Tensor> wide;
      for (const Tensor& s : sources) wide.push_back(f64(s));
      GradientTape ref_tape;
      for (const Tensor& s : wide) ref_tape.watch(s);
      const std::optional<Tensor> side = in.side ? std::optional<Tensor>(wide[3]) : std::nullopt;
      const Tensor ref_y = reference(wide[0], wide[1], wide[2], f, side)[0];
      const std::vector<Tensor> want = ref_tape.gradient(ops::reduce_sum(ref_y * w), wide);

      REQUIRE(got.size() == want.size());
      // dx is a difference of sums: a half dx carries its dtype's rounding of the sums' terms.
      const double tol = dt == DType::Float64 ? 1e-11 : dt == DType::Float32 ? 1e-5 : 4 * testing::tolerance_for(dt);
      for (size_t k = 0; k < got.size(); ++k) {
        INFO("gradient " << k);
        CHECK(got[k].dtype() == sources[k].dtype());
        CHECK(relative_error(got[k], want[k]) <= tol);
      }
    }
}

TEST_CASE("fused_batch_norm's gradient differentiates again under an outer tape", "[ops][batch_norm]") {
  for (BatchNormOps f : kFusions) {
    INFO(fusion_name(f));
    const BnInputs in = inputs_for({4, 3, 3}, DType::Float64, f);
    const Tensor w = sample({4, 3, 3}, DType::Float64, 16), v = sample({4, 3, 3}, DType::Float64, 17);
    auto second = [&](bool fused) {
      GradientTape outer;
      outer.watch(in.x);
      outer.watch(in.scale);
      Tensor dx;
      {
        GradientTape inner;
        inner.watch(in.x);
        const Tensor y = fused ? ops::fused_batch_norm(in.x, in.scale, in.offset, kEps, f, in.side)[0]
                               : reference(in.x, in.scale, in.offset, f, in.side)[0];
        dx = inner.gradient(ops::reduce_sum(y * w), in.x);
      }
      return outer.gradient(ops::reduce_sum(dx * v), std::vector<Tensor>{in.x, in.scale});
    };
    const std::vector<Tensor> got = second(true), want = second(false);
    for (size_t k = 0; k < 2; ++k) CHECK(relative_error(got[k], want[k]) <= 1e-10);
  }
}

TEST_CASE("fused_batch_norm refuses what it does not take, naming what it got", "[ops][batch_norm]") {
  auto error_of = [](auto&& fn) {
    try {
      fn();
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const Tensor x = sample({4, 3}, DType::Float32, 1), c = sample({3}, DType::Float32, 2);
  CHECK_THAT(error_of([&] { ops::fused_batch_norm(sample({3}, DType::Float32, 1), c, c, kEps); }),
             Catch::Contains("rank >= 2"));
  CHECK_THAT(error_of([&] { ops::fused_batch_norm(x, sample({4}, DType::Float32, 2), c, kEps); }),
             Catch::Contains("expected scale of shape (3,)"));
  CHECK_THAT(error_of([&] { ops::fused_batch_norm(ops::cast(x, DType::Float16), ops::cast(c, DType::Float16), c, kEps); }),
             Catch::Contains("dtype float32"));
  CHECK_THAT(error_of([&] { ops::fused_batch_norm(x, c, c, kEps, BatchNormOps::BnAddRelu); }),
             Catch::Contains("BnAddRelu needs a side input"));
  CHECK_THAT(error_of([&] { ops::fused_batch_norm(x, c, c, kEps, BatchNormOps::Bn, x); }),
             Catch::Contains("Bn does not take a side input"));
  CHECK_THAT(error_of([&] { ops::fused_batch_norm(x, c, c, kEps, BatchNormOps::BnAddRelu, c); }),
             Catch::Contains("of x's shape (4, 3)"));
  CHECK_THAT(error_of([&] { ops::fused_batch_norm(x, c, c, -1.0); }), Catch::Contains("epsilon"));
  const std::vector<Tensor> r = ops::fused_batch_norm(x, c, c, kEps);
  CHECK_THAT(error_of([&] { ops::fused_batch_norm_grad(x, x, c, c, r[1], r[3], r[4], kEps, BatchNormOps::BnRelu); }),
             Catch::Contains("needs the forward's output y"));
  CHECK_THAT(error_of([&] { ops::fused_batch_norm_grad(x, x, c, c, r[1], r[3], r[1], kEps); }),
             Catch::Contains("saved state"));
}

TEST_CASE("BatchNormalization's training step takes the fused op on CUDA devices only", "[ops][batch_norm]") {
  const bool cuda = config::is_built_with_cuda();
  const Shape nhwc{8, 4, 4, 16};
  for (DType dt : {DType::Float32, DType::Float16, DType::BFloat16}) {
    CHECK(ops::fused_batch_norm_applies(DeviceType::CUDA, dt, nhwc, 3) == cuda);
    CHECK(ops::fused_batch_norm_applies(DeviceType::CUDA, dt, Shape{32, 10}, 1) == cuda);
    CHECK_FALSE(ops::fused_batch_norm_applies(DeviceType::CPU, dt, nhwc, 3));  // the CPU composes
  }
  CHECK_FALSE(ops::fused_batch_norm_applies(DeviceType::CUDA, DType::Float64, nhwc, 3));  // cuDNN: no float64
  CHECK_FALSE(ops::fused_batch_norm_applies(DeviceType::CUDA, DType::Float32, nhwc, 1));  // channels first
  CHECK_FALSE(ops::fused_batch_norm_applies(DeviceType::CUDA, DType::Float32, Shape{10}, 0));
  CHECK_FALSE(ops::fused_batch_norm_applies(DeviceType::CUDA, DType::Float32, Shape{0, 4, 4, 16}, 3));
  CHECK_FALSE(ops::fused_batch_norm_applies(DeviceType::CUDA, DType::Float16, Shape{1 << 16, 1 << 16}, 1));
  // The relu and residual add join the batch norm's pass: always on the CPU, on CUDA where cuDNN's NHWC kernel
  // takes them (float16, channels a multiple of 4).
  for (DType dt : testing::kFloatDTypes) CHECK(ops::fused_batch_norm_fuses(DeviceType::CPU, dt, 3));
  CHECK(ops::fused_batch_norm_fuses(DeviceType::CUDA, DType::Float16, 64));
  CHECK_FALSE(ops::fused_batch_norm_fuses(DeviceType::CUDA, DType::Float16, 6));
  CHECK_FALSE(ops::fused_batch_norm_fuses(DeviceType::CUDA, DType::Float32, 64));
  CHECK_FALSE(ops::fused_batch_norm_fuses(DeviceType::CUDA, DType::BFloat16, 64));
}

// ------------------------------------------------------------------------------------------------ graph pass

namespace {

int count_op(const graph::Graph& g, OpId op) {
  int n = 0;
  for (const graph::Node& node : g.nodes) n += node.kind == graph::NodeKind::Op && node.op == op;
  return n;
}

// The fusion of the graph's fused_batch_norm and fused_batch_norm_grad nodes, in program order.
std::vector<BatchNormOps> fusions(const graph::Graph& g, OpId op) {
  std::vector<BatchNormOps> out;
  for (const graph::Node& node : g.nodes)
    if (node.kind == graph::NodeKind::Op && node.op == op) out.push_back(std::get<BatchNormAttrs>(node.attrs).ops);
  return out;
}

}  // namespace

TEST_CASE("the graph compiler moves a relu and a residual add into the batch norm and its gradient",
          "[ops][batch_norm][function]") {
  const Shape shape{4, 3, 3, 5};
  const Shape c{5};
  const Tensor x = sample(shape, DType::Float64, 21), shortcut_x = sample(shape, DType::Float64, 22);
  const Tensor scale = sample(c, DType::Float64, 23), offset = sample(c, DType::Float64, 24);
  const Tensor w = sample(shape, DType::Float64, 25);
  // A ResNet block's end: shortcut = bn(shortcut_x); relu(shortcut + relu(bn(x)) ... ) with the gradients of both
  // inputs, the scales and offsets.
  auto step = [&](const std::vector<Tensor>& in) {
    GradientTape tape;
    for (const Tensor& t : in) tape.watch(t);
    const Tensor shortcut = ops::fused_batch_norm(in[1], in[3], in[4], kEps)[0];
    const Tensor main = ops::relu(ops::fused_batch_norm(in[0], in[2], in[4], kEps)[0]);
    const Tensor main2 = ops::fused_batch_norm(main, in[3], in[4], kEps)[0];
    const Tensor out = ops::relu(shortcut + main2);
    std::vector<Tensor> r = tape.gradient(ops::reduce_sum(out * w), in);
    r.push_back(out);
    return r;
  };
  const std::vector<Tensor> in = {x, shortcut_x, scale, sample(c, DType::Float64, 26), offset};
  const std::vector<Tensor> eager = step(in);
  auto f = ember::function(step);
  const std::vector<Tensor> traced = f(in);
  REQUIRE(traced.size() == eager.size());
  for (size_t k = 0; k < eager.size(); ++k) {
    INFO("output " << k);
    CHECK(relative_error(traced[k], eager[k]) <= 1e-12);
  }
  const graph::Graph& g = f.concrete_functions()[0]->graph();
  CHECK(count_op(g, OpId::relu) == 0);
  CHECK(count_op(g, OpId::relu_grad) == 0);
  // The shortcut's batch norm stays plain (the add's other operand is made after it); the main branch's first
  // takes its relu, the second the add and the relu.
  CHECK(fusions(g, OpId::fused_batch_norm) ==
        std::vector<BatchNormOps>{BatchNormOps::Bn, BatchNormOps::BnRelu, BatchNormOps::BnAddRelu});
  std::vector<BatchNormOps> backward = fusions(g, OpId::fused_batch_norm_grad);
  std::sort(backward.begin(), backward.end());
  CHECK(backward == std::vector<BatchNormOps>{BatchNormOps::Bn, BatchNormOps::BnRelu, BatchNormOps::BnAddRelu});
}

TEST_CASE("the graph compiler leaves a batch norm's relu alone where another op reads the batch norm's output",
          "[ops][batch_norm][function]") {
  const Tensor x = sample({6, 4}, DType::Float64, 31);
  const Tensor scale = sample({4}, DType::Float64, 32), offset = sample({4}, DType::Float64, 33);
  auto step = [&](const Tensor& in) {
    GradientTape tape;
    tape.watch(in);
    const Tensor y = ops::fused_batch_norm(in, scale, offset, kEps)[0];
    const Tensor out = ops::relu(y) + y * 0.5;
    return std::vector<Tensor>{tape.gradient(ops::reduce_sum(out * out), in), out};
  };
  const std::vector<Tensor> eager = step(x);
  auto f = ember::function(step);
  const std::vector<Tensor> traced = f(x);
  for (size_t k = 0; k < eager.size(); ++k) CHECK(relative_error(traced[k], eager[k]) <= 1e-12);
  const graph::Graph& g = f.concrete_functions()[0]->graph();
  CHECK(count_op(g, OpId::relu) == 1);
  CHECK(fusions(g, OpId::fused_batch_norm) == std::vector<BatchNormOps>{BatchNormOps::Bn});
}

// ------------------------------------------------------------------------------------------------ [cuda]

namespace {

bool has_gpu() { return device_count(DeviceType::CUDA) > 0; }

int g_fused_runs = 0;
void count_fused(const OpRecord& r) { g_fused_runs += r.op == OpId::fused_batch_norm; }

struct PolicyScope {
  mixed_precision::Policy old = mixed_precision::global_policy();
  explicit PolicyScope(const std::string& name) { mixed_precision::set_global_policy(name); }
  ~PolicyScope() { mixed_precision::set_global_policy(old); }
};

// One training-mode call of a BatchNormalization on `device` with the given gamma and beta: {y, d x, d gamma,
// d beta, moving mean, moving variance}, all on the CPU.
std::vector<Tensor> layer_step(Device device, const Tensor& x, const Tensor& gamma, const Tensor& beta) {
  DeviceScope on(device);
  layers::BatchNormalization bn({.momentum = 0.9});
  const Tensor xd = x.to(device);
  bn(xd, true);  // builds
  Variable g = bn.gamma(), b = bn.beta();
  g.assign(gamma.to(device));
  b.assign(beta.to(device));
  Variable mm = bn.moving_mean(), mv = bn.moving_variance();
  mm.assign(ops::zeros(mm.shape()));
  mv.assign(ops::ones(mv.shape()));
  GradientTape tape;
  tape.watch(xd);
  const Tensor y = bn(xd, true);
  const Tensor w = ops::cast(ops::reshape(ops::range(0, static_cast<double>(x.num_elements()), 1), x.shape()), y.dtype()) *
                   (1.0 / static_cast<double>(x.num_elements()));
  const Tensor loss = ops::reduce_sum(ops::cast(y * w, DType::Float32));
  std::vector<Tensor> grads = tape.gradient(loss, std::vector<Tensor>{xd, g.value(), b.value()});
  std::vector<Tensor> out = {y};
  for (const Tensor& t : grads) out.push_back(t);
  out.push_back(bn.moving_mean().value());
  out.push_back(bn.moving_variance().value());
  for (Tensor& t : out) t = t.to(Device::cpu());
  return out;
}

}  // namespace

TEST_CASE("cuda BatchNormalization trains through cuDNN's batch norm with the CPU's values", "[cuda][batch_norm]") {
  if (!has_gpu()) {
    WARN("no CUDA device (device_count(DeviceType::CUDA) == 0): skipped");
    return;
  }
  for (const std::string policy : {"float32", "mixed_float16", "mixed_bfloat16"}) {
    for (const Shape& shape : {Shape{16, 7, 7, 32}, Shape{64, 24}}) {
      INFO(policy << " " << shape);
      PolicyScope scope(policy);
      const DType dt = mixed_precision::global_policy().compute_dtype();
      DeviceScope cpu(Device::cpu());
      const Tensor x = sample(shape, dt, 41);
      const Shape c{shape[shape.rank() - 1]};
      const Tensor gamma = sample(c, DType::Float32, 42), beta = sample(c, DType::Float32, 43);
      const std::vector<Tensor> want = layer_step(Device::cpu(), x, gamma, beta);
      const int hook = add_op_hook(&count_fused);
      g_fused_runs = 0;
      const std::vector<Tensor> got = layer_step(Device::cuda(0), x, gamma, beta);
      remove_op_hook(hook);
      CHECK(g_fused_runs >= 1);
      const char* names[] = {"y", "d x", "d gamma", "d beta", "moving mean", "moving variance"};
      const double tol = dt == DType::Float32 ? 1e-4 : 4 * testing::tolerance_for(dt);
      for (size_t k = 0; k < want.size(); ++k) {
        INFO(names[k]);
        CHECK(got[k].dtype() == want[k].dtype());
        CHECK(relative_error(got[k], want[k]) <= tol);
      }
    }
  }
}

TEST_CASE("cuda traced residual blocks run cuDNN's fused batch norm, relu and add with the CPU's values",
          "[cuda][batch_norm][function]") {
  if (!has_gpu()) {
    WARN("no CUDA device (device_count(DeviceType::CUDA) == 0): skipped");
    return;
  }
  for (DType dt : {DType::Float32, DType::Float16}) {
    INFO(dtype_name(dt));
    const Shape shape{8, 6, 6, 16}, c{16};
    DeviceScope cpu(Device::cpu());
    const Tensor x = sample(shape, dt, 51), z = sample(shape, dt, 52);
    const Tensor scale = sample(c, DType::Float32, 53), offset = sample(c, DType::Float32, 54);
    const Tensor w = sample(shape, DType::Float32, 55);
    auto step = [&](const std::vector<Tensor>& in) {
      GradientTape tape;
      for (const Tensor& t : in) tape.watch(t);
      const Tensor a = ops::relu(ops::fused_batch_norm(in[0], in[2], in[3], kEps)[0]);
      const Tensor out = ops::relu(in[1] + ops::fused_batch_norm(a, in[2], in[3], kEps)[0]);
      std::vector<Tensor> r = tape.gradient(ops::reduce_sum(ops::cast(out, DType::Float32) * in[4]), in);
      r.push_back(out);
      return r;
    };
    const std::vector<Tensor> want = step(std::vector<Tensor>{x, z, scale, offset, w});
    DeviceScope on(Device::cuda(0));
    auto f = ember::function(step);
    const std::vector<Tensor> gpu_in = {x.to(Device::cuda(0)), z.to(Device::cuda(0)), scale.to(Device::cuda(0)),
                                        offset.to(Device::cuda(0)), w.to(Device::cuda(0))};
    const std::vector<Tensor> got = f(gpu_in);
    // cuDNN fuses the relu and the add for float16 (16 channels); float32 keeps them as ops.
    const graph::Graph& g = f.concrete_functions()[0]->graph();
    const bool fused = dt == DType::Float16;
    CHECK(fusions(g, OpId::fused_batch_norm) ==
          (fused ? std::vector<BatchNormOps>{BatchNormOps::BnRelu, BatchNormOps::BnAddRelu}
                 : std::vector<BatchNormOps>{BatchNormOps::Bn, BatchNormOps::Bn}));
    CHECK(count_op(g, OpId::relu_grad) == (fused ? 0 : 2));
    REQUIRE(got.size() == want.size());
    const double tol = dt == DType::Float32 ? 1e-4 : 4 * testing::tolerance_for(dt);
    for (size_t k = 0; k < want.size(); ++k) {
      INFO("output " << k);
      CHECK(relative_error(got[k], want[k]) <= tol);
    }
  }
}
