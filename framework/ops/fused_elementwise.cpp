#include "framework/ops/fused_elementwise.h"

#include <algorithm>

namespace ember::ops {

namespace cpu_detail {
// framework/ops/cpu/fused_elementwise.cpp
void fused_elementwise(const FusedElementwise& f, std::span<const Tensor> inputs, std::span<Tensor> outputs);
}  // namespace cpu_detail

std::string FusedElementwise::name() const {
  std::string out = "fused[";
  for (size_t s = 0; s < steps.size(); ++s) out += (s ? ", " : "") + std::string(op_name(steps[s].op));
  return out + "]";
}

bool fusible_elementwise(OpId op, const Attrs& attrs) {
  switch (op) {
    case OpId::neg: case OpId::abs: case OpId::sign: case OpId::exp: case OpId::log: case OpId::log1p:
    case OpId::sqrt: case OpId::rsqrt: case OpId::square: case OpId::reciprocal: case OpId::sin: case OpId::cos:
    case OpId::tanh: case OpId::sigmoid: case OpId::relu: case OpId::relu6: case OpId::elu: case OpId::selu:
    case OpId::gelu: case OpId::softplus: case OpId::softsign: case OpId::swish: case OpId::floor:
    case OpId::ceil: case OpId::round: case OpId::is_finite: case OpId::logical_not:
    case OpId::add: case OpId::sub: case OpId::mul: case OpId::div: case OpId::div_no_nan: case OpId::pow:
    case OpId::maximum: case OpId::minimum: case OpId::squared_difference: case OpId::relu_grad:
    case OpId::equal: case OpId::not_equal: case OpId::less: case OpId::less_equal: case OpId::greater:
    case OpId::greater_equal: case OpId::logical_and: case OpId::logical_or: case OpId::where:
    case OpId::clip_by_value:
      return true;
    case OpId::cast: {
      const DType to = std::get<CastAttrs>(attrs).dtype;
      return to == DType::Float32 || to == DType::Bool;
    }
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
  EMBER_CHECK(inputs.size() == f.inputs.size(), Internal)
      << f.name() << ": got " << inputs.size() << " inputs, expected " << f.inputs.size();
  if (op_by_op || !f.device.is_cpu()) {
    std::vector<Tensor> regs(inputs.begin(), inputs.end());
    std::vector<Tensor> args;
    for (const FusedElementwise::Step& s : f.steps) {
      args.clear();
      for (int a : s.args) args.push_back(regs[static_cast<size_t>(a)]);
      regs.push_back(run_op(s.op, args, s.spec, s.attrs, f.device));
    }
    std::vector<Tensor> out;
    for (int r : f.outputs) out.push_back(regs[static_cast<size_t>(r)]);
    return out;
  }
  std::vector<Tensor> out;
  for (int r : f.outputs) {
    const DType dtype = r < static_cast<int>(f.inputs.size()) ? f.inputs[static_cast<size_t>(r)].dtype
                                                               : f.steps[static_cast<size_t>(r) - f.inputs.size()].dtype;
    out.push_back(Tensor::empty(f.shape, dtype, f.device));
  }
  cpu_detail::fused_elementwise(f, inputs, out);
  return out;
}

}  // namespace ember::ops
