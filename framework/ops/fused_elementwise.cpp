#include "framework/ops/fused_elementwise.h"

#include <algorithm>

namespace ember::ops {

namespace cpu_detail {
// framework/ops/cpu/fused_elementwise.cpp
void fused_elementwise(const FusedElementwise& f, std::span<const Tensor> inputs, std::span<Tensor> outputs);
}  // namespace cpu_detail

namespace {
detail::FusedElementwiseKernel g_kernels[2] = {cpu_detail::fused_elementwise, nullptr};  // per DeviceType
bool (*g_available[2])() = {nullptr, nullptr};
}  // namespace

namespace detail {
void set_fused_elementwise_kernel(DeviceType device, FusedElementwiseKernel kernel, bool (*available)()) {
  g_kernels[static_cast<int>(device)] = kernel;
  g_available[static_cast<int>(device)] = available;
}
}  // namespace detail

bool fused_elementwise_runs_on(DeviceType device) {
  const int d = static_cast<int>(device);
  return g_kernels[d] != nullptr && (!g_available[d] || g_available[d]());
}

std::string FusedElementwise::name() const {
  std::string out = "fused[";
  if (product) {
    out += op_name(product->op);
    const FusedActivation a = fused_activation_of(product->attrs);
    if (a != FusedActivation::None) out += std::string("[") + fused_activation_name(a) + "]";
  }
  for (size_t s = 0; s < steps.size(); ++s)
    out += (s || product ? ", " : "") + std::string(op_name(steps[s].op));
  return out + "]";
}

bool fusible_elementwise(OpId op, const Attrs& attrs) {
  switch (op) {
#define EMBER_FUSED_UNARY(name, F) case OpId::name:
#define EMBER_FUSED_BINARY(name, F) case OpId::name:
#include "framework/ops/fused_ops.def"
    case OpId::gelu: case OpId::logical_not: case OpId::logical_and: case OpId::logical_or: case OpId::where:
    case OpId::clip_by_value:
      return true;
    case OpId::cast:
      return fused_value_dtype(std::get<CastAttrs>(attrs).dtype);
    default:
      return false;
  }
}

bool fused_broadcast(const Shape& input, const Shape& shape, FusedElementwise::Input& out) {
  // Leading ones change nothing: (1, c) reads as (c,).
  auto strip = [](const Shape& s) {
    std::vector<int64_t> d(s.begin(), s.end());
    d.erase(d.begin(), std::find_if(d.begin(), d.end(), [](int64_t x) { return x != 1; }));
    return d;
  };
  const std::vector<int64_t> in = strip(input), loop = strip(shape);
  const int64_t n = input.num_elements();
  if (in == loop) {
    out.broadcast = FusedElementwise::Broadcast::Full;
    out.period = 1;
    return true;
  }
  if (n == 1) {
    out.broadcast = FusedElementwise::Broadcast::Scalar;
    out.period = 1;
    return true;
  }
  if (in.size() > loop.size()) return false;
  // Inner: the loop's trailing dimensions.
  if (std::equal(in.begin(), in.end(), loop.end() - static_cast<std::ptrdiff_t>(in.size()))) {
    out.broadcast = FusedElementwise::Broadcast::Inner;
    out.period = n;
    return true;
  }
  // Outer: the loop's leading dimensions, then ones (a (n, 1) column over (n, c)).
  if (input.rank() == shape.rank()) {
    int64_t k = 0;
    while (k < input.rank() && input[k] == shape[k]) ++k;
    int64_t covered = 1;
    for (int64_t j = k; j < input.rank(); ++j) {
      if (input[j] != 1) return false;
      covered *= shape[j];
    }
    if (k == 0 || covered == 1) return false;
    out.broadcast = FusedElementwise::Broadcast::Outer;
    out.period = covered;
    return true;
  }
  return false;
}

std::vector<Tensor> run_fused_elementwise(const FusedElementwise& f, std::span<const Tensor> inputs, bool op_by_op) {
  const size_t arity = f.product ? static_cast<size_t>(f.product->arity) : 0;
  const size_t expected = arity + f.inputs.size() - (f.product ? 1 : 0);
  EMBER_CHECK(inputs.size() == expected, Internal)
      << f.name() << ": got " << inputs.size() << " inputs, expected " << expected;
  EMBER_CHECK(!f.product || f.device.is_cpu(), Internal) << f.name() << ": a product's epilogue runs on the CPU only";
  const detail::FusedElementwiseKernel kernel = g_kernels[static_cast<int>(f.device.type())];
  if (op_by_op || !kernel) {
    // The product as its own op, its output the chain's input it makes; then each step as its own op.
    std::vector<Tensor> regs(inputs.begin() + static_cast<std::ptrdiff_t>(arity), inputs.end());
    if (f.product)
      regs.insert(regs.begin() + f.product->input,
                  run_op(f.product->op, inputs.first(arity), f.product->spec, f.product->attrs, f.device));
    std::vector<Tensor> args;
    for (const FusedElementwise::Step& s : f.steps) {
      args.clear();
      for (int a : s.args) args.push_back(regs[static_cast<size_t>(a)]);
      regs.push_back(run_op(s.op, args, s.spec, s.attrs, f.device));
    }
    std::vector<Tensor> out;
    if (f.product) out.push_back(regs[static_cast<size_t>(f.product->input)]);
    for (int r : f.outputs) out.push_back(regs[static_cast<size_t>(r)]);
    return out;
  }
  std::vector<Tensor> out;
  if (f.product) out.push_back(Tensor::empty(f.product->spec.shape, f.product->spec.dtype, f.device));
  for (int r : f.outputs) out.push_back(Tensor::empty(f.shape, f.dtype_of(r), f.device));
  kernel(f, inputs, out);
  return out;
}

}  // namespace ember::ops
