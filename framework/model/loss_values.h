#pragma once
// A loss's per-sample values by its Keras class name: losses/ registers every loss class here, and the
// loss-based metrics (framework/model/metrics) look theirs up, so metrics reach the losses' formulas
// without knowing losses/ (which sits above framework/).
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "framework/core/tensor.h"

namespace ember::detail {

// The per-sample values of a loss's call() and, where the loss has one, its mask (set through `mask`;
// left undefined otherwise).
using LossValuesFn = std::function<Tensor(const Tensor& y_true, const Tensor& y_pred, Tensor* mask)>;
// Makes the values function of the loss built from a Keras config (its constructor arguments).
using LossValuesFactory = std::function<LossValuesFn(const nlohmann::json& config)>;

// Registers (or replaces) the factory of a loss class.
bool register_loss_values(const std::string& class_name, LossValuesFactory factory);

// The values function of class_name's loss built from config; NotFound naming the class when no loss of
// that name is registered.
LossValuesFn make_loss_values(const std::string& class_name, const nlohmann::json& config = nlohmann::json::object());

}  // namespace ember::detail
