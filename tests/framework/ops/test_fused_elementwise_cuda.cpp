// jit_compile's fused elementwise chains on CUDA: the graph compiler fuses a GPU chain in a CUDA build; the kernels
// generated for chains compile with NVRTC (no GPU needed: compiled for named architectures); on a GPU ([cuda]) they
// give the bits of the ops run one by one, and each chain is compiled once.
#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "framework/ember.h"
#include "framework/graph/passes.h"
#include "framework/ops/fused_elementwise.h"
#include "tests/support/graph_builder.h"
#include "tests/support/tensor_testing.h"
#if defined(EMBER_TEST_NVRTC)
#include "framework/ops/cuda/fused_elementwise_cuda.h"
#endif

using namespace ember;
using Fused = ops::FusedElementwise;

namespace {

// A chain written by hand over `shape`: registers are the inputs, then the steps' results.
struct Chain {
  Fused f;
  explicit Chain(const Shape& shape, Device device = Device::cpu()) {
    f.shape = shape;
    f.device = device;
  }
  int input(DType dtype, Fused::Broadcast broadcast, int64_t period = 1) {
    EMBER_CHECK(f.steps.empty(), Internal) << "inputs come first";
    f.inputs.push_back({dtype, broadcast, period});
    return static_cast<int>(f.inputs.size()) - 1;
  }
  int step(OpId op, std::vector<int> args, DType dtype = DType::Float32, Attrs attrs = {}) {
    f.steps.push_back({op, attrs, std::move(args), dtype, OutputSpec{f.shape, dtype}});
    return f.num_registers() - 1;
  }
  void output(int r) { f.outputs.push_back(r); }
};

// Every fusible op of the op table, once, each step's value an output: x (whole), y (a row over the columns), z (a
// column over the rows), c (one bool for all), s (one float for all).
Chain every_fusible_op(Device device = Device::cpu()) {
  Chain c({40, 37}, device);
  const int x = c.input(DType::Float32, Fused::Broadcast::Full);
  const int y = c.input(DType::Float32, Fused::Broadcast::Inner, 37);
  const int z = c.input(DType::Float32, Fused::Broadcast::Outer, 37);
  const int flag = c.input(DType::Bool, Fused::Broadcast::Scalar);
  const int s = c.input(DType::Float32, Fused::Broadcast::Scalar);
  const int mask = c.step(OpId::greater, {x, y}, DType::Bool);
  c.output(mask);
  const std::set<OpId> to_bool = {OpId::is_finite, OpId::logical_not, OpId::equal, OpId::not_equal, OpId::less,
                                  OpId::less_equal, OpId::greater, OpId::greater_equal, OpId::logical_and,
                                  OpId::logical_or};
  for (int i = 0; i < kNumOps; ++i) {
    const OpId op = static_cast<OpId>(i);
    const DType dtype = to_bool.count(op) ? DType::Bool : DType::Float32;
    if (op == OpId::gelu) {
      c.output(c.step(op, {x}, dtype, GeluAttrs{false}));
      c.output(c.step(op, {x}, dtype, GeluAttrs{true}));
    } else if (op == OpId::cast) {
      c.output(c.step(op, {x}, DType::Bool, CastAttrs{DType::Bool}));
      c.output(c.step(op, {mask}, DType::Float32, CastAttrs{DType::Float32}));
    } else if (op == OpId::logical_not) {
      c.output(c.step(op, {mask}, dtype));
    } else if (op == OpId::logical_and || op == OpId::logical_or) {
      c.output(c.step(op, {mask, flag}, dtype));
    } else if (op == OpId::where) {
      c.output(c.step(op, {mask, x, z}, dtype));
    } else if (op == OpId::clip_by_value) {
      c.output(c.step(op, {x, z, s}, dtype));
    } else if (ops::fusible_elementwise(op, {})) {
      const int arity = op_info(op).arity;
      REQUIRE((arity == 1 || arity == 2));
      c.output(c.step(op, arity == 1 ? std::vector<int>{x} : std::vector<int>{x, y}, dtype));
    }
  }
  return c;
}

// x * w + b then relu: a product that feeds the next step's sum.
Chain multiply_add_relu(Device device = Device::cpu()) {
  Chain c({64, 33}, device);
  const int x = c.input(DType::Float32, Fused::Broadcast::Full);
  const int w = c.input(DType::Float32, Fused::Broadcast::Full);
  const int b = c.input(DType::Float32, Fused::Broadcast::Inner, 33);
  const int sum = c.step(OpId::add, {c.step(OpId::mul, {x, w}), b});
  c.output(sum);
  c.output(c.step(OpId::relu, {sum}));
  return c;
}

// Mixed precision's chain in `h` (float16 or bfloat16): a float32 input cast to h, half ops over a half input read
// whole, a half bias and a half scalar, casts back to float32 and through h again, a comparison, a cast to the other
// half type; half, float32 and bool outputs.
Chain half_chain(DType h, Device device = Device::cpu()) {
  const DType other = h == DType::Float16 ? DType::BFloat16 : DType::Float16;
  Chain c({40, 37}, device);
  const int x = c.input(DType::Float32, Fused::Broadcast::Full);
  const int xh = c.input(h, Fused::Broadcast::Full);
  const int bias = c.input(h, Fused::Broadcast::Inner, 37);
  const int column = c.input(h, Fused::Broadcast::Outer, 37);
  const int s = c.input(h, Fused::Broadcast::Scalar);
  const int a = c.step(OpId::cast, {x}, h, CastAttrs{h});
  const int y = c.step(OpId::relu, {c.step(OpId::add, {c.step(OpId::mul, {a, s}, h), bias}, h)}, h);
  const int z = c.step(OpId::sub, {c.step(OpId::mul, {c.step(OpId::sigmoid, {y}, h), column}, h), xh}, h);
  c.output(z);
  const int f = c.step(OpId::cast, {z}, DType::Float32, CastAttrs{DType::Float32});
  const int t = c.step(OpId::cast, {c.step(OpId::tanh, {f})}, h, CastAttrs{h});
  c.output(c.step(OpId::cast, {t}, DType::Float32, CastAttrs{DType::Float32}));
  c.output(c.step(OpId::greater, {z, xh}, DType::Bool));
  c.output(c.step(OpId::cast, {z}, other, CastAttrs{other}));
  c.output(c.step(OpId::is_finite, {c.step(OpId::exp, {y}, h)}, DType::Bool));
  return c;
}

}  // namespace

