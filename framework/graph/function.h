#pragma once
// ember::function (TF: tf.function): wraps a C++ callable so that its first call per signature traces it
// into a graph and later calls replay the graph. See docs/graph_mode.md.
//
//   auto step = ember::function([&](const Tensor& x, const Tensor& y) { ...; return loss; });
//   Tensor loss = step(x, y);   // traces on the first call per signature, then replays
#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <typeinfo>
#include <type_traits>
#include <utility>
#include <vector>

#include "framework/autodiff/variable.h"
#include "framework/core/tensor.h"
#include "framework/graph/executor.h"
#include "framework/graph/structure.h"
#include "framework/graph/trace.h"

namespace ember {

// The type of a function input (TF: tf.TensorSpec): its shape and dtype.
struct TensorSpec {
  TensorSpec(Shape shape, DType dtype = DType::Float32, std::string name = {})
      : shape(std::move(shape)), dtype(dtype), name(std::move(name)) {}
  Shape shape;
  DType dtype;
  std::string name;
  std::string to_string() const;
};

struct FunctionOptions {
  // Fuse chains of elementwise ops into one pass over the data each (XLA's loop fusion; on the CPU, float32 and
  // bool chains), with the unfused ops' bits. See docs/graph_mode.md.
  bool jit_compile = false;
  // One trace for every size of a dimension. Not implemented yet: true is refused.
  bool reduce_retracing = false;
  // Pins the tensor inputs' types: a call with others is an InvalidArgument naming the argument.
  std::optional<std::vector<TensorSpec>> input_signature{};
  std::string name = "function";
};

// One traced graph of a function, for one input signature (TF: ConcreteFunction).
class ConcreteFunction {
 public:
  ConcreteFunction(std::string name, std::vector<TensorSpec> inputs, graph::Graph graph);
  // What was traced: print it (`std::cout << cf.graph()`) or write it as GraphViz (`cf.graph().to_dot()`).
  const graph::Graph& graph() const { return executable_.graph(); }
  const std::vector<TensorSpec>& input_specs() const { return inputs_; }
  // Runs the graph on tensors of the traced types (InvalidArgument naming the argument otherwise).
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const;

 private:
  std::string name_;
  std::vector<TensorSpec> inputs_;
  graph::Executable executable_;
};

namespace detail {

// A call's arguments as a signature key (tensor types, variables and objects by identity, plain values by
// value) plus the tensors in order. The key is bytes, made on every call: no formatting.
struct CallSignature {
  std::string key;
  std::vector<Tensor> tensors;

  void add(const Tensor& t);
  void add(const std::vector<Tensor>& ts);
  void add(const Variable& v) { put('V', v.handle()); }
  void add(const std::string& s) {
    put('S', s.size());
    key += s;
  }
  void add(const char* s) { add(std::string(s)); }
  template <class T>
    requires std::is_arithmetic_v<T> || std::is_enum_v<T>
  void add(T value) {
    put('N', typeid(T).hash_code());  // 1 and 1.0 are two signatures, as in TF
    if constexpr (std::is_floating_point_v<T>)
      if (value == 0) value = 0;  // -0.0 == 0.0: one signature
    put('=', value);
  }
  // Any other object (a model, an optimizer, a loss) is part of the signature by identity, as TF keys a
  // Python object it cannot hash by value.
  template <class T>
    requires(!std::is_arithmetic_v<T> && !std::is_enum_v<T>)
  void add(const T& object) {
    put('R', static_cast<const void*>(std::addressof(object)));
  }

  template <class V>
  void put(char tag, const V& v) {
    key += tag;
    key.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
};

// The non-template state of a Function: its concrete functions, counters and the retracing warning.
class FunctionCore {
 public:
  explicit FunctionCore(FunctionOptions options);
  const FunctionOptions& options() const { return options_; }
  // The concrete function for `key`, or nullptr; counts a call for the retracing warning.
  std::shared_ptr<ConcreteFunction> find(const std::string& key, bool count_call = true);
  // input_signature's check of a call's tensors.
  void check_signature(const std::vector<Tensor>& tensors) const;
  std::shared_ptr<ConcreteFunction> add(const std::string& key, const std::vector<Tensor>& inputs, graph::Graph graph,
                                        bool count_call = true);
  int tracing_count() const;
  std::vector<std::shared_ptr<ConcreteFunction>> concrete_functions() const;

