#pragma once
// Helpers shared by weights_h5.cpp (Keras 3 store, whole files) and legacy_weights_h5.cpp (internal).
#include <string>
#include <utility>
#include <vector>

#include "framework/autodiff/variable.h"
#include "framework/core/tensor.h"

namespace ember {
class Layer;
}

namespace ember::io::weights_detail {

// A layer's own variables (not its sublayers'), trainable then non-trainable: Keras's
// `_trainable_variables + _non_trainable_variables`, the order save_own_variables writes.
std::vector<Variable> own_variables(const Layer& layer);

// Values checked against their variables, assigned together only once everything has been checked, so a
// failed load changes nothing.
class AssignPlan {
 public:
  // Checks value's shape against v (message names `what`, the weight and both shapes); on a mismatch
  // returns false and leaves the plan unchanged.
  bool check(const Variable& v, const Tensor& value, const std::string& what, std::string& error) const;
  void add(const Variable& v, const Tensor& value) { items_.emplace_back(v, value); }
  // Assigns every planned value (cast to the variable's dtype and moved to its device).
  void apply();

 private:
  std::vector<std::pair<Variable, Tensor>> items_;
};

// Prints a load warning on stderr (skip_mismatch).
void warn(const std::string& message);

}  // namespace ember::io::weights_detail
