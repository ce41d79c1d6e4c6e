#pragma once
// Variable: a mutable, named tensor (TF: tf.Variable). Reading a trainable variable under an active
// GradientTape watches it.
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "framework/core/tensor.h"

namespace ember {

struct VariableOptions {
  std::string name = "Variable";
  bool trainable = true;
};

class Variable;

// What a graph trace (framework/graph) learns from variables: reads and assignments while it is installed on
// the thread, so that a traced function reads and writes each variable by reference on every call.
class VariableTracer {
 public:
  virtual ~VariableTracer() = default;
  virtual void created(const Variable& v, const Tensor& initial_value) = 0;
  virtual void read(const Variable& v, const Tensor& current) = 0;
  // v now holds `stored`, which shares `source`'s values; it held `previous` before.
  virtual void assigned(const Variable& v, const Tensor& source, const Tensor& stored, const Tensor& previous) = 0;
};
namespace detail {
// The tracer of this thread, or nullptr.
inline thread_local VariableTracer* t_variable_tracer = nullptr;
}  // namespace detail

class Variable {
 public:
  Variable() = default;
  explicit Variable(Tensor initial_value, VariableOptions options = {});
  // A scalar variable from a C++ number, typed as TF types a Python one: tf.Variable(3.0) is float32
  // (float or double alike), tf.Variable(3) int32 (int64 when the value needs it), tf.Variable(True) bool.
  template <class T>
    requires std::is_arithmetic_v<T>
  explicit Variable(T value, VariableOptions options = {}) : Variable(scalar_value(value), std::move(options)) {}

  // The current value; watched by active tapes when trainable (TF's watch_accessed_variables).
  Tensor read_value() const;
  operator Tensor() const { return read_value(); }
  // The current value without notifying tapes.
  const Tensor& value() const;
  // Whether two handles name the same variable.
  bool is_same(const Variable& o) const { return state_ == o.state_; }
  // The variable's identity (equal for handles that are_same): how a traced function's signature tells
  // variables apart.
  const void* handle() const { return state_.get(); }

  // The value, for an update in place (an optimizer's fused step), or nullptr when another tensor shares
  // its buffer (a tape's saved input, a value a caller kept): then the update must make a new tensor and
  // assign it, so that the other tensor keeps the old values. Always nullptr while a function is traced.
  Tensor* exclusive_value();
  // Replaces the value; shape and dtype must match (InvalidArgument otherwise). Not recorded by tapes.
  void assign(const Tensor& value);
  void assign_add(const Tensor& delta);
  void assign_sub(const Tensor& delta);

  // Which value the variable holds: a number no other value of any variable had, renewed by every assign and
  // by exclusive_value (whose caller writes the buffer), so a cache of something computed from the value
  // (a layer's cast of it) can tell that it is stale.
  uint64_t version() const { return state().version; }

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
    uint64_t version;
  };
  static uint64_t next_version();
  template <class T>
  static Tensor scalar_value(T value) {
    if constexpr (std::is_same_v<T, bool>) {
      return Tensor::scalar_of(value ? 1.0 : 0.0, DType::Bool);
    } else if constexpr (std::is_floating_point_v<T>) {
      return Tensor::scalar<float>(static_cast<float>(value));
    } else {
      const bool fits32 = std::in_range<int32_t>(value);
      return fits32 ? Tensor::scalar<int32_t>(static_cast<int32_t>(value)) : Tensor::scalar<int64_t>(static_cast<int64_t>(value));
    }
  }
  State& state() const;
  std::shared_ptr<State> state_;
};

}  // namespace ember
