#include "framework/graph/print.h"

#include <iostream>
#include <memory>

#include "framework/graph/trace.h"

namespace ember::ops {

void print(const std::vector<PrintItem>& items, const PrintOptions& options) {
  // The tensors are the node's inputs; the text and the layout stay with the closure.
  std::vector<Tensor> tensors;
  auto layout = std::make_shared<std::vector<PrintItem>>();
  for (const PrintItem& item : items) {
    if (const Tensor* t = std::get_if<Tensor>(&item)) {
      EMBER_CHECK(t->defined(), InvalidArgument) << "print: tensor item " << tensors.size() << " is undefined";
      t->check_concrete("print");
      tensors.push_back(*t);
      layout->push_back(Tensor());
    } else {
      layout->push_back(item);
    }
  }
  graph::host_effect("print", tensors, [layout, options](std::span<const Tensor> values) {
    std::ostream& os = options.output_stream ? *options.output_stream : std::cerr;
    size_t next = 0;
    for (size_t i = 0; i < layout->size(); ++i) {
      if (i) os << options.sep;
      if (const std::string* s = std::get_if<std::string>(&(*layout)[i]))
        os << *s;
      else
        os << values[next++].to_string();
    }
    os << options.end << std::flush;
  });
}

}  // namespace ember::ops
