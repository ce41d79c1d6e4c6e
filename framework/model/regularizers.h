#pragma once
// Weight regularizers (Keras: keras.regularizers): L1, L2, L1L2; their penalty joins the model's losses.
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "framework/core/tensor.h"

namespace ember::regularizers {

class RegularizerImpl {
 public:
  virtual ~RegularizerImpl() = default;
  // The penalty for weight x as a float32 scalar (differentiable).
  virtual Tensor operator()(const Tensor& x) const = 0;
  virtual std::string class_name() const = 0;
  virtual nlohmann::json get_config() const = 0;
};

// A nullable value handle: default-constructed means "no regularizer"; "l1", "l2", "l1_l2" give Keras's
// defaults (0.01 each).
class Regularizer {
 public:
  Regularizer() = default;
  Regularizer(const char* name);
  Regularizer(const std::string& name);
  Regularizer(std::shared_ptr<const RegularizerImpl> impl) : impl_(std::move(impl)) {}
  template <class T>
    requires std::is_base_of_v<RegularizerImpl, T>
  Regularizer(T impl) : impl_(std::make_shared<T>(std::move(impl))) {}

  explicit operator bool() const { return impl_ != nullptr; }
  Tensor operator()(const Tensor& x) const;
  // null when empty, else {"class_name", "config"}; from_json accepts null, a name, or that object.
  nlohmann::json to_json() const;
  static Regularizer from_json(const nlohmann::json& j);

 private:
  std::shared_ptr<const RegularizerImpl> impl_;
};

// Keras formulas: L1: l1 * sum(|x|); L2: l2 * sum(x^2); L1L2: both (defaults 0.0 for L1L2's class,
// 0.01 for the "l1"/"l2"/"l1_l2" names and for L1(), L2()).
Regularizer L1(double l1 = 0.01);
Regularizer L2(double l2 = 0.01);
Regularizer L1L2(double l1 = 0.0, double l2 = 0.0);

}  // namespace ember::regularizers

namespace ember {
using regularizers::Regularizer;
}
