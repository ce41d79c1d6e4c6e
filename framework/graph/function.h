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
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <typeinfo>
#include <type_traits>
#include <utility>
#include <vector>

#include "framework/autodiff/variable.h"
#include "framework/core/logging.h"
#include "framework/core/tensor.h"
#include "framework/graph/executor.h"
#include "framework/graph/specialize.h"
#include "framework/graph/structure.h"
#include "framework/graph/trace.h"

namespace ember {

// The type of a function input (TF: tf.TensorSpec): its shape and dtype; a dimension of -1 is unknown (None).
struct TensorSpec {
  TensorSpec(Shape shape, DType dtype = DType::Float32, std::string name = {})
      : shape(std::move(shape)), dtype(dtype), name(std::move(name)) {}
  Shape shape;
  DType dtype;
  std::string name;
  std::string to_string() const;
};

struct FunctionOptions {
  // Fuse chains of elementwise ops into one pass over the data each (XLA's loop fusion; float32, the half types
  // and bool chains), with the unfused ops' bits. See docs/graph_mode.md.
  bool jit_compile = false;
  // After a call traces for shapes that differ from an earlier trace's only in some dimensions, those
  // dimensions are unknown: that trace serves every size of them (TF's reduce_retracing).
  bool reduce_retracing = false;
  // Pins the tensor inputs' types: a call with others is an InvalidArgument naming the argument. Dimensions
  // of -1 are unknown: one trace serves every size of them.
  std::optional<std::vector<TensorSpec>> input_signature{};
  // The first dimension of every tensor argument (of rank 1 or more) is unknown from the first call, as a
  // dataset's batch dimension is: fit's steps, so that an epoch's last, partial batch does not trace again.
  bool unknown_batch_dimension = false;
  std::string name = "function";
};

// One traced graph of a function, for one input signature (TF: ConcreteFunction).
class ConcreteFunction {
 public:
  // `graph` optimised; `traced`, the same graph as traced, runs the calls a GradientTape records, so that the
  // tape differentiates the ops eager execution would run (merged or fused ops sum their gradients otherwise).
  ConcreteFunction(std::string name, std::vector<TensorSpec> inputs, graph::Graph graph, graph::Graph traced);
  // What was traced: print it (`std::cout << cf.graph()`) or write it as GraphViz (`cf.graph().to_dot()`).
  const graph::Graph& graph() const { return executable_.graph(); }
  const std::vector<TensorSpec>& input_specs() const { return inputs_; }
  // Runs the graph on tensors of the traced types (InvalidArgument naming the argument otherwise).
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const;
  // How its calls on a GPU used CUDA graphs (see docs/gpu.md).
  graph::DeviceGraphStats device_graph_stats() const { return executable_.device_graph_stats(); }
  // Its replays' static memory plan (see docs/graph_mode.md).
  graph::MemoryPlanStats memory_plan_stats() const { return executable_.memory_plan_stats(); }

 private:
  std::string name_;
  std::vector<TensorSpec> inputs_;
  graph::Executable executable_;
  graph::Graph traced_;
  mutable std::mutex tape_mu_;
  mutable std::unique_ptr<const graph::Executable> tape_executable_;  // made from traced_ on first use
};

namespace detail {

// std::pair, std::tuple and std::array: an argument whose elements are arguments (the tensors in it are
// inputs, the plain values part of the signature), as TF takes a nested structure.
template <class T>
struct is_tuple_like : std::false_type {};
template <class A, class B>
struct is_tuple_like<std::pair<A, B>> : std::true_type {};
template <class... A>
struct is_tuple_like<std::tuple<A...>> : std::true_type {};
template <class A, size_t N>
struct is_tuple_like<std::array<A, N>> : std::true_type {};
template <class T>
concept TupleLike = is_tuple_like<std::remove_cvref_t<T>>::value;
// Whether a pair or tuple holds a reference at some depth (std::tie): its tensors would be the caller's own.
template <class T>
constexpr bool holds_references() {
  using U = std::remove_cvref_t<T>;
  if constexpr (!TupleLike<U>) {
    return false;
  } else {
    return []<size_t... I>(std::index_sequence<I...>) {
      return ((std::is_reference_v<std::tuple_element_t<I, U>> || holds_references<std::tuple_element_t<I, U>>()) || ...);
    }(std::make_index_sequence<std::tuple_size_v<U>>{});
  }
}

// A call's arguments as a signature key (tensor types, variables and objects by identity, plain values by
// value) plus the tensors in order. The key is bytes, made on every call: no formatting.
struct CallSignature {
  std::string key;
  std::vector<Tensor> tensors;
  std::vector<std::pair<size_t, size_t>> dims_at;  // per tensor: where its dimensions are in the key
  // The key without the tensors' dimensions.
  std::string shapeless() const;