TEST_CASE("the fusion pass fuses a GPU chain where the CUDA backend has a fused kernel", "[function][jit]") {
  CHECK(ops::fused_elementwise_runs_on(DeviceType::CPU));
  CHECK(ops::fused_elementwise_runs_on(DeviceType::CUDA) == config::is_built_with_cuda());
  // A graph on cuda:0 written by hand: the pass needs no device to run.
  ember::testing::GraphBuilder b;
  b.device = Device::cuda(0);
  const int x = b.input({4, 8}), bias = b.input({8});
  const int y = b.op(OpId::relu, {b.op(OpId::add, {b.op(OpId::mul, {x, x}, {4, 8}), bias}, {4, 8})}, {4, 8});
  b.g.outputs = {y};
  graph::fuse_elementwise(b.g);
  if (config::is_built_with_cuda()) {
    CHECK(b.g.count(graph::NodeKind::Fused) == 1);
    CHECK(b.g.count(OpId::mul) + b.g.count(OpId::add) + b.g.count(OpId::relu) == 0);
  } else {
    CHECK(b.g.count(graph::NodeKind::Fused) == 0);
  }
}

#if defined(EMBER_TEST_NVRTC)

// NVRTC is loaded by the first compile, not at start (linked, it added about 30 MiB of resident memory to every
// process). Declared first, so that it runs before this program's compiles.
TEST_CASE("CUDA builds load NVRTC on first use, not at start", "[jit][nvrtc]") {
  auto mapped = [] {
    std::ifstream maps("/proc/self/maps");
    return std::string(std::istreambuf_iterator<char>(maps), {}).find("libnvrtc.so") != std::string::npos;
  };
  CHECK_FALSE(mapped());
  Chain c({8});
  c.output(c.step(OpId::exp, {c.input(DType::Float32, Fused::Broadcast::Full)}));
  cuda::compile_fused_elementwise(cuda::fused_elementwise_source(c.f), 90);
  CHECK(mapped());
}

namespace {
bool has_entry(const cuda::NvrtcProgram& p) {
  return p.ptx.find(std::string(".entry ") + cuda::kFusedKernelName) != std::string::npos && !p.cubin.empty();
}
}  // namespace

