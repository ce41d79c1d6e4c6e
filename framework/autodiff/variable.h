#pragma once
// Variable: a mutable, named tensor (TF: tf.Variable). Reading a trainable variable under an active
// GradientTape watches it.
#include <memory>
#include <string>

#include "framework/core/tensor.h"

namespace ember {

struct VariableOptions {
  std::string name = "Variable";
  bool trainable = true;
};

class Variable {
 public:
  Variable() = default;
  explicit Variable(Tensor initial_value, VariableOptions options = {});

  // The current value; watched by active tapes when trainable (TF's watch_accessed_variables).
  Tensor read_value() const;
  operator Tensor() const { return read_value(); }
  // The current value without notifying tapes.
  const Tensor& value() const;

  // The value, for an update in place (an optimizer's fused step), or nullptr when another tensor shares
  // its buffer (a tape's saved input, a value a caller kept): then the update must make a new tensor and
  // assign it, so that the other tensor keeps the old values.
  Tensor* exclusive_value();
  // Replaces the value; shape and dtype must match (InvalidArgument otherwise). Not recorded by tapes.
  void assign(const Tensor& value);
  void assign_add(const Tensor& delta);
  void assign_sub(const Tensor& delta);

  const std::string& name() const;
  bool trainable() const;
  void set_trainable(bool trainable);
  DType dtype() const { return value().dtype(); }
  const Shape& shape() const { return value().shape(); }
  Device device() const { return value().device(); }
  bool defined() const { return state_ != nullptr; }

 private:
  struct State {
    Tensor value;
    std::string name;
    bool trainable;
  };
  State& state() const;
  std::shared_ptr<State> state_;
};

}  // namespace ember
