#pragma once
// ops::print (TF: tf.print): prints tensors' values when the op runs, so inside a traced function on every
// call (a C++ `std::cout << t` there runs once, while tracing, and would have to read a traced value).
#include <iosfwd>
#include <string>
#include <variant>
#include <vector>

#include "framework/core/tensor.h"

namespace ember::ops {

struct PrintOptions {
  std::ostream* output_stream = nullptr;  // nullptr: std::cerr (TF prints to stderr)
  std::string sep = " ";
  std::string end = "\n";
};

// One item of a print: a tensor (its values) or text.
using PrintItem = std::variant<Tensor, std::string>;

// Prints the items, separated by sep and followed by end.
void print(const std::vector<PrintItem>& items, const PrintOptions& options = {});

// ops::print("loss:", loss, "step:", step).
template <class... Items>
  requires(sizeof...(Items) > 0 && (std::is_constructible_v<PrintItem, Items> && ...))
void print(const Items&... items) {
  print(std::vector<PrintItem>{PrintItem(items)...});
}

}  // namespace ember::ops
