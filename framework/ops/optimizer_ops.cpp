#include "framework/ops/optimizer_ops.h"

#include <array>

#include "framework/core/error.h"
#include "framework/ops/dispatch.h"

namespace ember::ops {

AdamUpdate apply_adam(const Tensor& variable, const Tensor& momentum, const Tensor& velocity, const Tensor& gradient,
                      double alpha, double beta_1, double beta_2, double epsilon) {
  const std::array<Tensor, 4> inputs{variable, momentum, velocity, gradient};
  const char* names[] = {"variable", "momentum", "velocity", "gradient"};
  for (size_t i = 1; i < inputs.size(); ++i) {
    EMBER_CHECK(inputs[i].shape() == variable.shape() && inputs[i].dtype() == variable.dtype(), InvalidArgument)
        << "apply_adam: " << names[i] << " has shape " << inputs[i].shape() << " and dtype " << inputs[i].dtype()
        << ", expected the variable's " << variable.shape() << " and " << variable.dtype();
  }
  const OutputSpec spec{variable.shape(), variable.dtype()};
  const std::array<OutputSpec, 3> outputs{spec, spec, spec};
  std::vector<Tensor> out = run_op(OpId::apply_adam, inputs, outputs, AdamAttrs{alpha, 1 - beta_1, 1 - beta_2, epsilon});
  return {out[0], out[1], out[2]};
}

}  // namespace ember::ops
