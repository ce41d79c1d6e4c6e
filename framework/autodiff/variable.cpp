#include "framework/autodiff/variable.h"

#include <atomic>
#include <utility>

#include "framework/autodiff/gradient_tape.h"
#include "framework/autodiff/variable_hooks.h"
#include "framework/ops/elementwise.h"

namespace ember {

thread_local detail::VariableCreatedFn detail::t_variable_created = nullptr;

Variable::Variable(Tensor initial_value, VariableOptions options) {
  EMBER_CHECK(initial_value.defined(), InvalidArgument)
      << "Variable '" << options.name << "': the initial value is an undefined tensor";
  state_ = std::make_shared<State>(
      State{std::move(initial_value), std::move(options.name), options.trainable, next_version()});
  if (detail::t_variable_tracer) detail::t_variable_tracer->created(*this, state_->value);
  if (detail::t_variable_created) detail::t_variable_created(*this);
}

uint64_t Variable::next_version() {
  static std::atomic<uint64_t> counter{0};
  return counter.fetch_add(1, std::memory_order_relaxed) + 1;
}

Variable::State& Variable::state() const {
  EMBER_CHECK(state_, FailedPrecondition) << "Variable: this variable is default-constructed and holds no value";
  return *state_;
}

Tensor Variable::read_value() const {
  State& s = state();
  if (detail::t_variable_tracer) detail::t_variable_tracer->read(*this, s.value);
  if (s.trainable) detail::on_variable_read(s.value);
  return s.value;
}

const Tensor& Variable::value() const {
  State& s = state();
  if (detail::t_variable_tracer) detail::t_variable_tracer->read(*this, s.value);
  return s.value;
}

Tensor* Variable::exclusive_value() {
  State& s = state();
  // A trace records ops, not writes into a buffer; replay decides again where in-place pays.
  if (detail::t_variable_tracer || !s.value.is_exclusive()) return nullptr;
  s.version = next_version();  // the caller writes the values
  return &s.value;
}

void Variable::assign(const Tensor& value) {
  State& s = state();
  EMBER_CHECK(value.shape() == s.value.shape() && value.dtype() == s.value.dtype(), InvalidArgument)
      << "Variable '" << s.name << "'.assign: got a " << value.dtype() << " tensor of shape " << value.shape()
      << ", expected " << s.value.dtype() << " " << s.value.shape();
  EMBER_CHECK(value.device() == s.value.device(), InvalidArgument)
      << "Variable '" << s.name << "'.assign: the value is on " << value.device() << ", the variable on "
      << s.value.device();
  // A fresh tensor, so values saved by a tape from before the assignment stay as they were.
  Tensor previous = std::exchange(s.value, value.is_same(s.value) ? value : value.view(value.shape()));
  s.version = next_version();
  if (detail::t_variable_tracer) detail::t_variable_tracer->assigned(*this, value, s.value, previous);
}

void Variable::assign_add(const Tensor& delta) {
  NoRecordScope no_record;
  assign(ops::add(value(), delta));
}

void Variable::assign_sub(const Tensor& delta) {
  NoRecordScope no_record;
  assign(ops::sub(value(), delta));
}

const std::string& Variable::name() const { return state().name; }
bool Variable::trainable() const { return state().trainable; }
void Variable::set_trainable(bool trainable) { state().trainable = trainable; }

}  // namespace ember
