#include "layers/multiply.h"

#include "framework/ops/array.h"
#include "framework/ops/creation.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"

namespace ember::layers {

Tensor Multiply::merge_function(const std::vector<Tensor>& xs) const {
  Tensor y = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) y = y * xs[i];
  return y;
}

std::vector<Tensor> Multiply::call_masked(const std::vector<Tensor>& xs, const std::vector<Tensor>& masks,
                                          bool training) {
  bool all_masked = !masks.empty();
  for (const Tensor& m : masks) all_masked = all_masked && m.defined();
  std::vector<Tensor> ins = xs;
  Tensor keep;
  for (size_t i = 0; i < xs.size() && i < masks.size(); ++i) {
    if (!masks[i].defined()) continue;
    EMBER_CHECK(masks[i].rank() + 1 == xs[i].rank(), InvalidArgument)
        << who() << ": expected the mask of input " << i << " to have one axis less than the input "
        << xs[i].shape().to_keras_string() << ", got a mask of shape " << masks[i].shape().to_keras_string();
    const Tensor m = masks[i].dtype() == DType::Bool ? masks[i] : ops::cast(masks[i], DType::Bool);
    const Tensor wide = ops::broadcast_to(ops::expand_dims(m, -1), xs[i].shape());
    ins[i] = ops::where(wide, xs[i], Tensor::scalar_of(1, xs[i].dtype()));
    if (all_masked) keep = keep.defined() ? ops::logical_or(keep, wide) : wide;
  }
  Tensor y = call(ins, training);
  if (all_masked) {
    y = ops::where(keep, y, ops::zeros_like(y));
    backend::set_keras_mask(y, ops::reduce_any(keep, {-1}));
  }
  return {y};
}

LayerPtr Multiply::from_config(const nlohmann::json& c) { return std::make_shared<Multiply>(options_from_config(c)); }

EMBER_REGISTER_LAYER(Multiply);

}  // namespace ember::layers
