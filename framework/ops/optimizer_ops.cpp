#include "framework/ops/optimizer_ops.h"

#include <array>

#include "framework/core/error.h"
#include "framework/ops/dispatch.h"

namespace ember::ops {
namespace {

// Runs apply_adam; with `in_place` the outputs view the first three inputs' buffers.
std::vector<Tensor> run_adam(const std::array<Tensor, 4>& inputs, bool in_place, double alpha, double beta_1,
                             double beta_2, double epsilon) {
  const Tensor& variable = inputs[0];
  const char* names[] = {"variable", "momentum", "velocity", "gradient"};
  for (size_t i = 1; i < inputs.size(); ++i) {
    EMBER_CHECK(inputs[i].shape() == variable.shape() && inputs[i].dtype() == variable.dtype(), InvalidArgument)
        << "apply_adam: " << names[i] << " has shape " << inputs[i].shape() << " and dtype " << inputs[i].dtype()
        << ", expected the variable's " << variable.shape() << " and " << variable.dtype();
  }
  std::array<OutputSpec, 3> outputs;
  for (int i = 0; i < 3; ++i) {
    outputs[i] = {variable.shape(), variable.dtype(), in_place ? i : -1};
    if (!in_place) continue;
    for (int j = 0; j < 4; ++j)
      EMBER_CHECK(j == i || inputs[i].storage() != inputs[j].storage(), InvalidArgument)
          << "apply_adam_in_place: the " << names[i] << " shares its buffer with the " << names[j]
          << "; an update in place needs four separate buffers";
  }
  return run_op(OpId::apply_adam, inputs, outputs, AdamAttrs{alpha, 1 - beta_1, 1 - beta_2, epsilon});
}

}  // namespace

AdamUpdate apply_adam(const Tensor& variable, const Tensor& momentum, const Tensor& velocity, const Tensor& gradient,
                      double alpha, double beta_1, double beta_2, double epsilon) {
  std::vector<Tensor> out =
      run_adam({variable, momentum, velocity, gradient}, /*in_place=*/false, alpha, beta_1, beta_2, epsilon);
  return {out[0], out[1], out[2]};
}

void apply_adam_in_place(Tensor& variable, Tensor& momentum, Tensor& velocity, const Tensor& gradient, double alpha,
                         double beta_1, double beta_2, double epsilon) {
  run_adam({variable, momentum, velocity, gradient}, /*in_place=*/true, alpha, beta_1, beta_2, epsilon);
}

}  // namespace ember::ops
