// The CPU kernel of a fused elementwise chain: blocks of kBlock elements, each step of the chain over the block
// into a register (a block buffer) in turn, so that the intermediate values never leave the core's cache. Every
// value is a float: float32 as itself, bool as 0 or 1, float16 and bfloat16 widened on loading. Each step applies
// its op's functor (framework/ops/functors.h) to floats, as the op's own kernel does, and a step whose value is
// half rounds its block to that type and back, as the op's kernel rounds on storing (mixed precision's ops compute
// in float32 and round at every op's end): so the results are the unfused ops' bits. The conversions are
// half_convert.h's, the ones the ops' kernels use.
#include <cstring>
#include <vector>

#include "framework/ops/cpu/elementwise_loops.h"
#include "framework/ops/cpu/half_convert.h"
#include "framework/ops/cpu/half_round.h"
#include "framework/ops/cpu/product_epilogue.h"
#include "framework/ops/functors.h"
#include "framework/ops/fused_elementwise.h"

namespace ember::ops::cpu_detail {
namespace {

using Fused = FusedElementwise;
constexpr int64_t kBlock = 256;

// The block [i, i + k) of an input as floats: a pointer into a float32 input read whole, else dst filled.
const float* load(const Fused::Input& in, const Tensor& t, int64_t i, int64_t k, float* dst) {
  auto fill = [&](auto value_at) {
    switch (in.broadcast) {
      case Fused::Broadcast::Full:
        for (int64_t j = 0; j < k; ++j) dst[j] = value_at(i + j);
        break;
      case Fused::Broadcast::Scalar:
        std::fill_n(dst, k, value_at(0));
        break;
      case Fused::Broadcast::Inner: {
        int64_t r = i % in.period;
        for (int64_t j = 0; j < k; ++j) {
          dst[j] = value_at(r);
          if (++r == in.period) r = 0;
        }
        break;
      }
      case Fused::Broadcast::Outer: {
        int64_t q = i / in.period, r = i % in.period;
        for (int64_t j = 0; j < k; ++j) {
          dst[j] = value_at(q);
          if (++r == in.period) r = 0, ++q;
        }
        break;
      }
    }
  };
  auto fill_half = [&](const auto* p) {
    if (in.broadcast == Fused::Broadcast::Full) return cpu::widen_serial(p + i, dst, k);
    fill([p](int64_t j) { return cpu::to_compute(p[j]); });
  };
  if (in.dtype == DType::Float32) {
    const float* p = static_cast<const float*>(t.raw_data());
    if (in.broadcast == Fused::Broadcast::Full) return p + i;
    fill([p](int64_t j) { return p[j]; });
  } else if (in.dtype == DType::Float16) {
    fill_half(static_cast<const half*>(t.raw_data()));
  } else if (in.dtype == DType::BFloat16) {
    fill_half(static_cast<const bfloat16*>(t.raw_data()));
  } else {
    const bool* p = static_cast<const bool*>(t.raw_data());
    fill([p](int64_t j) { return p[j] ? 1.0f : 0.0f; });
  }
  return dst;
}

template <class F>
void unary(const float* a, float* o, int64_t k, F f) {
  for (int64_t j = 0; j < k; ++j) o[j] = static_cast<float>(f(a[j]));
}
template <class F>
void binary(const float* a, const float* b, float* o, int64_t k, F f) {
  for (int64_t j = 0; j < k; ++j) o[j] = static_cast<float>(f(a[j], b[j]));
}

// One step over a block: o = op(registers...).
void step(const Fused::Step& s, const float* const* r, float* o, int64_t k) {
  namespace fn = functors;
  const float* a = r[s.args[0]];
  const float* b = s.args.size() > 1 ? r[s.args[1]] : nullptr;
  switch (s.op) {
#define EMBER_FUSED_UNARY(name, F) \
  case OpId::name:                 \
    return unary(a, o, k, fn::F{});
#define EMBER_FUSED_BINARY(name, F) \
  case OpId::name:                  \
    return binary(a, b, o, k, fn::F{});
#include "framework/ops/fused_ops.def"
    case OpId::gelu:
      if (std::get<GeluAttrs>(s.attrs).approximate) return unary(a, o, k, fn::GeluTanh{});
      return unary(a, o, k, fn::GeluExact{});
    case OpId::logical_not: return unary(a, o, k, [](float x) { return fn::LogicalNot{}(x != 0.0f); });
    case OpId::cast:
      if (s.dtype == DType::Bool) return unary(a, o, k, fn::CastTo<bool>{});
      // To a float type: the value as it is (bool's 0 or 1, or a float), rounded below when the type is half.
      return unary(a, o, k, [](float x) { return x; });
    case OpId::logical_and:
      return binary(a, b, o, k, [](float x, float y) { return fn::LogicalAnd{}(x != 0.0f, y != 0.0f); });
    case OpId::logical_or:
      return binary(a, b, o, k, [](float x, float y) { return fn::LogicalOr{}(x != 0.0f, y != 0.0f); });
    case OpId::where: {
      const float* c = r[s.args[2]];
      for (int64_t j = 0; j < k; ++j) o[j] = fn::Where{}(a[j] != 0.0f, b[j], c[j]);
      return;
    }
    case OpId::clip_by_value: {
      const float* hi = r[s.args[2]];
      for (int64_t j = 0; j < k; ++j) o[j] = fn::ClipByValue{}(a[j], b[j], hi[j]);
      return;
    }
    default:
      EMBER_CHECK(false, Internal) << "fused elementwise kernel: op '" << op_name(s.op) << "' is not fusible";
  }
}

// Register r's block [i, i + k) stored into the output t of its dtype.
void store(const float* r, Tensor& t, int64_t i, int64_t k) {
  switch (t.dtype()) {
    case DType::Float32:
      std::memcpy(static_cast<float*>(t.raw_data()) + i, r, static_cast<size_t>(k) * sizeof(float));
      return;
    case DType::Float16: return cpu::narrow_serial(r, static_cast<half*>(t.raw_data()) + i, k);
    case DType::BFloat16: return cpu::narrow_serial(r, static_cast<bfloat16*>(t.raw_data()) + i, k);
    default: {
      bool* out = static_cast<bool*>(t.raw_data()) + i;
      for (int64_t j = 0; j < k; ++j) out[j] = r[j] != 0.0f;
    }
  }
}

// Whether the chain only rounds its float32 input to a half type and back (cast, cast), returning the float32 value.
bool round_trip(const FusedElementwise& f) {
  if (f.inputs.size() != 1 || f.inputs[0].dtype != DType::Float32 || f.inputs[0].broadcast != Fused::Broadcast::Full ||
      f.steps.size() != 2 || f.outputs.size() != 1 || f.outputs[0] != 2)
    return false;
  const Fused::Step &narrow = f.steps[0], &widen = f.steps[1];
  return narrow.op == OpId::cast && fused_rounds_to_half(narrow.dtype) && narrow.args == std::vector<int>{0} &&
         widen.op == OpId::cast && widen.dtype == DType::Float32 && widen.args == std::vector<int>{1};
}

// The chain over elements [begin, end) of its shape, a block at a time, on the calling thread: inputs one per
// f.inputs, outputs one per f.outputs.
class ChainRun {
 public:
  ChainRun(const FusedElementwise& f, std::span<const Tensor> inputs, std::span<Tensor> outputs)
      : f_(f), inputs_(inputs), outputs_(outputs), direct_(f.steps.size(), nullptr) {
    // A step whose result is a float32 output writes it in place in the output; the others into their registers.
    const size_t ni = f.inputs.size();
    for (size_t o = 0; o < f.outputs.size(); ++o) {
      const size_t r = static_cast<size_t>(f.outputs[o]);
      if (r >= ni && outputs[o].dtype() == DType::Float32 && !direct_[r - ni])
        direct_[r - ni] = static_cast<float*>(outputs[o].raw_data());
    }
  }