 private:
  FunctionOptions options_;
  mutable std::mutex mu_;
  std::vector<std::pair<std::string, std::shared_ptr<ConcreteFunction>>> cache_;
  int tracing_count_ = 0;
  std::vector<char> recent_;  // the last calls: 1 where the call traced
  int warnings_ = 0;
  void note_call(bool traced);  // under mu_
};

// A tensor argument, as the traced callable sees it: a fresh view, so that one tensor passed twice is still
// two inputs of the graph. Other arguments pass through unchanged.
Tensor trace_arg(graph::Trace& trace, const Tensor& t);
inline std::vector<Tensor> trace_arg(graph::Trace& trace, const std::vector<Tensor>& ts) {
  std::vector<Tensor> out;
  for (const Tensor& t : ts) out.push_back(trace_arg(trace, t));
  return out;
}
template <class A>
  requires(!std::same_as<std::remove_cvref_t<A>, Tensor> && !std::same_as<std::remove_cvref_t<A>, std::vector<Tensor>>)
A&& trace_arg(graph::Trace&, A&& a) {
  return std::forward<A>(a);
}
template <class A>
using traced_arg_t = decltype(trace_arg(std::declval<graph::Trace&>(), std::declval<A>()));

// get_concrete_function's arguments: a TensorSpec (or a Shape: float32) becomes a tensor of zeros of that type,
// which the trace reads only as an input; anything else passes through.
Tensor placeholder_of(const TensorSpec& spec);
inline Tensor placeholder_of(const Shape& shape) { return placeholder_of(TensorSpec(shape)); }
template <class A>
  requires(!std::convertible_to<const std::remove_cvref_t<A>&, const TensorSpec&> &&
           !std::same_as<std::remove_cvref_t<A>, Shape>)
A&& placeholder_of(A&& a) {
  return std::forward<A>(a);
}

}  // namespace detail

// A traced function: call it like the callable it wraps.
template <class F>
class Function {
 public:
  Function(F fn, FunctionOptions options)
      : fn_(std::move(fn)), core_(std::make_shared<detail::FunctionCore>(std::move(options))) {}

  template <class... Args>
  auto operator()(Args&&... args) {
    using R = std::invoke_result_t<F&, detail::traced_arg_t<Args&&>...>;
    static_assert(detail::is_tensor_structure<R>(),
                  "ember::function: the callable must return void, a Tensor, a std::vector<Tensor> or a std::tuple "
                  "of Tensors");
    // Called while another function traces: its ops join that trace (TF inlines nested functions).
    if (graph::is_tracing()) return fn_(std::forward<Args>(args)...);
    detail::CallSignature sig;
    (sig.add(args), ...);
    core_->check_signature(sig.tensors);
    const std::string& key = sig.key;
    if (auto cf = core_->find(key)) {
      std::vector<Tensor> outs = (*cf)(sig.tensors);
      if constexpr (!std::is_void_v<R>) return detail::unflatten<R>(std::move(outs));
      else return;
    }
    graph::Trace trace(core_->options().name);
    // Braced initialisation evaluates in order: the graph's inputs follow the arguments.
    std::tuple<detail::traced_arg_t<Args&&>...> traced{detail::trace_arg(trace, std::forward<Args>(args))...};
    if constexpr (std::is_void_v<R>) {
      std::apply(fn_, std::move(traced));
      core_->add(key, sig.tensors, trace.finish({}));
    } else {
      R result = std::apply(fn_, std::move(traced));
      core_->add(key, sig.tensors, trace.finish(detail::flatten(result)));
      return result;
    }
  }

  // How many times the callable was traced (TF: experimental_get_tracing_count).
  int tracing_count() const { return core_->tracing_count(); }
  // The concrete function for these arguments: each TensorSpec (or Shape, float32) stands for a tensor of
  // that type, other arguments are passed as a call passes them (TF: get_concrete_function). Traces when
  // no call traced for them yet, without running anything: variables keep their values, the random
  // generator its state, host effects (an optimizer's update, ops::print) do not run. The C++ code of the
  // callable runs, as in any trace, and a later call with such arguments replays what was traced.
  template <class... Args>
  ConcreteFunction& get_concrete_function(Args&&... args) {
    return concrete_for(detail::placeholder_of(std::forward<Args>(args))...);
  }
  std::vector<std::shared_ptr<ConcreteFunction>> concrete_functions() const { return core_->concrete_functions(); }

 private:
  template <class... Args>
  ConcreteFunction& concrete_for(Args&&... args) {
    using R = std::invoke_result_t<F&, detail::traced_arg_t<Args&&>...>;
    EMBER_CHECK(!graph::is_tracing(), InvalidArgument)
        << "ember::function '" << core_->options().name << "': get_concrete_function is called while a function "
        << "is traced; call it outside";
    detail::CallSignature sig;
    (sig.add(args), ...);
    core_->check_signature(sig.tensors);
    if (auto cf = core_->find(sig.key, /*count_call=*/false)) return *cf;
    graph::Trace trace(core_->options().name, /*dry=*/true);
    std::tuple<detail::traced_arg_t<Args&&>...> traced{detail::trace_arg(trace, std::forward<Args>(args))...};
    if constexpr (std::is_void_v<R>) {
      std::apply(fn_, std::move(traced));
      return *core_->add(sig.key, sig.tensors, trace.finish({}), /*count_call=*/false);
    } else {
      R result = std::apply(fn_, std::move(traced));
      return *core_->add(sig.key, sig.tensors, trace.finish(detail::flatten(result)), /*count_call=*/false);
    }
  }

  F fn_;
  std::shared_ptr<detail::FunctionCore> core_;
};

// Wraps `fn` as a traced function (TF: tf.function).
template <class F>
Function<std::decay_t<F>> function(F&& fn, FunctionOptions options = {}) {
  return Function<std::decay_t<F>>(std::forward<F>(fn), std::move(options));
}

}  // namespace ember
