#include "layers/global_average_pooling1d.h"

#include "framework/ops/array.h"
#include "framework/ops/creation.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"

namespace ember::layers {

GlobalAveragePooling1D::GlobalAveragePooling1D(GlobalAveragePooling1DOptions options)
    : GlobalPooling1D("global_average_pooling1d", std::move(options)) {
  validate();
  supports_masking_ = true;
}

std::vector<Tensor> GlobalAveragePooling1D::call_masked(const std::vector<Tensor>& xs, const std::vector<Tensor>& masks,
                                                        bool training) {
  if (!masks.at(0).defined()) return call_all(xs, training);
  const Tensor& x = xs.at(0);
  const Tensor& m = masks[0];
  EMBER_CHECK(x.rank() == 3 && m.shape() == Shape({x.shape()[0], x.shape()[1]}), InvalidArgument)
      << "GlobalAveragePooling1D '" << name() << "': expected a mask of shape (batch, steps) for an input of shape "
      << x.shape().to_keras_string() << ", got a mask of shape " << m.shape().to_keras_string();
  // Keras: sum(where(mask, x, 0)) / sum(mask) over the steps.
  const Tensor keep = ops::expand_dims(m.dtype() == DType::Bool ? m : ops::cast(m, DType::Bool), 2);
  const Tensor sum = ops::reduce_sum(ops::where(keep, x, ops::zeros_like(x)), {1}, options_.keepdims);
  return {ops::div(sum, ops::reduce_sum(ops::cast(keep, x.dtype()), {1}, options_.keepdims))};
}

Tensor GlobalAveragePooling1D::reduce(const Tensor& x) const { return ops::reduce_mean(x, {1}, options_.keepdims); }

LayerPtr GlobalAveragePooling1D::from_config(const nlohmann::json& c) {
  return std::make_shared<GlobalAveragePooling1D>(parse_config(c, "GlobalAveragePooling1D"));
}

EMBER_REGISTER_LAYER(GlobalAveragePooling1D);

}  // namespace ember::layers