  void operator()(int64_t begin, int64_t end) const {
    const size_t ni = f_.inputs.size(), ns = f_.steps.size();
    std::vector<float> buffers(static_cast<size_t>(f_.num_registers()) * kBlock);
    std::vector<const float*> regs(static_cast<size_t>(f_.num_registers()));
    for (int64_t i = begin; i < end; i += kBlock) {
      const int64_t k = std::min(kBlock, end - i);
      for (size_t in = 0; in < ni; ++in)
        regs[in] = load(f_.inputs[in], inputs_[in], i, k, buffers.data() + in * kBlock);
      for (size_t s = 0; s < ns; ++s) {
        float* o = direct_[s] ? direct_[s] + i : buffers.data() + (ni + s) * kBlock;
        step(f_.steps[s], regs.data(), o, k);
        // A half-type step's block rounded to its type: the values its op's kernel stores and the next op loads.
        if (fused_rounds_to_half(f_.steps[s].dtype)) cpu::round_through_serial(o, o, k, f_.steps[s].dtype);
        regs[ni + s] = o;
      }
      for (size_t o = 0; o < f_.outputs.size(); ++o) {
        const size_t r = static_cast<size_t>(f_.outputs[o]);
        if (r >= ni && direct_[r - ni] == static_cast<float*>(outputs_[o].raw_data())) continue;
        store(regs[r], outputs_[o], i, k);
      }
    }
  }

 private:
  const FusedElementwise& f_;
  std::span<const Tensor> inputs_;
  std::span<Tensor> outputs_;
  std::vector<float*> direct_;
};

// A chain with a product: the product into the first output, the chain on each range of its rows as the product's
// epilogue finishes them.
void chain_after_product(const FusedElementwise& f, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const FusedElementwise::Product& p = *f.product;
  const size_t arity = static_cast<size_t>(p.arity);
  Tensor& made = outputs[0];
  std::vector<Tensor> chain_inputs(inputs.begin() + static_cast<std::ptrdiff_t>(arity), inputs.end());
  chain_inputs.insert(chain_inputs.begin() + p.input, made);
  const ChainRun run(f, chain_inputs, outputs.subspan(1));
  const int64_t channels = made.shape()[made.rank() - 1];
  cpu::product_with_epilogue(p.op, inputs.first(arity), made, p.attrs,
                             [&](int64_t begin, int64_t end) { run(begin * channels, end * channels); });
}

}  // namespace

void fused_elementwise(const FusedElementwise& f, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  if (f.product) return chain_after_product(f, inputs, outputs);
  const int64_t n = f.shape.num_elements();
  // A round trip is one vectorised pass (the casts' own conversions, with their bits).
  if (round_trip(f))
    return cpu::round_through(static_cast<const float*>(inputs[0].raw_data()),
                              static_cast<float*>(outputs[0].raw_data()), n, f.steps[0].dtype);
  // Where a chain's element ops cost more, fewer elements make a chunk worth a thread.
  cpu::run_range(n, grain_for(static_cast<int64_t>(f.steps.size())), ChainRun(f, inputs, outputs));
}

}  // namespace ember::ops::cpu_detail
