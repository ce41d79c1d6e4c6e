// The custom op registry, the front end of a custom op call and the CPU kernel of op_list.def's `custom` row.
#include "framework/ops/custom_op.h"

#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "framework/ops/dispatch.h"

namespace ember {

const char* op_name(OpId op, const Attrs& attrs) {
  if (const auto* c = std::get_if<CustomOpAttrs>(&attrs); c && c->def) return c->def->name.c_str();
  return op_name(op);
}

namespace ops {

namespace {

// Definitions are never freed: graphs, tapes and the profiler hold pointers to them (and their names).
struct CustomOpRegistry {
  std::shared_mutex mu;
  std::unordered_map<std::string, std::unique_ptr<const CustomOpDef>> ops;
};
CustomOpRegistry& custom_op_registry() {
  static CustomOpRegistry* r = new CustomOpRegistry;
  return *r;
}

bool is_op_identifier(const std::string& s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

bool is_builtin_op(const std::string& name) {
  for (int i = 0; i < kNumOps; ++i)
    if (name == op_name(static_cast<OpId>(i))) return true;
  return false;
}

void custom_cpu(const KernelContext& ctx) { detail::run_custom_kernel(ctx, nullptr); }

}  // namespace

CustomOp register_op(CustomOpDef def) {
  EMBER_CHECK(is_op_identifier(def.name), InvalidArgument)
      << "register_op: the name must be letters, digits and '_', not starting with a digit; got '" << def.name << "'";
  EMBER_CHECK(!is_builtin_op(def.name), InvalidArgument)
      << "register_op: '" << def.name << "' is the name of a built-in op; choose another";
  EMBER_CHECK(def.num_inputs >= -1, InvalidArgument)
      << "register_op: op '" << def.name << "' has num_inputs " << def.num_inputs << " (expected >= 0, or -1 for any)";
  EMBER_CHECK(def.infer, InvalidArgument) << "register_op: op '" << def.name << "' has no infer function";
  EMBER_CHECK(def.cpu, InvalidArgument) << "register_op: op '" << def.name << "' has no cpu kernel";
  CustomOpRegistry& r = custom_op_registry();
  std::unique_lock lock(r.mu);
  auto [it, inserted] = r.ops.try_emplace(def.name);
  EMBER_CHECK(inserted, InvalidArgument) << "register_op: an op named '" << def.name << "' is already registered";
  it->second = std::make_unique<const CustomOpDef>(std::move(def));
  return CustomOp(it->second.get());
}

CustomOp find_op(const std::string& name) {
  CustomOpRegistry& r = custom_op_registry();
  std::shared_lock lock(r.mu);
  auto it = r.ops.find(name);
  EMBER_CHECK(it != r.ops.end(), NotFound)
      << "custom op '" << name << "' is not registered (register it with ops::register_op first)";
  return CustomOp(it->second.get());
}

std::vector<Tensor> custom(const std::string& name, const std::vector<Tensor>& inputs, const AttrMap& attrs) {
  return find_op(name)(inputs, attrs);
}

std::vector<Tensor> CustomOp::operator()(const std::vector<Tensor>& inputs, const AttrMap& attrs) const {
  const CustomOpDef& def = *def_;
  EMBER_CHECK(def.num_inputs < 0 || inputs.size() == static_cast<size_t>(def.num_inputs), InvalidArgument)
      << def.name << ": expected " << def.num_inputs << " input tensor(s), got " << inputs.size();
  std::vector<ShapeDType> in;
  in.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    EMBER_CHECK(inputs[i].defined(), InvalidArgument) << def.name << ": input " << i << " is undefined";
    in.push_back({inputs[i].shape(), inputs[i].dtype()});
  }
  const std::vector<ShapeDType> out = detail::with_op_name(def.name, [&] { return def.infer(in, attrs); });
  EMBER_CHECK(!out.empty(), InvalidArgument) << def.name << ": infer gave no outputs (an op has at least one)";
  std::vector<OutputSpec> specs;
  specs.reserve(out.size());
  for (size_t j = 0; j < out.size(); ++j) {
    for (int64_t d : out[j].shape)
      EMBER_CHECK(d >= 0, InvalidArgument)
          << def.name << ": infer gave output " << j << " shape " << out[j].shape << ", which has a negative dimension";
    specs.push_back({out[j].shape, out[j].dtype});
  }
  return run_op(OpId::custom, inputs, specs, CustomOpAttrs{def_, attrs});
}

void detail::run_custom_kernel(const KernelContext& ctx, void* stream) {
  const auto& a = std::get<CustomOpAttrs>(ctx.attrs);
  const CustomOpDef& def = *a.def;
  const CustomKernelFn& fn = stream ? def.cuda : def.cpu;
  EMBER_CHECK(fn, Unimplemented) << def.name << ": no CUDA kernel is registered for this op (give register_op a .cuda "
                                 << "kernel), so it cannot run on " << ctx.outputs[0].device()
                                 << "; move its inputs to the CPU with tensor.to(Device::cpu())";
  detail::with_op_name(def.name, [&] { fn(CustomKernelContext{ctx.inputs, ctx.outputs, a.values, stream}); });
}

}  // namespace ops

EMBER_REGISTER_KERNEL(custom, CPU, ops::custom_cpu);

}  // namespace ember
