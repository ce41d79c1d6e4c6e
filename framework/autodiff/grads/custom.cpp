// The backward formula of op_list.def's `custom` row: the registered op's own gradient, checked.
#include "framework/autodiff/grad_registry.h"
#include "framework/ops/custom_op.h"

namespace ember {
namespace {

std::vector<Tensor> custom_op_grad(const GradContext& ctx) {
  const auto& a = std::get<CustomOpAttrs>(ctx.attrs);
  const ops::CustomOpDef& def = *a.def;
  EMBER_CHECK(def.gradient, Unimplemented) << "GradientTape.gradient: custom op '" << def.name
                                           << "' has no gradient (give register_op a .gradient function)";
  std::vector<Tensor> grads = ops::detail::with_op_name(def.name, [&] {
    return def.gradient(ops::CustomGradContext{ctx.inputs, ctx.outputs, ctx.grads, a.values, ctx.wanted});
  });
  EMBER_CHECK(grads.size() == ctx.inputs.size(), InvalidArgument)
      << def.name << ": its gradient returned " << grads.size() << " tensor(s) for " << ctx.inputs.size()
      << " input(s)";
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].defined()) continue;
    const Tensor& x = ctx.inputs[i];
    EMBER_CHECK(grads[i].shape() == x.shape() && grads[i].dtype() == x.dtype(), InvalidArgument)
        << def.name << ": its gradient for input " << i << " is " << grads[i].dtype() << " " << grads[i].shape()
        << ", expected the input's " << x.dtype() << " " << x.shape();
  }
  return grads;
}

}  // namespace

EMBER_REGISTER_GRADIENT(custom, custom_op_grad);

}  // namespace ember
