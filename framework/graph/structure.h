#pragma once
// What a traced callable returns (ember::function, ops::cond's branches): a Tensor, a std::vector<Tensor> or a
// std::tuple of Tensors, as a flat list of tensors and back.
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "framework/core/tensor.h"

namespace ember::detail {

template <class R>
constexpr bool is_tensor_tuple() {
  if constexpr (requires { std::tuple_size<R>::value; })
    return []<size_t... I>(std::index_sequence<I...>) {
      return (std::is_same_v<std::tuple_element_t<I, R>, Tensor> && ...);
    }(std::make_index_sequence<std::tuple_size_v<R>>{});
  else
    return false;
}

// A type a traced callable may return: void, Tensor, std::vector<Tensor> or a tuple of Tensors.
template <class R>
constexpr bool is_tensor_structure() {
  return std::is_void_v<R> || std::is_same_v<R, Tensor> || std::is_same_v<R, std::vector<Tensor>> ||
         is_tensor_tuple<R>();
}

// A result as the graph's outputs, and back.
template <class R>
std::vector<Tensor> flatten(const R& r) {
  if constexpr (std::is_same_v<R, Tensor>) {
    return {r};
  } else if constexpr (std::is_same_v<R, std::vector<Tensor>>) {
    return r;
  } else {
    return std::apply([](const auto&... t) { return std::vector<Tensor>{Tensor(t)...}; }, r);
  }
}
template <class R>
R unflatten(std::vector<Tensor> outs) {
  if constexpr (std::is_same_v<R, Tensor>) {
    return outs[0];
  } else if constexpr (std::is_same_v<R, std::vector<Tensor>>) {
    return outs;
  } else {
    return [&]<size_t... I>(std::index_sequence<I...>) { return R{outs[I]...}; }(
               std::make_index_sequence<std::tuple_size_v<R>>{});
  }
}

}  // namespace ember::detail