TEST_CASE("fused chains compile with NVRTC for the GPU architectures", "[jit][nvrtc]") {
  // Unary: one input read whole.
  Chain unary({1000});
  const int x = unary.input(DType::Float32, Fused::Broadcast::Full);
  unary.output(unary.step(OpId::tanh, {unary.step(OpId::exp, {x})}));
  // Binary ops over each broadcast, with a host scalar passed by value.
  Chain binary({6, 5});
  const int a = binary.input(DType::Float32, Fused::Broadcast::Full);
  const int row = binary.input(DType::Float32, Fused::Broadcast::Inner, 5);
  const int column = binary.input(DType::Float32, Fused::Broadcast::Outer, 5);
  const int scalar = binary.input(DType::Float32, Fused::Broadcast::Scalar);
  binary.output(binary.step(OpId::div, {binary.step(OpId::sub, {binary.step(OpId::add, {a, row}), column}), scalar}));
  // Comparisons with bool outputs and a bool input.
  Chain compare({300});
  const int p = compare.input(DType::Float32, Fused::Broadcast::Full);
  const int q = compare.input(DType::Bool, Fused::Broadcast::Full);
  const int less = compare.step(OpId::less, {p, compare.step(OpId::square, {p})}, DType::Bool);
  compare.output(compare.step(OpId::logical_or, {less, q}, DType::Bool));
  compare.output(compare.step(OpId::where, {less, p, compare.step(OpId::neg, {p})}));

  const std::vector<std::pair<std::string, std::string>> sources = {
      {"unary", cuda::fused_elementwise_source(unary.f)},
      {"binary, each broadcast", cuda::fused_elementwise_source(binary.f)},
      {"binary, a host scalar by value", cuda::fused_elementwise_source(binary.f, {false, false, false, true})},
      {"comparisons, bool outputs", cuda::fused_elementwise_source(compare.f)},
      {"every fusible op, several outputs", cuda::fused_elementwise_source(every_fusible_op().f)},
      {"multiply, add, relu", cuda::fused_elementwise_source(multiply_add_relu().f)},
  };
  for (const auto& [name, source] : sources) {
    for (int arch : {80, 90}) {
      INFO(name << " for sm_" << arch << ":\n" << source);
      CHECK(has_entry(cuda::compile_fused_elementwise(source, arch)));
    }
  }
  // Half-type chains: their buffers as 16-bit words, converted as the ops' kernels convert.
  for (const DType h : {DType::Float16, DType::BFloat16}) {
    const std::string source = cuda::fused_elementwise_source(half_chain(h).f);
    const std::string by_value = cuda::fused_elementwise_source(half_chain(h).f, {false, false, false, false, true});
    for (int arch : {80, 90}) {
      INFO(h << " for sm_" << arch << ":\n" << source);
      CHECK(has_entry(cuda::compile_fused_elementwise(source, arch)));
      CHECK(has_entry(cuda::compile_fused_elementwise(by_value, arch)));
    }
    CHECK(source.find("const unsigned short* __restrict__ in1") != std::string::npos);
    CHECK(source.find("unsigned short* __restrict__ out0") != std::string::npos);
    CHECK(by_value.find("float in4") != std::string::npos);
    const cuda::NvrtcProgram p = cuda::compile_fused_elementwise(source, 90);
    CHECK(p.ptx.find("cvt.rn.f16.f32") != std::string::npos);
    CHECK(p.ptx.find("cvt.rn.bf16.f32") != std::string::npos);
  }
  CHECK(sources[2].second.find("float in3") != std::string::npos);     // the scalar's value
  CHECK(sources[1].second.find("float* __restrict__ in3") != std::string::npos);  // its address
  CHECK(sources[3].second.find("bool* __restrict__ out0") != std::string::npos);
}

TEST_CASE("a fused kernel rounds each step: no multiply-add across two ops", "[jit][nvrtc]") {
  // The ops alone round x * w to float before adding b; an FMA would not.
  const std::string source = cuda::fused_elementwise_source(multiply_add_relu().f);
  const cuda::NvrtcProgram p = cuda::compile_fused_elementwise(source, 90);
  CHECK(p.ptx.find("fma.rn.f32") == std::string::npos);
  CHECK(p.ptx.find("mul.f32") != std::string::npos);
  CHECK(p.ptx.find("add.f32") != std::string::npos);
}

TEST_CASE("a kernel NVRTC cannot compile is reported with NVRTC's log", "[jit][nvrtc]") {
  try {
    cuda::compile_fused_elementwise("extern \"C\" __global__ void ember_fused() { undeclared_name(); }", 90);
    FAIL("expected ember::Internal");
  } catch (const Internal& e) {
    const std::string what = e.what();
    CHECK(what.find("NVRTC could not compile") != std::string::npos);
    CHECK(what.find("undeclared_name") != std::string::npos);  // from the log
    CHECK(what.find("sm_90") != std::string::npos);
  }
}

#endif  // EMBER_TEST_NVRTC