  void add(const Tensor& t);
  void add(const std::vector<Tensor>& ts);
  void add(const Variable& v) { put('V', v.handle()); }
  void add(const std::string& s) { add(std::string_view(s)); }
  void add(const char* s) { add(std::string_view(s)); }
  void add(std::string_view s) {
    put('S', s.size());
    key += s;
  }
  template <TupleLike T>
  void add(const T& elements) {
    put('T', std::tuple_size_v<std::remove_cvref_t<T>>);
    std::apply([this](const auto&... e) { (add(e), ...); }, elements);
  }
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
    requires(!std::is_arithmetic_v<T> && !std::is_enum_v<T> && !TupleLike<T>)
  void add(const T& object) {
    put('R', static_cast<const void*>(std::addressof(object)));
  }

  template <class V>
  void put(char tag, const V& v) {
    key += tag;
    key.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
};

// How a call that no concrete function takes is served: by a graph made for its sizes from a trace with
// unknown dimensions (`cf`); by probing that trace first (`base`, its graph as traced at `base_size`, when no
// call of another size came yet); or by a trace, which generalises over the dimensions `pattern` marks -1 (at
// `size`) when it is not empty.
struct CallPlan {
  std::shared_ptr<ConcreteFunction> cf;
  std::vector<Shape> pattern;
  int64_t size = 0;
  std::shared_ptr<const graph::Graph> base;
  int64_t base_size = 0;
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
  // For a call find() missed: a concrete function made from a generalised trace, or what to probe or trace.
  CallPlan plan(const CallSignature& sig);
  // Records the trace `plan` asked for as generalised over plan.pattern, to be probed when a call of another size
  // comes.
  void add_generalised(const CallSignature& sig, const CallPlan& plan, const graph::Graph& traced);
  // Records what probing plan.base gave (nullptr: the traces at other sizes were not alike, so each shape
  // traces).
  void set_template(const CallSignature& sig, const CallPlan& plan, std::shared_ptr<const graph::ShapeTemplate> t);
  std::shared_ptr<ConcreteFunction> add(const CallSignature& sig, graph::Graph graph, bool count_call = true);
  int tracing_count() const;
  std::vector<std::shared_ptr<ConcreteFunction>> concrete_functions() const;

 private:
  struct Entry {
    std::string key, shapeless;
    std::vector<Shape> shapes;
    std::shared_ptr<ConcreteFunction> cf;
  };
  struct Generalised {
    std::string shapeless;
    std::vector<Shape> pattern;  // -1: unknown
    std::shared_ptr<const graph::Graph> traced;  // until probed: the graph as traced, at traced_size
    int64_t traced_size = 0;
    std::shared_ptr<const graph::ShapeTemplate> graphs;  // once probed; nullptr: each shape traces
  };
  FunctionOptions options_;
  mutable std::mutex mu_;
  std::vector<Entry> cache_;
  std::vector<Generalised> generalised_;
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
  requires(!std::same_as<std::remove_cvref_t<A>, Tensor> && !std::same_as<std::remove_cvref_t<A>, std::vector<Tensor>> &&
           !TupleLike<A>)
A&& trace_arg(graph::Trace&, A&& a) {
  return std::forward<A>(a);
}
// Whether an element of a pair, tuple or array holds tensors (the others are left as they are).
template <class E>
constexpr bool holds_tensors() {
  using T = std::remove_cvref_t<E>;
  return std::is_same_v<T, Tensor> || std::is_same_v<T, std::vector<Tensor>> || TupleLike<T>;
}
// A pair, tuple or array: a copy with each tensor in it (at any depth) a traced argument, in order.
template <TupleLike A>
std::remove_cvref_t<A> trace_arg(graph::Trace& trace, A&& a) {
  static_assert(!holds_references<A>(),
                "ember::function: pass a pair or tuple of values (std::make_tuple), not of references (std::tie)");
  std::remove_cvref_t<A> out = a;
  std::apply(
      [&trace](auto&... e) {
        ((
             [&] {
               if constexpr (holds_tensors<decltype(e)>()) e = trace_arg(trace, std::as_const(e));
             }()),
         ...);
      },
      out);
  return out;
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

// A probe trace's arguments (see ShapeTemplate): each tensor a tensor of zeros of the probe's shape, in order;
// anything else the call's own argument.
template <class A>
using probe_arg_t = std::conditional_t<
    std::is_same_v<std::remove_cvref_t<A>, Tensor> || std::is_same_v<std::remove_cvref_t<A>, std::vector<Tensor>> ||
        TupleLike<A>,
    std::remove_cvref_t<A>, std::remove_reference_t<A>&>;
Tensor probe_tensor(const Tensor& like, const std::vector<Shape>& shapes, size_t& k);
template <class A>
probe_arg_t<A> probe_arg(A& a, const std::vector<Shape>& shapes, size_t& k) {
  using T = std::remove_cvref_t<A>;
  if constexpr (std::is_same_v<T, Tensor>) {
    return probe_tensor(a, shapes, k);
  } else if constexpr (std::is_same_v<T, std::vector<Tensor>>) {
    std::vector<Tensor> out;
    for (const Tensor& t : a) out.push_back(probe_tensor(t, shapes, k));
    return out;
  } else if constexpr (TupleLike<T>) {
    T out = a;
    std::apply(
        [&](auto&... e) {
          ((
               [&] {
                 if constexpr (holds_tensors<decltype(e)>()) e = probe_arg(std::as_const(e), shapes, k);
               }()),
           ...);
        },
        out);
    return out;
  } else {
    return a;
  }
}
// The sizes a generalised trace at `traced` is probed at for a call at `size`: that size, and the smallest from 2
// up other than both (and of the other parity where theirs is one).
std::vector<int64_t> probe_sizes(int64_t traced, int64_t size);
std::vector<Shape> shapes_at(const std::vector<Shape>& pattern, int64_t size);

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
    std::shared_ptr<ConcreteFunction> cf = core_->find(key);
    detail::CallPlan plan;
    if (!cf) {
      plan = core_->plan(sig);
      if (plan.base) {  // the first call of another size than a generalised trace's: probe that trace now
        core_->set_template(sig, plan, generalise(plan, args...));
        plan = core_->plan(sig);
      }
      cf = plan.cf;
    }
    if (cf) {
      std::vector<Tensor> outs = (*cf)(sig.tensors);
      if constexpr (!std::is_void_v<R>) return detail::unflatten<R>(std::move(outs));
      else return;
    }
    std::optional<R_or_none<R>> result;
    graph::Graph graph;
    {
      graph::Trace trace(core_->options().name);
      // Braced initialisation evaluates in order: the graph's inputs follow the arguments.
      std::tuple<detail::traced_arg_t<Args&&>...> traced{detail::trace_arg(trace, std::forward<Args>(args))...};
      if constexpr (std::is_void_v<R>) {
        std::apply(fn_, std::move(traced));
        graph = trace.finish({});
      } else {
        result.emplace(std::apply(fn_, std::move(traced)));
        graph = trace.finish(detail::flatten(*result));
      }
    }
    if (!plan.pattern.empty()) core_->add_generalised(sig, plan, graph);
    core_->add(sig, std::move(graph));
    if constexpr (!std::is_void_v<R>) return std::move(*result);
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
      return *core_->add(sig, trace.finish({}), /*count_call=*/false);
    } else {
      R result = std::apply(fn_, std::move(traced));
      return *core_->add(sig, trace.finish(detail::flatten(result)), /*count_call=*/false);
    }
  }

