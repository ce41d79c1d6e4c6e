#pragma once
// Control flow that a traced function keeps (TF: tf.cond, tf.while_loop). Run eagerly they are plain C++
// control flow; inside ember::function, where a traced tensor's value is not known while tracing, they
// become nodes holding graphs of their own, run on every call with that call's values, and differentiable.
//
//   Tensor r = ops::cond(ops::greater(x, zero), [&] { return a; }, [&] { return b; });
//   auto outs = ops::while_loop([](const std::vector<Tensor>& v) { return ops::less(v[0], ten); },
//                               [&](const std::vector<Tensor>& v) -> std::vector<Tensor> {
//                                 return {ops::add(v[0], one), ops::tanh(ops::matmul(v[1], w))};
//                               },
//                               {i, h}, {.maximum_iterations = 100});
#include <cstdint>
#include <functional>
#include <optional>
#include <type_traits>
#include <vector>

#include "framework/core/tensor.h"
#include "framework/graph/structure.h"

namespace ember::ops {

namespace detail {
std::vector<Tensor> cond(const Tensor& pred, const std::function<std::vector<Tensor>()>& true_fn,
                         const std::function<std::vector<Tensor>()>& false_fn);
}  // namespace detail

// true_fn() when pred (a 0-d bool tensor) is true, else false_fn(). Both return the same structure: nothing, a
// Tensor, a std::vector<Tensor> or a tuple of Tensors; traced, the same number of tensors with the same shapes
// and dtypes (InvalidArgument otherwise), and each branch's variable assignments, random draws, ops::print
// and optimizer updates happen only when the call takes it.
template <class TrueFn, class FalseFn>
auto cond(const Tensor& pred, TrueFn&& true_fn, FalseFn&& false_fn) {
  using R = std::invoke_result_t<TrueFn&>;
  static_assert(std::is_same_v<R, std::invoke_result_t<FalseFn&>>,
                "ops::cond: true_fn and false_fn must return the same type");
  static_assert(ember::detail::is_tensor_structure<R>(),
                "ops::cond: the branches must return void, a Tensor, a std::vector<Tensor> or a std::tuple of Tensors");
  auto flat = [](auto& fn) {
    return std::function<std::vector<Tensor>()>([&fn] {
      if constexpr (std::is_void_v<R>) {
        fn();
        return std::vector<Tensor>{};
      } else {
        return ember::detail::flatten(fn());
      }
    });
  };
  std::vector<Tensor> out = detail::cond(pred, flat(true_fn), flat(false_fn));
  if constexpr (!std::is_void_v<R>) return ember::detail::unflatten<R>(std::move(out));
}

struct WhileLoopOptions {
  // At most this many passes of body (none when unset).
  std::optional<int64_t> maximum_iterations{};
};

// Runs body while cond holds: loop_vars = body(loop_vars) while cond(loop_vars) (a 0-d bool tensor) is true, at
// most maximum_iterations times; returns the final loop variables. body returns as many tensors as it takes,
// each (traced) of the shape, dtype and device it had on entry (InvalidArgument otherwise).
std::vector<Tensor> while_loop(const std::function<Tensor(const std::vector<Tensor>&)>& cond,
                               const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& body,
                               const std::vector<Tensor>& loop_vars, WhileLoopOptions options = {});

}  // namespace ember::ops