namespace {
std::vector<Tensor> chain_inputs(const Fused& f, Device device, uint64_t seed) {
  std::vector<Tensor> out;
  DeviceScope on_cpu(Device::cpu());
  for (const Fused::Input& in : f.inputs) {
    Shape shape = f.shape;
    if (in.broadcast == Fused::Broadcast::Scalar) shape = Shape{};
    if (in.broadcast == Fused::Broadcast::Inner) shape = Shape{in.period};
    if (in.broadcast == Fused::Broadcast::Outer) shape = Shape{f.shape.num_elements() / in.period, 1};
    Tensor t = random::normal(shape, {.seed = seed++});
    // Signed zeros, infinities and NaN among the values, where there is room.
    if (t.num_elements() > 8) {
      std::vector<float> v = t.to_vector<float>();
      const float special[] = {0.0f, -0.0f, std::numeric_limits<float>::infinity(),
                               -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()};
      for (size_t i = 0; i < std::size(special); ++i) v[i * 3] = special[i];
      t = Tensor::from_vector(v, shape);
    }
    if (in.dtype == DType::Bool) t = ops::greater(t, Tensor::scalar(0.0f));
    if (in.dtype == DType::Float16 || in.dtype == DType::BFloat16) t = ops::cast(t * 4.0f, in.dtype);
    // A 0-d input stays on the host (as a traced constant does), read by value.
    out.push_back(shape.rank() == 0 ? t : t.to(device));
  }
  return out;
}
}  // namespace

TEST_CASE("fused CUDA kernels give the ops' own bits, compiled once per chain", "[cuda][jit]") {
  if (device_count(DeviceType::CUDA) == 0) {
    WARN("no CUDA device (device_count(DeviceType::CUDA) == 0): skipped");
    return;
  }
  const Device gpu = Device::cuda(0);
  for (Chain c : {every_fusible_op(gpu), multiply_add_relu(gpu), half_chain(DType::Float16, gpu),
                  half_chain(DType::BFloat16, gpu)}) {
    INFO(c.f.name());
    const std::vector<Tensor> in = chain_inputs(c.f, gpu, 3);
    const std::vector<Tensor> fused = ops::run_fused_elementwise(c.f, in);
    const std::vector<Tensor> alone = ops::run_fused_elementwise(c.f, in, /*op_by_op=*/true);
    REQUIRE(fused.size() == alone.size());
    for (size_t o = 0; o < fused.size(); ++o) {
      INFO("output " << o);
      CHECK(fused[o].device() == gpu);
      CHECK(ember::testing::same_bits(fused[o].to(Device::cpu()), alone[o].to(Device::cpu())));
    }
#if defined(EMBER_TEST_NVRTC)
    // Cached by its source: the chain again compiles nothing.
    const int64_t compiled = cuda::fused_elementwise_compiles();
    ops::run_fused_elementwise(c.f, in);
    CHECK(cuda::fused_elementwise_compiles() == compiled);
#endif
  }
}

TEST_CASE("jit_compile fuses a GPU chain, with the unfused ops' bits", "[cuda][jit]") {
  if (device_count(DeviceType::CUDA) == 0) {
    WARN("no CUDA device (device_count(DeviceType::CUDA) == 0): skipped");
    return;
  }
  DeviceScope on_gpu(Device::cuda(0));
  const auto body = [](const Tensor& x, const Tensor& b) { return ops::gelu(ops::relu(x * 1.5f + b) - 0.25f, true); };
  const Tensor x = random::normal({256, 96}, {.seed = 1}), b = random::normal({96}, {.seed = 2});
  auto jit = ember::function(body, {.jit_compile = true});
  jit(x, b);  // traces
  const Tensor expected = body(x, b).to(Device::cpu());
  CHECK(ember::testing::same_bits(jit(x, b).to(Device::cpu()), expected));
  CHECK(jit.concrete_functions().at(0)->graph().count(graph::NodeKind::Fused) == 1);
}

TEST_CASE("a float16 or bfloat16 chain gives the ops' own bits on the CPU", "[jit]") {
  for (const DType h : {DType::Float16, DType::BFloat16}) {
    INFO(h);
    const Chain c = half_chain(h);
    const std::vector<Tensor> in = chain_inputs(c.f, Device::cpu(), 5);
    const std::vector<Tensor> fused = ops::run_fused_elementwise(c.f, in);
    const std::vector<Tensor> alone = ops::run_fused_elementwise(c.f, in, /*op_by_op=*/true);
    REQUIRE(fused.size() == alone.size());
    for (size_t o = 0; o < fused.size(); ++o) {
      INFO("output " << o);
      CHECK(fused[o].dtype() == alone[o].dtype());
      CHECK(ember::testing::same_bits(fused[o], alone[o]));
    }
  }
}