  template <class R>
  using R_or_none = std::conditional_t<std::is_void_v<R>, char, R>;

  // A trace generalised over the unknown dimensions of plan.pattern (plan.base, traced at plan.base_size) and
  // dry probe traces at two other sizes (the call's, plan.size, and a small one), on tensors of zeros, made into
  // one ShapeTemplate (nullptr when the traces are not alike, or a probe cannot run: then each shape traces).
  template <class... Args>
  std::shared_ptr<const graph::ShapeTemplate> generalise(const detail::CallPlan& plan, Args&... args) {
    using Traced = std::tuple<detail::traced_arg_t<detail::probe_arg_t<Args>&>...>;
    if constexpr (!requires(Traced t) { std::apply(fn_, std::move(t)); }) {
      return nullptr;
    } else {
      using R = decltype(std::apply(fn_, std::declval<Traced>()));
      std::vector<graph::Graph> graphs{*plan.base};
      std::vector<int64_t> sizes{plan.base_size};
      for (int64_t size : detail::probe_sizes(plan.base_size, plan.size)) {
        const std::vector<Shape> shapes = detail::shapes_at(plan.pattern, size);
        try {
          size_t k = 0;
          std::tuple<detail::probe_arg_t<Args>...> zeros{detail::probe_arg(args, shapes, k)...};
          graph::Trace trace(core_->options().name, /*dry=*/true);
          graph::detail::ProbeScope probe;
          Traced in = std::apply([&](auto&... z) { return Traced{detail::trace_arg(trace, z)...}; }, zeros);
          if constexpr (std::is_void_v<R>) {
            std::apply(fn_, std::move(in));
            graphs.push_back(trace.finish({}));
          } else {
            R result = std::apply(fn_, std::move(in));
            graphs.push_back(trace.finish(detail::flatten(result)));
          }
        } catch (...) {  // a host call that returns tensors, or code that refuses this size: trace per shape
          logging::debug("ember::function '" + core_->options().name + "': traces once per shape, since a probe "
                         "trace at another size stopped (a host call returning tensors, or an error)");
          return nullptr;
        }
        sizes.push_back(size);
      }
      std::string why;
      auto t = graph::ShapeTemplate::make(graphs, sizes, &why);
      if (!t)
        logging::debug("ember::function '" + core_->options().name + "': traces once per shape, since " + why);
      return t;
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
